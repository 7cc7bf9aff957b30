import { describe, expect, it } from "@effect/vitest"
import * as Time from "@keymeter/core/Time"

const at = (iso: string) => Date.parse(iso)

describe("Time", () => {
  it("truncates to the start of the UTC hour", () => {
    expect(Time.truncateToHour(at("2025-01-01T09:05:00Z"))).toBe(at("2025-01-01T09:00:00Z"))
    expect(Time.truncateToHour(at("2025-01-01T09:59:59.999Z"))).toBe(at("2025-01-01T09:00:00Z"))
    expect(Time.truncateToHour(at("2025-01-01T10:00:00Z"))).toBe(at("2025-01-01T10:00:00Z"))
    expect(Time.truncateToHour(0)).toBe(0)
    // Floors rather than rounding toward zero.
    expect(Time.truncateToHour(-1)).toBe(-Time.HOUR)
  })

  it("puts day and month buckets on UTC calendar starts across year boundaries", () => {
    const newYearsEve = at("2024-12-31T23:30:00Z")
    expect(Time.bucketStart("day", newYearsEve)).toBe(at("2024-12-31T00:00:00Z"))
    expect(Time.bucketStart("month", newYearsEve)).toBe(at("2024-12-01T00:00:00Z"))
    expect(Time.nextBucket("day", at("2024-12-31T00:00:00Z"))).toBe(at("2025-01-01T00:00:00Z"))
    expect(Time.nextBucket("month", at("2024-12-01T00:00:00Z"))).toBe(at("2025-01-01T00:00:00Z"))
    expect(Time.nextBucket("month", at("2024-01-01T00:00:00Z"))).toBe(at("2024-02-01T00:00:00Z"))
    expect(Time.nextBucket("month", at("2024-02-01T00:00:00Z"))).toBe(at("2024-03-01T00:00:00Z"))
    expect(Time.bucketStart("hour", newYearsEve)).toBe(at("2024-12-31T23:00:00Z"))
  })

  it("counts buckets inclusively", () => {
    expect(Time.bucketCount("month", at("2024-11-15T00:00:00Z"), at("2025-02-01T00:00:00Z"))).toBe(4)
    expect(Time.bucketCount("day", at("2024-12-30T13:00:00Z"), at("2025-01-02T01:00:00Z"))).toBe(4)
    expect(Time.bucketCount("hour", at("2025-01-01T09:05:00Z"), at("2025-01-01T09:55:00Z"))).toBe(1)
    expect(Time.bucketCount("day", at("2024-02-28T00:00:00Z"), at("2024-03-01T00:00:00Z"))).toBe(3) // leap day
    expect(Time.bucketCount("hour", 10 * Time.HOUR, 0)).toBe(0)
  })
})
