// The checkers compiled from the request schemas give the schema's own verdict: a yes only for a
// value the schema decodes to itself and, where the whole schema compiles, a no only for a value
// it refuses. Inputs: valid values made from each schema, and the same mutated with the values the
// HTTP fuzz throws at the routes.
import { describe, expect, it } from "@effect/vitest"
import * as Checker from "@keymeter/core/Checker"
import { CreateKeyInput, ListKeysInput, UpdateCreditsInput, UpdateKeyInput } from "@keymeter/core/Key"
import { VerifyKeyInput } from "@keymeter/core/KeyVerifier"
import { LimitInput } from "@keymeter/core/Limit"
import { DeleteOverrideInput, GetOverrideInput, SetOverrideInput } from "@keymeter/core/Override"
import { PermissionQuery } from "@keymeter/core/PermissionQuery"
import { VerificationInput } from "@keymeter/core/Verification"
import * as Arbitrary from "effect/Arbitrary"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Schema from "effect/Schema"

const hostile: ReadonlyArray<unknown> = [
  undefined,
  null,
  true,
  0,
  -1,
  1.5,
  2 ** 53,
  -(2 ** 53),
  1e308,
  Number.NaN,
  "",
  "0",
  "1e3",
  "\u0000",
  "\ud800",
  "a\udc00b",
  "__proto__",
  "x".repeat(5000),
  "*",
  [],
  [1, "a"],
  {},
  { and: [] },
  { or: ["a", { and: ["b"] }] },
  { __proto__: { polluted: true } },
  JSON.parse("{\"__proto__\":{\"polluted\":true}}"),
  [[[[["deep"]]]]],
  new Date(0),
  Object.create(null)
]
// Each side of the bounds the schemas set: lengths of names, ids, tags and secrets, counts of
// tags and limits, durations and integers.
const LENGTHS = [1, 2, 3, 4, 127, 128, 129, 254, 255, 256, 511, 512, 513, 1023, 1024, 1025]
const COUNTS = [1, 10, 11, 16, 17]
const NUMBERS = [-0, 1, 999, 1000, 1001, 2_592_000_000, 2_592_000_001, 2 ** 53 - 1, 8.64e15, 8.64e15 + 1]
const bounds: ReadonlyArray<unknown> = [
  ...LENGTHS.map((n) => "k".repeat(n)),
  ...COUNTS.map((n) => Array.from({ length: n }, (_, i) => `tag_${i}`)),
  ...NUMBERS
]
const hostileArb = FastCheck.constantFrom(...hostile, ...bounds)

/** A valid value of `schema`, then changed `changes` times: a field replaced, dropped, added or nested. */
const inputs = (schema: Schema.Schema.AnyNoContext) =>
  FastCheck.tuple(
    Arbitrary.make(schema),
    FastCheck.array(
      FastCheck.record({
        kind: FastCheck.constantFrom("replace", "drop", "add", "nested", "none"),
        at: FastCheck.nat(),
        name: FastCheck.constantFrom("extra", "__proto__", "constructor", ""),
        value: hostileArb
      }),
      { maxLength: 2 }
    )
  ).map(([value, changes]) => {
    const wire = Schema.encodeSync(schema)(value) as unknown
    if (typeof wire !== "object" || wire === null) return wire
    const out = JSON.parse(JSON.stringify(wire)) as Record<string, unknown>
    for (const change of changes) {
      const names = Object.keys(out)
      const name = names.length === 0 ? "x" : names[change.at % names.length]!
      if (change.kind === "replace") out[name] = change.value
      else if (change.kind === "drop") delete out[name]
      else if (change.kind === "add") {
        Object.defineProperty(out, change.name, {
          value: change.value,
          enumerable: true,
          configurable: true,
          writable: true
        })
      } else if (change.kind === "nested") {
        const inner = Object.values(out).find((v) => typeof v === "object" && v !== null) as
          | Record<string, unknown>
          | undefined
        if (Array.isArray(inner)) inner[0] = change.value
        else if (inner !== undefined) inner[Object.keys(inner)[0] ?? "x"] = change.value
      }
    }
    return out
  })

