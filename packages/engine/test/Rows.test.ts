/**
 * Rows: the answer's rows, bounded by maxRows (`TooManyRows`, caught by the engine: undefined). On
 * every path with small bounds, the engine refuses only when the complete answer holds more rows
 * than maxRows; the paths that build every row (series, scan, per tag) refuse exactly then, the
 * top-N ones (contenders only, and the scan of a top N of groups: `Rows.keepTop`) may answer more
 * groups than that and say so in `groups`. Answers given within the cap are the naive reference's.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Verification as Event } from "@keymeter/core/Verification"
import * as FastCheck from "effect/FastCheck"
import { Rows, TooManyRows } from "../src/internal/query/Rows.js"
import type { Input } from "./Fixture.js"
import { answer, historyArb, queryArb, reference, replay, tally, toQuery } from "./Fixture.js"

/** Rows of the complete answer as an adapter gives it: one per non-empty (time bucket, group). */
const completeRows = (events: ReadonlyArray<Event>, input: Input): number => {
  const { limit: _, ...all } = input
  const groupBy = input.groupBy ?? []
  if (groupBy.length === 0) return 1
  const points = reference(events, all)
  const grouped = groupBy.some((g) => g === "key" || g === "identity" || g === "tag" || g === "tags")
  // A plain series is zero-filled by core, not by the adapter.
  return grouped ? points.length : points.filter((point) => point.total > 0).length
}

describe("Rows", () => {
  it("refuses an answer only when it holds more rows than maxRows, on every path", () => {
    const taken = tally()
    FastCheck.assert(
      FastCheck.property(
        historyArb(),
        FastCheck.array(FastCheck.tuple(queryArb(), FastCheck.integer({ min: 1, max: 12 })), {
          minLength: 1,
          maxLength: 6
        }),
        (history, queries) =>
          replay(history, (engine, arrived) => {
            for (const [input, maxRows] of queries) {
              const { datapoints, result, trace } = answer(engine, input, maxRows)
              const rows = completeRows(arrived, input)
              const label = `${JSON.stringify(input)} within ${maxRows}`
              if (result === undefined) {
                expect(rows, label).toBeGreaterThan(maxRows)
                taken.add(`${trace.path} refused`)
                continue
              }
              expect(result.size, label).toBeLessThanOrEqual(maxRows)
              // Every grouped answer says how many rows the complete answer holds: its rows, or `groups`.
              if ((input.groupBy ?? []).length > 0) expect(result.groups ?? result.size, label).toBe(rows)
              if (result.groups !== undefined && trace.path === "scan") taken.add("scan kept the top rows")
              taken.add(`${trace.path} answered`)
              if (datapoints !== undefined) expect(datapoints, label).toEqual(reference(arrived, input))
            }
          })
      ),
      { seed: 91, numRuns: 120 }
    )
    expect(taken.names()).toEqual([
      "dayIndex answered",
      "dayIndex refused",
      "empty answered",
      "postingSeries answered",
      "postingSeries refused",
      "scan answered",
      "scan kept the top rows",
      "scan refused",
      "topN answered",
      "topN refused",
      "totalsSeries answered",
      "totalsSeries refused"
    ])
  })

  // Rows count into one spare array per thread and copy their counters out when built.
  it("gives each answer counters of its own, and starts the next answer's rows afresh", () => {
    const query = toQuery({ apiId: "api", end: 0 })
    const first = new Rows(10)
    first.push(undefined, 1, 0, 0, [1, 2, 3, 4, 5, 6, 7, 8, 9], 0)
    const kept = first.build(query, undefined)
    const second = new Rows(10)
    for (let row = 0; row < 10; row++) second.push(undefined, row, 0, 0, new Array(9).fill(row + 10), 0)
    const next = second.build(query, undefined)
    expect(Array.from(kept.counts)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9])
    expect(next.counts.length).toBe(90)
    expect(Array.from(next.counts.subarray(0, 9))).toEqual(new Array(9).fill(10))
    // An answer given up midway (over its maxRows) leaves nothing in the next one's rows.
    const refused = new Rows(2)
    expect(() => {
      for (let row = 0; row < 3; row++) refused.push(undefined, row, 0, 0, new Array(9).fill(7), 0)
    }).toThrow(TooManyRows)
    const after = new Rows(10)
    after.push(undefined, 5, 0, 0, [0, 0, 0, 0, 0, 0, 0, 0, 1], 0)
    expect(Array.from(after.build(query, undefined).counts)).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 1])
  })
})
