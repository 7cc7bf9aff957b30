/**
 * Top N: one dimension, no time unit, ordered by a counter, with a small limit. Only the rows that
 * can make the first `limit` are built.
 */
import type { AggregationResult } from "@keymeter/core/Aggregation"
import { OUTCOMES } from "@keymeter/core/Aggregation"
import { BestValues } from "./BestValues.js"
import type { RangeScan } from "./Compile.js"
import { any, compile, counterValue, DENSE_GROUPS_MAX, makeScratch, TOP_N_MAX } from "./Compile.js"
import { countKeysHours, keyRowsEstimate } from "./KeyRows.js"
import type { QueryContext } from "./QueryContext.js"
import { Rows } from "./Rows.js"

/*
 * A top N's candidates, found by loops over every group (up to a million) in functions of their
 * own: inline in a path of many branches they ran interpreted whenever V8 dropped that path's code.
 */

/** Groups `first` to `groups - 1` whose total is not zero and, given a mask, in it. */
export const totalled = (
  totals: Uint32Array,
  first: number,
  groups: number,
  mask: Uint8Array | null = null
): Array<number> => {
  const out: Array<number> = []
  for (let g = first; g < groups; g++) if (totals[g] !== 0 && (mask === null || mask[g] === 1)) out.push(g)
  return out
}

/** Groups `first` to `groups - 1` with any of their nine counters not zero. */
export const counted = (counts: Uint32Array, first: number, groups: number): Array<number> => {
  const out: Array<number> = []
  for (let g = first; g < groups; g++) if (any(counts, g * OUTCOMES)) out.push(g)
  return out
}

/**
 * Of `candidates` (groups with data) by `value`, those that can make the first `limit` in
 * `order`: the `limit` best and every one tied with the last of them.
 */
export const contenders = (
  candidates: ReadonlyArray<number>,
  value: (g: number) => number,
  limit: number,
  order: "asc" | "desc"
) => {
  if (candidates.length <= limit) return candidates
  const best = new BestValues(limit, order)
  for (const g of candidates) best.offer(value(g))
  return candidates.filter((g) => best.admits(value(g)))
}

/**
 * Top N: one dimension, no time unit, ordered by a counter, with a small limit. Only the rows that
 * can make the first `limit` are built; `groups` says how many the full answer holds. A few
 * filtered keys are counted from the key indexes.
 */
export const topN = (context: QueryContext): AggregationResult | undefined => {
  const { dims, keyMask, identityMask, tagsetMask, partition, query, runs } = context
  const orderBy = query.orderBy
  if (
    query.timeUnit !== undefined || dims.length !== 1 || query.limit === undefined || query.limit > TOP_N_MAX ||
    orderBy === undefined || orderBy === "time" || query.groupByTag === "tag"
  ) return undefined
  const dim = dims[0]!
  const groups = dim === "key"
    ? partition.keyIds.length
    : dim === "identity"
    ? partition.identities.length
    : partition.tagsets.length
  if (groups > DENSE_GROUPS_MAX) return undefined
  const base = {
    keyFilter: keyMask !== null,
    tagFilter: tagsetMask !== null,
    identityFilter: identityMask !== null,
    requireIdentity: dim === "identity",
    group: dim,
    track: false,
    source: "range"
  } as const
  const [lo, hi] = [context.lo, context.hi]
  const rows = new Rows(query.maxRows)
  /** The rows of the contenders among `candidates`, by the counters in `acc`. */
  const ranked = (acc: Uint32Array, candidates: ReadonlyArray<number>) => {
    rows.groups = candidates.length
    const value = counterValue(orderBy)
    for (const g of contenders(candidates, (g) => value(acc, g * OUTCOMES), query.limit!, query.order)) {
      rows.push(
        undefined,
        dim === "key" ? g : 0,
        dim === "identity" ? g : 0,
        dim === "tagset" ? g : 0,
        acc,
        g * OUTCOMES
      )
    }
    return rows.build(query, partition)
  }

  if (dim === "key" && keyMask !== null && !tagsetMask && !identityMask) {
    // Keys filtered to a few of many rows: their counters from the key indexes, not a scan of the
    // window.
    const [a, b] = partition.main.rows(lo, hi)
    if (keyRowsEstimate(partition.main, context.keyCodes, a, b) * 4 < b - a) {
      const acc = new Uint32Array(groups * OUTCOMES)
      const keys = context.keyCodes
      const counts = countKeysHours(partition.main, context.late, keys, lo, hi, partition.keyIds.length)
      for (let k = 0; k < keys.length; k++) {
        acc.set(counts.subarray(k * OUTCOMES, (k + 1) * OUTCOMES), keys[k]! * OUTCOMES)
      }
      return ranked(acc, context.keyCodes.filter((key) => any(acc, key * OUTCOMES)))
    }
  }

  if (dim === "key" && orderBy === "total" && !tagsetMask && !identityMask) {
    // Keys: totals alone pick the contenders (a small, cache-resident table), then their counters
    // come from their posting lists.
    const scratch = makeScratch(new Uint32Array(groups), { keyMask })
    const count = compile({ ...base, counting: "totals" }) as RangeScan
    for (const run of runs) {
      const [a, b] = run.rows(lo, hi)
      count(run.chunks, a, b, null, scratch)
    }
    const totals = scratch.acc
    const candidates = totalled(totals, 0, groups)
    rows.groups = candidates.length
    const chosen = contenders(candidates, (g) => totals[g]!, query.limit, query.order)
    const counts = countKeysHours(partition.main, context.late, chosen, lo, hi, partition.keyIds.length)
    for (let k = 0; k < chosen.length; k++) rows.push(undefined, chosen[k]!, 0, 0, counts, k * OUTCOMES)
    return rows.build(query, partition)
  }

  // Other dimensions (and other orders): every group's counters, rows only for the contenders.
  const scratch = makeScratch(new Uint32Array(groups * OUTCOMES), { keyMask, tagsetMask, identityMask })
  const count = compile({ ...base, counting: "outcomes" }) as RangeScan
  for (const run of runs) {
    const [a, b] = run.rows(lo, hi)
    count(run.chunks, a, b, null, scratch)
  }
  return ranked(scratch.acc, counted(scratch.acc, 0, groups))
}