/**
 * Whether `a` and `b` are the same value field for field. An object without a prototype equals a
 * plain one: the checker takes such objects (as JSON bodies may be parsed) as plain, and the schema
 * decodes a record to a plain one.
 */
const same = (a: unknown, b: unknown): boolean => {
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => same(x, b[i]))
  }
  if (typeof a !== "object" || a === null || typeof b !== "object" || b === null) return Object.is(a, b)
  const plain = (v: object) => [null, Object.prototype].includes(Object.getPrototypeOf(v))
  if (!plain(a) || !plain(b)) return a === b
  const keys = Object.keys(a)
  return keys.length === Object.keys(b).length &&
    keys.every((k) => Object.hasOwn(b, k) && same((a as any)[k], (b as any)[k]))
}

const verdicts = (schema: Schema.Schema.AnyNoContext, runs: number) => {
  const check = Checker.compile(schema)
  const decode = Schema.decodeUnknownEither(schema, { errors: "all", onExcessProperty: "error" })
  const complete = Checker.uncompiled(schema).length === 0
  let accepted = 0
  FastCheck.assert(
    FastCheck.property(FastCheck.oneof(inputs(schema), hostileArb), (input) => {
      const decoded = decode(input)
      if (check(input)) {
        accepted++
        // A yes: the schema accepts it, and decodes it to the very same value.
        expect(Either.isRight(decoded)).toBe(true)
        expect(same(Either.getOrThrow(decoded), input)).toBe(true)
      } else if (complete) {
        // A no from a checker that compiled all: the schema refuses it, or changes it (a record
        // made of a class instance, say).
        expect(Either.isLeft(decoded) || !same(decoded.right, input)).toBe(true)
      }
    }),
    { numRuns: runs, seed: 26 }
  )
  return { accepted, complete }
}

describe("Checker", () => {
  it("compiles the hot bodies whole, and gives the schema's verdict on each input", () => {
    for (
      const schema of [VerifyKeyInput, LimitInput, VerificationInput, PermissionQuery, SetOverrideInput, CreateKeyInput]
    ) {
      expect(Checker.uncompiled(schema)).toEqual([])
      const { accepted } = verdicts(schema, 2_000)
      // Both verdicts were met.
      expect(accepted).toBeGreaterThan(100)
      expect(accepted).toBeLessThan(2_000)
    }
    // 12,000 generated bodies: 1.3 s alone, past 30 s in CI while every package builds beside it.
  }, 120_000)

  it("says yes only to what the schema accepts unchanged, for every request body", () => {
    for (
      const schema of [
        SetOverrideInput,
        GetOverrideInput,
        DeleteOverrideInput,
        CreateKeyInput,
        UpdateKeyInput,
        UpdateCreditsInput,
        ListKeysInput
      ]
    ) {
      verdicts(schema, 500)
    }
  })

  it("names what it does not compile, and leaves it to the schema", () => {
    const WithDefault = Schema.Struct({ n: Schema.optionalWith(Schema.Number, { default: () => 1 }) })
    expect(Checker.uncompiled(WithDefault).length).toBeGreaterThan(0)
    // The schema would add `n`: the checker must not say yes to the value as it is.
    expect(Checker.compile(WithDefault)({})).toBe(false)
    const Dates = Schema.Struct({ at: Schema.Date })
    expect(Checker.compile(Dates)({ at: "2026-01-01" })).toBe(false)
  })

  it("refuses inherited and prototype-polluted fields as the schema does", () => {
    const check = Checker.compile(LimitInput)
    const body = { namespace: "n", identifier: "i", limit: 1, duration: 1_000 }
    expect(check(body)).toBe(true)
    expect(check(Object.assign(Object.create({ cost: 1 }), body))).toBe(false)
    expect(check(JSON.parse(JSON.stringify(body).replace("{", "{\"__proto__\":{},")))).toBe(false)
    expect(check({ ...body, cost: undefined })).toBe(true)
    expect(check({ ...body, limit: undefined })).toBe(false)
  })
})
