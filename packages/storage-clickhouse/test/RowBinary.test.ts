import { describe, expect, it } from "@effect/vitest"
import { ClickhouseTestServer } from "@keymeter/testing"
import * as Effect from "effect/Effect"
import { string } from "../src/internal/Literal.js"
import { RowBinaryReader } from "../src/internal/RowBinary.js"
import * as Select from "../src/internal/Select.js"

const STRINGS = ["", "key_0_0", "it's", "a\u0000b", "é ü 中文 🔑", "x".repeat(300)]

describe("RowBinaryReader", () => {
  it("reads integers, lengths over one byte, strings and arrays of strings", () => {
    const long = "y".repeat(200)
    const bytes = Buffer.concat([
      Buffer.from([7, 0, 0, 0]),
      // 2^32 + 5 as a UInt64
      Buffer.from([5, 0, 0, 0, 1, 0, 0, 0]),
      // 200 as a LEB128 length: 0xc8 0x01
      Buffer.from([0xc8, 0x01]),
      Buffer.from(long),
      Buffer.from([2, 1]),
      Buffer.from("a"),
      Buffer.from([4]),
      Buffer.from("🔑")
    ])
    const reader = new RowBinaryReader(bytes)
    expect(reader.uint32()).toBe(7)
    expect(reader.uint64()).toBe(2 ** 32 + 5)
    expect(reader.string()).toBe(long)
    expect(reader.strings()).toEqual(["a", "🔑"])
    expect(reader.done).toBe(true)
  })

  it("reads a row's UInt64 counters at once, telling whether any is not 0", () => {
    const counters = (values: ReadonlyArray<number>) =>
      Buffer.concat(values.map((v) => Buffer.from([v % 256, 0, 0, 0, Math.floor(v / 2 ** 32), 0, 0, 0])))
    const reader = new RowBinaryReader(Buffer.concat([counters([0, 0, 0]), counters([0, 2 ** 32 + 3, 9])]))
    const into = new Float64Array(7).fill(-1)
    expect(reader.uint64sInto(into, 1, 3)).toBe(false)
    expect(reader.uint64sInto(into, 4, 3)).toBe(true)
    expect(Array.from(into)).toEqual([-1, 0, 0, 0, 0, 2 ** 32 + 3, 9])
    expect(reader.done).toBe(true)
    // Cut short: nothing read, nothing written.
    const short = new RowBinaryReader(counters([1, 2]).subarray(0, 15))
    expect(() => short.uint64sInto(into, 0, 2)).toThrow(/ends before/)
    expect(into[0]).toBe(-1)
  })

  it("refuses an answer cut short, never reading past its end", () => {
    expect(() => new RowBinaryReader(Buffer.from([1, 2, 3])).uint32()).toThrow(/ends before/)
    expect(() => new RowBinaryReader(Buffer.from([1, 0, 0, 0, 0, 0, 0])).uint64()).toThrow(/ends before/)
    expect(() => new RowBinaryReader(Buffer.from([5, 0x61, 0x62])).string()).toThrow(/ends before/)
    expect(() => new RowBinaryReader(Buffer.from([0x80])).length()).toThrow(/ends before/)
    expect(() => new RowBinaryReader(Buffer.from([3, 1, 0x61])).strings()).toThrow(/ends before/)
  })
})

describe.skipIf(ClickhouseTestServer.skip() !== undefined)("RowBinaryReader against a real ClickHouse", () => {
  it.effect("reads back what ClickHouse writes: UInt32, UInt64 up to 2^53, strings, arrays", () =>
    Effect.promise(async () => {
      const select = Select.make({
        url: ClickhouseTestServer.url!,
        database: undefined,
        username: "default",
        password: "",
        requestTimeoutMs: 10_000
      })
      try {
        const text = `SELECT toUInt32(number) AS n, toUInt64(number * 1099511627776) AS big, ` +
          `[${STRINGS.map(string).join(", ")}] AS texts, ${string(STRINGS[4]!)} AS one ` +
          `FROM system.numbers LIMIT 3`
        const reader = new RowBinaryReader(await select.queryRowBinary(text))
        for (let n = 0; n < 3; n++) {
          expect(reader.uint32()).toBe(n)
          expect(reader.uint64()).toBe(n * 1099511627776)
          expect(reader.strings()).toEqual(STRINGS)
          expect(reader.string()).toBe(STRINGS[4])
        }
        expect(reader.done).toBe(true)
        // An error after the first blocks is a failed request, never an answer cut short (without
        // waiting for the end, ClickHouse answers 200 with the rows so far and the error after them).
        await expect(
          select.queryRowBinary("SELECT number, throwIf(number = 900000) FROM system.numbers LIMIT 1000000")
        ).rejects.toThrow(/throwIf/)
      } finally {
        select.close()
      }
    }))
})
