import { describe, expect, it } from "@effect/vitest"
import * as Time from "@keymeter/core/Time"
import * as VerificationQuery from "@keymeter/core/VerificationQuery"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"

const at = (iso: string) => Date.parse(iso)
const now = at("2025-03-10T12:34:56Z")

const ok = (input: VerificationQuery.VerificationQueryInput) => {
  const result = VerificationQuery.normalize(input, now)
  if (Either.isLeft(result)) throw new Error(result.left.message)
  return result.right
}
const error = (input: VerificationQuery.VerificationQueryInput) => {
  const result = VerificationQuery.normalize(input, now)
  if (Either.isRight(result)) throw new Error("expected a validation error")
  return result.left.message
}

describe("VerificationQuery.VerificationQueryInput", () => {
  it("refuses ids and tags that are not well-formed Unicode: nothing stored could match them", () => {
    const decode = Schema.decodeUnknownEither(VerificationQuery.VerificationQueryInput)
    for (
      const bad of [{ apiId: "a\ud800" }, { apiId: "a", keyId: ["k", "\udc00"] }, { apiId: "a", tag: ["t\ud83d"] }, {
        apiId: "a",
        externalId: "\ud800x"
      }]
    ) {
      const result = decode(bad)
      expect(Either.isLeft(result) && result.left.message, JSON.stringify(bad)).toMatch(/must be well-formed Unicode/)
    }
    expect(Either.isRight(decode({ apiId: "a", keyId: ["🔑"], tag: ["é"], externalId: "😀" }))).toBe(true)
  })
})

describe("VerificationQuery.normalize", () => {
  it("truncates both ends to the hour and defaults end to now", () => {
    const q = ok({ apiId: "a", start: at("2025-01-01T09:05:00Z"), end: at("2025-01-01T09:05:00Z") })
    expect(q.start).toBe(at("2025-01-01T09:00:00Z"))
    expect(q.end).toBe(at("2025-01-01T09:00:00Z"))
    expect(ok({ apiId: "a" }).end).toBe(at("2025-03-10T12:00:00Z"))
    expect(ok({ apiId: "a", start: null, end: null }).start).toBeUndefined()
    expect(ok({ apiId: "a", start: 0 }).start).toBe(0)
  })

  it("refuses a start after the end once truncated, but not within one hour", () => {
    expect(error({ apiId: "a", start: at("2025-01-01T10:00:00Z"), end: at("2025-01-01T09:59:00Z") }))
      .toMatch(/^start: must not be after end/)
    expect(ok({ apiId: "a", start: at("2025-01-01T09:59:00Z"), end: at("2025-01-01T09:01:00Z") }).start)
      .toBe(at("2025-01-01T09:00:00Z"))
  })

  it("allows one time unit, not tag with tags, and time ordering only with a time unit", () => {
    expect(error({ apiId: "a", groupBy: ["day", "hour"] })).toMatch(/^groupBy: at most one of hour, day, month/)
    expect(error({ apiId: "a", groupBy: ["tag", "tags"] })).toMatch(/^groupBy: tag and tags cannot be combined/)
    expect(error({ apiId: "a", orderBy: "time" })).toMatch(/^orderBy: time needs a time unit/)
    const q = ok({ apiId: "a", groupBy: ["key", "identity", "tag", "month", "key"], orderBy: "time" })
    expect([q.groupByKey, q.groupByIdentity, q.groupByTag, q.timeUnit]).toEqual([true, true, "tag", "month"])
  })

  it("de-duplicates filters and sorts tags", () => {
    const q = ok({ apiId: "a", keyId: ["k2", "k1", "k2"], tag: ["b", "a", "b"] })
    expect(q.keyIds).toEqual(["k2", "k1"])
    expect(q.tags).toEqual(["a", "b"])
    expect(q.order).toBe("asc")
  })

  it("tells zero-filled series from sparse ones", () => {
    expect(VerificationQuery.isZeroFilled(ok({ apiId: "a", groupBy: ["day"] }))).toBe(true)
    expect(VerificationQuery.isZeroFilled(ok({ apiId: "a", groupBy: ["day", "key"] }))).toBe(false)
    expect(VerificationQuery.isZeroFilled(ok({ apiId: "a" }))).toBe(false)
    expect(Time.HOUR).toBe(3_600_000)
  })
})
