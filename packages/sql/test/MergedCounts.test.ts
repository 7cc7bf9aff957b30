import { describe, expect, it } from "@effect/vitest"
import { OUTCOMES } from "@keymeter/core/Aggregation"
import type { AggregationResult } from "@keymeter/core/Aggregation"
import * as Effect from "effect/Effect"
import { MergedCounts } from "../src/internal/Counts.js"

/** A result of rows (time, key, identity, counts of the first outcomes). */
const result = (
  rows: ReadonlyArray<readonly [number, string, { id: string; externalId: string } | undefined, Array<number>]>
): AggregationResult => {
  const counts = new Float64Array(rows.length * OUTCOMES)
  rows.forEach(([, , , c], row) => c.forEach((n, o) => (counts[row * OUTCOMES + o] = n)))
  return {
    size: rows.length,
    counts,
    time: Float64Array.from(rows.map(([time]) => time)),
    keyId: rows.map(([, key]) => key),
    identity: rows.map(([, , identity]) => identity) as any
  }
}

const rowsOf = (merged: AggregationResult) =>
  Array.from({ length: merged.size }, (_, row) => [
    merged.time![row],
    merged.keyId![row],
    merged.identity![row]?.id,
    Array.from(merged.counts.subarray(row * OUTCOMES, row * OUTCOMES + 2))
  ])

describe("MergedCounts", () => {
  it.effect("adds up the counts of a group found in several reads, and keeps the others apart", () =>
    Effect.sync(() => {
      const alice = { id: "id_a", externalId: "alice" }
      const merged = new MergedCounts()
      merged.add(result([[0, "k1", alice, [1, 2]], [0, "k2", undefined, [3, 0]], [0, "k1", undefined, [1, 1]]]))
      merged.add(result([[0, "k1", alice, [10, 0]], [3600, "k1", alice, [5, 5]], [0, "k2", undefined, [0, 7]]]))
      // Keys that a naive concatenation would confuse ("k|1" + "" and "k" + "|1") stay apart.
      merged.add(
        result([[0, "k|", { id: "1", externalId: "" }, [1, 0]], [0, "k", { id: "|1", externalId: "" }, [0, 1]]])
      )
      expect(merged.size).toBe(6)
      expect(rowsOf(merged.result())).toEqual([
        [0, "k1", "id_a", [11, 2]],
        [0, "k2", undefined, [3, 7]],
        [0, "k1", undefined, [1, 1]],
        [3600, "k1", "id_a", [5, 5]],
        [0, "k|", "1", [1, 0]],
        [0, "k", "|1", [0, 1]]
      ])
    }))

  it.effect("answers an empty result when nothing was added", () =>
    Effect.sync(() => {
      const merged = new MergedCounts().result()
      expect(merged.size).toBe(0)
      expect(merged.counts.length).toBe(0)
    }))
})
