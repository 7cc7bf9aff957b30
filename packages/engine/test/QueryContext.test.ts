/**
 * QueryContext: the time buckets every path answers in. For each time unit, `bucketsOf` cuts the
 * window's hours into the UTC hours, days or months holding them (both ends included, clipped to
 * the window), as grouping each hour by its calendar unit does; without a unit, one bucket.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Aggregation from "@keymeter/core/Aggregation"
import * as FastCheck from "effect/FastCheck"
import { bucketsOf } from "../src/internal/query/QueryContext.js"
import { BASE, HOUR, unitArb } from "./Fixture.js"

/** Start of the UTC hour, day or month holding hour `h`, from the calendar. */
const startOf = (unit: "hour" | "day" | "month", h: number) => {
  const date = new Date(h * HOUR)
  if (unit === "hour") return h * HOUR
  if (unit === "day") return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate())
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1)
}

describe("QueryContext", () => {
  it("cuts a window's hours into its unit's calendar buckets", () => {
    FastCheck.assert(
      FastCheck.property(
        unitArb,
        FastCheck.integer({ min: -3000, max: 10_000 }),
        FastCheck.integer({ min: 0, max: 2000 }),
        (unit, from, hours) => {
          const lo = BASE / HOUR + from
          const hi = lo + hours
          const query = Aggregation.makeQuery({
            workspaceId: "ws",
            apiId: "api",
            end: hi * HOUR,
            maxRows: 1,
            timeUnit: unit
          })
          const expected: Array<{ time: number | undefined; fromHour: number; toHour: number }> = []
          for (let h = lo; h <= hi; h++) {
            const time = unit === undefined ? undefined : startOf(unit, h)
            const last = expected[expected.length - 1]
            if (last !== undefined && last.time === time) last.toHour = h
            else expected.push({ time, fromHour: h, toHour: h })
          }
          expect(bucketsOf(query, lo, hi)).toEqual(expected)
        }
      ),
      { seed: 81, numRuns: 500 }
    )
  })
})
