import { ClickHouseLogLevel, createClient } from "@clickhouse/client"
import { describe, expect, it } from "@effect/vitest"
import { ClickhouseTestServer } from "@keymeter/testing"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import { encode, integer, LiteralError, sql, string } from "../src/internal/Literal.js"

const NASTY = [
  "",
  "plain",
  "it's",
  "''",
  "\\",
  "\\'",
  "ends with \\",
  "a\u0000b",
  "\u0000",
  "tab\there\nnewline\rcarriage",
  "\u0001\u0002\u001f\u007f",
  "'; DROP TABLE verifications; --",
  "x' OR '1'='1",
  "\\x41 is not A",
  "{name:String}",
  "é ü ß 中文 日本語 한국어",
  "emoji 🔑🚀 and astral 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
  "\u2028\u2029\ufeff",
  "?",
  "$1 %s"
]

describe("Literal", () => {
  it("quotes strings and escapes backslash, quote and control characters", () => {
    expect(string("it's")).toBe("'it\\'s'")
    expect(string("a\\b")).toBe("'a\\\\b'")
    expect(string("a\u0000b\n")).toBe("'a\\x00b\\x0a'")
    expect(string("é🔑")).toBe("'é🔑'")
  })

  it("writes integers in plain digits and refuses what is not a safe integer", () => {
    expect(integer(0)).toBe("0")
    expect(integer(-42)).toBe("-42")
    expect(integer(Number.MAX_SAFE_INTEGER)).toBe("9007199254740991")
    for (const bad of [1.5, Number.NaN, Infinity, 2 ** 53, 1e21]) expect(() => integer(bad)).toThrow(LiteralError)
  })

  it("refuses a lone surrogate, which has no UTF-8 form", () => {
    expect(() => string("a\ud800b")).toThrow(LiteralError)
    expect(() => string("\udc00")).toThrow(LiteralError)
    expect(string("\ud83d\udd11")).toBe("'🔑'")
  })

  it("writes arrays element by element, and template values as literals", () => {
    expect(encode(["a'", 1, ["b"]])).toBe("['a\\'', 1, ['b']]")
    expect(sql`SELECT ${"x'y"}, ${7}, ${["a", "b"]}`).toBe("SELECT 'x\\'y', 7, ['a', 'b']")
  })
})

const url = ClickhouseTestServer.url

describe.skipIf(ClickhouseTestServer.skip() !== undefined)("Literal against a real ClickHouse", () => {
  const select = (text: string) =>
    Effect.promise(async () => {
      const client = createClient({ url: url!, log: { level: ClickHouseLogLevel.OFF } })
      try {
        const result = await client.query({ query: text, format: "JSONCompact" })
        return (await result.json<Array<unknown>>()).data
      } finally {
        await client.close()
      }
    })

  it.effect("reads back every string exactly as written: quotes, backslashes, NUL, multi-byte text", () =>
    Effect.gen(function*() {
      const rows = yield* select(`SELECT ${NASTY.map((s, i) => `${string(s)} AS s${i}`).join(", ")}`)
      expect(rows[0]).toEqual(NASTY)
      // Byte lengths agree too: nothing was re-encoded on the way.
      const lengths = yield* select(`SELECT ${NASTY.map((s) => `length(${string(s)})`).join(", ")}`)
      expect(lengths[0]).toEqual(NASTY.map((s) => String(Buffer.byteLength(s))))
    }))

  it.effect("never lets a value change the statement", () =>
    Effect.gen(function*() {
      const rows = yield* select(sql`SELECT count() FROM system.one WHERE ${"x"} = ${"x' OR '1'='1"}`)
      expect(rows).toEqual([["0"]])
      const arrays = yield* select(sql`SELECT ${["a'", "b\\", "c\u0000"]} AS a, length(a)`)
      expect(arrays).toEqual([[["a'", "b\\", "c\u0000"], "3"]])
    }))

  it.effect("round-trips arbitrary well-formed Unicode strings", () =>
    Effect.promise(() =>
      FastCheck.assert(
        FastCheck.asyncProperty(
          FastCheck.array(FastCheck.string({ unit: "binary", maxLength: 40 }), { minLength: 1, maxLength: 20 }),
          (values) =>
            Effect.runPromise(Effect.gen(function*() {
              const rows = yield* select(`SELECT ${values.map((v, i) => `${string(v)} AS v${i}`).join(", ")}`)
              expect(rows[0]).toEqual(values)
            }))
        ),
        { numRuns: 50 }
      )
    ))
})
