/**
 * Series without grouping: the hour index's counters (no row read) when unfiltered, the key
 * indexes' entries when filtered by key only.
 */
import type { AggregationResult } from "@keymeter/core/Aggregation"
import { OUTCOMES } from "@keymeter/core/Aggregation"
import * as KeyIndex from "../KeyIndex.js"
import { forEachChunk } from "../Run.js"
import type { RangeScan } from "./Compile.js"
import { any, compile, makeScratch } from "./Compile.js"
import type { QueryContext } from "./QueryContext.js"
import { Rows } from "./Rows.js"

/** Unfiltered and ungrouped: the hour index's counters answer it. */
export const totalsSeries = ({ partition, plan, query, runs }: QueryContext): AggregationResult => {
  const rows = new Rows(query.maxRows)
  const sum = new Float64Array(OUTCOMES)
  for (const bucket of plan) {
    sum.fill(0)
    for (const run of runs) {
      const [a, b] = run.indexRange(bucket.fromHour, bucket.toHour)
      const counts = run.indexCounts
      for (let j = a * OUTCOMES, end = b * OUTCOMES; j < end; j += 9) {
        for (let o = 0; o < OUTCOMES; o++) sum[o]! += counts[j + o]!
      }
    }
    if (bucket.time === undefined || sum.some((v) => v !== 0)) rows.push(bucket.time, 0, 0, 0, sum, 0)
  }
  return rows.build(query, partition)
}

/**
 * Filtered by key only, not grouped: each key's rows (in row, so hour, order) from the key
 * indexes, walked once across the buckets; the late run is scanned.
 */
export const postingSeries = ({ keyCodes, keyMask, late, partition, plan, query }: QueryContext): AggregationResult => {
  const main = partition.main
  const acc = new Uint32Array(plan.length * OUTCOMES)
  // Row where each bucket ends in the main run.
  const ends = plan.map((bucket) => main.rows(bucket.fromHour, bucket.toHour)[1])
  const start = main.rows(plan[0]!.fromHour, plan[0]!.toHour)[0]
  const end = ends[ends.length - 1]!
  for (const key of keyCodes) {
    if (start >= end) break
    let bucket = 0
    forEachChunk(start, end, (c, base, from, to) => {
      // A local copy: the loops below are hot, and `bucket` lives in the closure's context.
      let j = bucket
      const chunk = main.chunks[c]!
      const index = chunk.keyIndex
      if (index !== undefined) {
        const [p, last] = KeyIndex.range(index, key, from, to)
        const entries = index.entries
        // Nine of ten are valid: counted in a local until the bucket changes, not in memory (one
        // counter incremented over and over waits on its own last store).
        let valid = 0
        for (let q = p; q < last; q++) {
          const entry = entries[q]!
          const row = base + (entry >>> 4)
          if (row >= ends[j]!) {
            acc[j * OUTCOMES]! += valid
            valid = 0
            do j++
            while (row >= ends[j]!)
          }
          const outcome = entry & 15
          if (outcome === 0) valid++
          else acc[j * OUTCOMES + outcome]!++
        }
        acc[j * OUTCOMES]! += valid
      } else {
        const keys = chunk.key
        const outcomes = chunk.outcome
        for (let i = from; i < to; i++) {
          if (keys[i] !== key) continue
          while (base + i >= ends[j]!) j++
          acc[j * OUTCOMES + outcomes[i]!]!++
        }
      }
      bucket = j
    })
  }
  if (late.length > 0) {
    const scratch = makeScratch(new Uint32Array(OUTCOMES), { keyMask })
    const scanLate = compile({
      keyFilter: true,
      tagFilter: false,
      identityFilter: false,
      requireIdentity: false,
      group: "none",
      track: false,
      counting: "outcomes",
      source: "range"
    }) as RangeScan
    plan.forEach((bucket, j) => {
      scratch.acc = acc.subarray(j * OUTCOMES, j * OUTCOMES + OUTCOMES)
      const [a, b] = late.rows(bucket.fromHour, bucket.toHour)
      scanLate(late.chunks, a, b, null, scratch)
    })
  }
  const rows = new Rows(query.maxRows)
  plan.forEach((bucket, j) => {
    const at = j * OUTCOMES
    if (bucket.time === undefined || any(acc, at)) rows.push(bucket.time, 0, 0, 0, acc, at)
  })
  return rows.build(query, partition)
}
