import { describe, expect, it } from "@effect/vitest"
import * as Verification from "@keymeter/core/Verification"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Schema from "effect/Schema"

const NOW = Date.parse("2025-06-01T00:00:00Z")
const decode = (items: unknown) => Verification.decodeBatch(items, { workspaceId: "ws", now: NOW })
const message = (items: unknown) => {
  const result = decode(items)
  if (Either.isRight(result)) throw new Error("expected a validation error")
  return result.left.message
}

describe("Verification.decodeBatch", () => {
  it("stores the normalised form: time defaults to now, tags de-duplicated and sorted, no details", () => {
    const result = decode([
      { apiId: "a", keyId: "k", outcome: "valid", tags: ["b", "a", "b"] },
      { apiId: "a", keyId: "k", outcome: "expired", time: 0, identity: { id: "i", externalId: "e" } },
      { apiId: "a", keyId: "k", outcome: "valid", spentCredits: 4_294_967_295, latency: 0.125, region: "eu-west-1" }
    ])
    const none = { spentCredits: 0, latency: 0, region: "" }
    expect(Either.getOrThrow(result)).toStrictEqual([
      {
        time: NOW,
        workspaceId: "ws",
        apiId: "a",
        keyId: "k",
        identity: undefined,
        outcome: "valid",
        tags: ["a", "b"],
        ...none
      },
      {
        time: 0,
        workspaceId: "ws",
        apiId: "a",
        keyId: "k",
        identity: { id: "i", externalId: "e" },
        outcome: "expired",
        tags: [],
        ...none
      },
      {
        time: NOW,
        workspaceId: "ws",
        apiId: "a",
        keyId: "k",
        identity: undefined,
        outcome: "valid",
        tags: [],
        spentCredits: 4_294_967_295,
        latency: 0.125,
        region: "eu-west-1"
      }
    ])
    // `make` gives what a record call without them stores.
    expect(Verification.make({ time: 0, workspaceId: "ws", apiId: "a", keyId: "k", outcome: "valid" })).toStrictEqual(
      { time: 0, workspaceId: "ws", apiId: "a", keyId: "k", identity: undefined, outcome: "valid", tags: [], ...none }
    )
  })

  it("names the index and field of the first bad item", () => {
    const ok = { apiId: "a", keyId: "k", outcome: "valid" }
    expect(message([ok, ok, ok, { ...ok, outcome: "nope" }])).toMatch(
      /^verifications\[3\]\.outcome: must be one of valid, /
    )
    expect(message([{ ...ok, time: NOW + 60_001 }])).toMatch(/^verifications\[0\]\.time: must be at most 60 s ahead/)
    expect(Either.isRight(decode([{ ...ok, time: NOW + 60_000 }]))).toBe(true)
    expect(message([{ ...ok, time: 1.5 }])).toMatch(/^verifications\[0\]\.time: must be an integer/)
    expect(message([{ ...ok, keyId: "" }])).toBe("verifications[0].keyId: must be 1 to 255 characters, got 0")
    expect(message([{ ...ok, tags: ["a", 5] }])).toBe("verifications[0].tags[1]: must be a string, got 5")
    const loneSurrogate = "must be well-formed Unicode, got a string with a lone UTF-16 surrogate"
    expect(message([{ ...ok, keyId: "k\ud800" }])).toBe(`verifications[0].keyId: ${loneSurrogate}`)
    expect(message([{ ...ok, identity: { id: "i", externalId: "\udc00e" } }])).toBe(
      `verifications[0].identity.externalId: ${loneSurrogate}`
    )
    expect(message([{ ...ok, tags: ["a", "b\ud83d"] }])).toBe(`verifications[0].tags[1]: ${loneSurrogate}`)
    expect(Either.isRight(decode([{ ...ok, keyId: "k\ud83d\udd11", tags: ["🔑"] }]))).toBe(true)
    expect(message([{ ...ok, tags: new Array(11).fill("t") }])).toMatch(
      /^verifications\[0\]\.tags: must hold at most 10 tags/
    )
    expect(message([{ ...ok, identity: { id: "i" } }])).toMatch(
      /^verifications\[0\]\.identity\.externalId: must be a string/
    )
    expect(message([{ ...ok, identity: { id: "i", externalId: "e", x: 1 } }])).toBe(
      "verifications[0].identity.x: is not a known field"
    )
    expect(message([{ ...ok, extra: true }])).toBe("verifications[0].extra: is not a known field")
    expect(message([{ ...ok, spentCredits: 1.5 }])).toBe(
      "verifications[0].spentCredits: must be an integer from 0 to 4294967295, got 1.5"
    )
    expect(message([{ ...ok, spentCredits: 4_294_967_296 }])).toBe(
      "verifications[0].spentCredits: must be an integer from 0 to 4294967295, got 4294967296"
    )
    expect(message([{ ...ok, spentCredits: "3" }])).toBe(
      "verifications[0].spentCredits: must be an integer from 0 to 4294967295, got \"3\""
    )
    expect(message([{ ...ok, latency: -0.001 }])).toBe(
      "verifications[0].latency: must be a number of milliseconds from 0 to 3600000, got -0.001"
    )
    expect(message([{ ...ok, latency: Infinity }])).toBe(
      "verifications[0].latency: must be a number of milliseconds from 0 to 3600000, got Infinity"
    )
    expect(message([{ ...ok, latency: NaN }])).toBe(
      "verifications[0].latency: must be a number of milliseconds from 0 to 3600000, got NaN"
    )
    expect(message([{ ...ok, region: 5 }])).toBe("verifications[0].region: must be a string, got 5")
    expect(message([{ ...ok, region: "r".repeat(65) }])).toBe(
      "verifications[0].region: must be 0 to 64 characters, got 65"
    )
    expect(message([{ ...ok, region: "eu\ud800" }])).toBe(`verifications[0].region: ${loneSurrogate}`)
    expect(Either.isRight(decode([{ ...ok, spentCredits: 0, latency: 3_600_000, region: "" }]))).toBe(true)
    expect(message([])).toMatch(/at least 1/)
    expect(message(new Array(10_001).fill(ok))).toMatch(/at most 10000/)
    expect(message("x")).toMatch(/^verifications: must be an array/)
    expect(message([null])).toMatch(/^verifications\[0\]: must be an object, got null/)
  })

  it("accepts exactly what the documented VerificationInput schema accepts", () => {
    const schema = Schema.decodeUnknownEither(Verification.VerificationInput, { onExcessProperty: "error" })
    const text = FastCheck.oneof(
      FastCheck.constantFrom(
        "",
        "a",
        "x".repeat(128),
        "x".repeat(129),
        "x".repeat(255),
        "x".repeat(256),
        "\ud800",
        "a\udc00",
        "🔑"
      ),
      FastCheck.string({ maxLength: 4 })
    )
    const anything = FastCheck.oneof(text, FastCheck.integer(), FastCheck.constant(null), FastCheck.boolean())
    const item = FastCheck.record({
      apiId: FastCheck.oneof(text, anything),
      keyId: FastCheck.oneof(text, anything),
      outcome: FastCheck.oneof(FastCheck.constantFrom(...Verification.Outcomes, "Valid", ""), anything),
      time: FastCheck.oneof(
        FastCheck.integer({ min: -5, max: NOW }),
        FastCheck.double({ min: 0, max: NOW, noNaN: true }),
        FastCheck.constant(Number.MAX_SAFE_INTEGER + 2),
        anything
      ),
      identity: FastCheck.oneof(
        FastCheck.record({ id: FastCheck.oneof(text, anything), externalId: FastCheck.oneof(text, anything) }, {
          requiredKeys: []
        }),
        anything
      ),
      tags: FastCheck.oneof(FastCheck.array(FastCheck.oneof(text, anything), { maxLength: 12 }), anything),
      spentCredits: FastCheck.oneof(
        FastCheck.integer({ min: -2, max: 5 }),
        FastCheck.constantFrom(4_294_967_295, 4_294_967_296, 0.5, -0, NaN, Infinity),
        anything
      ),
      latency: FastCheck.oneof(
        FastCheck.double({ min: -1, max: 3_600_001 }),
        FastCheck.constantFrom(3_600_000, 3_600_000.001, -0, NaN, Infinity, -Infinity),
        anything
      ),
      region: FastCheck.oneof(text, FastCheck.constantFrom("x".repeat(64), "x".repeat(65)), anything),
      extra: FastCheck.constant(1)
    }, { requiredKeys: [] })
    FastCheck.assert(
      FastCheck.property(item, (input) => {
        const bySchema = Either.isRight(schema(input))
        const byValidator = Either.isRight(decode([input]))
        // Only the clock rule is outside the schema; times here are never in the future.
        expect(byValidator, JSON.stringify(input)).toBe(bySchema)
      }),
      { numRuns: 3000 }
    )
  })
})
