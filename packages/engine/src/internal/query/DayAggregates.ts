/**
 * Whole days from the day aggregates (`DayIndex`), partial days at the window's edges from rows
 * (by tag, from the hourly tag counts of days not written since they were computed).
 */
import type { AggregationResult } from "@keymeter/core/Aggregation"
import { OUTCOMES } from "@keymeter/core/Aggregation"
import * as Time from "@keymeter/core/Time"
import type { DayIndex } from "../DayIndex.js"
import { LIMITS } from "../DayIndex.js"
import { MIXED_IDENTITIES } from "../Partition.js"
import { U32List } from "../Run.js"
import type { RangeScan, Scratch, Shape } from "./Compile.js"
import { addInto, any, clearCounters, compile, counterValue, makeScratch, TOP_N_MAX } from "./Compile.js"
import { countKeysHours } from "./KeyRows.js"
import type { QueryContext } from "./QueryContext.js"
import { Rows } from "./Rows.js"
import { contenders, counted, totalled } from "./TopN.js"

/** The whole days of hours [from, to] and the hour ranges around them. */
const edgesAndDays = (from: number, to: number) => {
  const { after, before, days } = Time.splitDays(from, to)
  return { days, edges: [before, after].filter((span): span is Time.Span => span !== undefined) }
}

/**
 * Adds each tag set's counters in `setAcc` to its tags' in `tagAcc`, zeroing them. A function of
 * its own, as `TopN`'s loops over every group are (inline, V8 ran it interpreted at times).
 */
const splitIntoTags = (setAcc: Uint32Array, tagAcc: Float64Array, tagsetTags: ReadonlyArray<Uint32Array>) => {
  for (let g = 1; g < tagsetTags.length; g++) {
    const at = g * OUTCOMES
    if (!any(setAcc, at)) continue
    const tags = tagsetTags[g]!
    for (let t = 0; t < tags.length; t++) {
      for (let o = 0; o < OUTCOMES; o++) tagAcc[tags[t]! * OUTCOMES + o]! += setAcc[at + o]!
    }
    clearCounters(setAcc, at)
  }
}

/**
 * Adds the counts per tag of hours [from, to] into `tagAcc`: each day's hours from its hourly tag
 * counts when its aggregates are fresh (computed, and not written since), the other days' hours
 * given to `scan`. A day cut by the window is not computed for it: its other hours need not be read.
 */
const addHours = (
  days: DayIndex,
  from: number,
  to: number,
  tagAcc: Float64Array,
  scan: (from: number, to: number) => void
) => {
  for (let start = from; start <= to;) {
    const day = Math.floor(start / 24)
    const end = Math.min(to, day * 24 + 23)
    const counts = days.fresh(day)?.hourTagCounts
    if (counts === undefined) {
      scan(start, end)
    } else {
      // A row per hour: the day's tags when it was computed.
      // An integer to V8 (a division alone is a double), so the indexes below are too.
      const stride = (counts.length / 24) | 0
      for (let hour = start; hour <= end; hour++) {
        const at = (hour - day * 24) * stride
        for (let i = 0; i < stride; i++) tagAcc[i]! += counts[at + i]!
      }
    }
    start = end + 1
  }
}

/**
 * Whole days from the day index, partial days at the edges from rows: top keys by total (no time
 * unit, or per day or month bucket, with their identities or not), top identities by any counter,
 * counts per tag (no time unit, or hour, day or month buckets). Undefined when the query is not one
 * of these or the index does not keep the dimension.
 */
export const fromDayIndex = (context: QueryContext): AggregationResult | undefined => {
  const { dims, identityMask, keyMask, lo, hi, partition, plan, query, runs, tagsetMask } = context
  const days = partition.days
  const limit = query.limit
  const orderBy = query.orderBy
  if (
    query.timeUnit !== undefined && query.timeUnit !== "hour" && dims[0] === "key" &&
    (dims.length === 1 || (dims.length === 2 && dims[1] === "identity")) && !tagsetMask && !identityMask &&
    orderBy === "total" && limit !== undefined && limit <= TOP_N_MAX && partition.keyIds.length <= LIMITS.key
  ) return topKeysByBucket(context)
  if (tagsetMask || identityMask || dims.length !== 1) return undefined
  const compute = (day: number) => partition.computeDay(day)
  const rows = new Rows(query.maxRows, dims[0] === "tagset")
  const topShape = query.timeUnit === undefined && limit !== undefined && limit <= TOP_N_MAX && orderBy !== undefined &&
    orderBy !== "time"
  const { days: whole, edges } = edgesAndDays(lo, hi)
  const edgeScan = (shape: Omit<Shape, "source" | "track">, scratch: Scratch) => {
    const scan = compile({ ...shape, track: false, source: "range" }) as RangeScan
    for (const { from, to } of edges) {
      for (const run of runs) {
        const [a, b] = run.rows(from, to)
        scan(run.chunks, a, b, null, scratch)
      }
    }
  }
  const scratchOf = (acc: Uint32Array, keyMask: Uint8Array | null = null) => makeScratch(acc, { keyMask })
  const noFilter = { keyFilter: false, tagFilter: false, identityFilter: false, requireIdentity: false } as const

  if (dims[0] === "key" && topShape && orderBy === "total" && partition.keyIds.length <= LIMITS.key) {
    const n = partition.keyIds.length
    const totals = new Uint32Array(n)
    // Days only when there are whole days (here and below): iterating an empty literal instead, an
    // array of another kind to V8, threw away this function's optimized code.
    if (whole) {
      for (const day of days.between(whole.from, whole.to, compute)) {
        const data = day.keyTotals!
        addInto(totals, data, Math.min(n, data.length))
      }
    }
    edgeScan({ ...noFilter, keyFilter: keyMask !== null, group: "key", counting: "totals" }, scratchOf(totals, keyMask))
    const candidates = totalled(totals, 0, n, keyMask)
    rows.groups = candidates.length
    const chosen = contenders(candidates, (k) => totals[k]!, limit!, query.order)
    const counts = countKeysHours(partition.main, context.late, chosen, lo, hi, n)
    for (let k = 0; k < chosen.length; k++) rows.push(undefined, chosen[k]!, 0, 0, counts, k * OUTCOMES)
    return rows.build(query, partition)
  }

  if (dims[0] === "identity" && topShape && keyMask === null && partition.identities.length <= LIMITS.identity) {
    const n = partition.identities.length
    const counts = new Uint32Array(n * OUTCOMES)
    if (whole) {
      for (const day of days.between(whole.from, whole.to, compute)) {
        const data = day.identityCounts!
        addInto(counts, data, Math.min(n * OUTCOMES, data.length))
      }
    }
    edgeScan({ ...noFilter, requireIdentity: true, group: "identity", counting: "outcomes" }, scratchOf(counts))
    const candidates = counted(counts, 1, n)
    rows.groups = candidates.length
    const value = counterValue(orderBy!)
    for (const g of contenders(candidates, (g) => value(counts, g * OUTCOMES), limit!, query.order)) {
      rows.push(undefined, 0, g, 0, counts, g * OUTCOMES)
    }
    return rows.build(query, partition)
  }

  const hourly = query.timeUnit === "hour"
  if (
    dims[0] === "tagset" && query.groupByTag === "tag" && keyMask === null && partition.tagNames.length <= LIMITS.tag &&
    (!hourly || partition.tagNames.length <= LIMITS.hourTag)
  ) {
    const nTags = partition.tagNames.length
    // By hour, a top N of thousands of (hour, tag) rows builds only those that can make it.
    if (orderBy !== undefined && orderBy !== "time" && limit !== undefined && limit <= TOP_N_MAX) {
      rows.keepTop(orderBy, limit, query.order)
    }
    const tagAcc = new Float64Array(nTags * OUTCOMES)
    // Hours of days whose aggregates are fresh come from their hourly tag counts; the others' rows
    // are counted by tag set, split into tags below. The loop and its counters (nine per tag set:
    // 150 KB zeroed for 4,300 sets) are made at the first such hour, as most windows need none.
    let sets: { readonly acc: Uint32Array; readonly scratch: Scratch; readonly scan: RangeScan } | undefined
    let scanned = false
    const scanHours = (from: number, to: number) => {
      if (sets === undefined) {
        const acc = new Uint32Array(partition.tagsets.length * OUTCOMES)
        const scan = compile({ ...noFilter, group: "tagset", track: false, counting: "outcomes", source: "range" })
        sets = { acc, scratch: scratchOf(acc), scan: scan as RangeScan }
      }
      for (const run of runs) {
        const [a, b] = run.rows(from, to)
        sets.scan(run.chunks, a, b, null, sets.scratch)
      }
      scanned = true
    }
    // By hour, the window's whole days are computed where stale (as by day), then read hour by hour.
    const wholeDays = hourly ? edgesAndDays(lo, hi).days : undefined
    if (wholeDays) days.between(wholeDays.from, wholeDays.to, compute)
    for (const bucket of plan) {
      tagAcc.fill(0)
      if (hourly) {
        addHours(days, bucket.fromHour, bucket.toHour, tagAcc, scanHours)
      } else {
        const split = edgesAndDays(bucket.fromHour, bucket.toHour)
        if (split.days) {
          for (const day of days.between(split.days.from, split.days.to, compute)) {
            const data = day.tagCounts!
            addInto(tagAcc, data, Math.min(nTags * OUTCOMES, data.length))
          }
        }
        for (const { from, to } of split.edges) addHours(days, from, to, tagAcc, scanHours)
      }
      // Only when rows were read: an api may have thousands of tag sets.
      if (scanned) splitIntoTags(sets!.acc, tagAcc, partition.tagsetTags)
      scanned = false
      for (let tag = 0; tag < nTags; tag++) {
        const at = tag * OUTCOMES
        if (any(tagAcc, at)) rows.push(bucket.time, 0, 0, tag, tagAcc, at)
      }
    }
    return rows.build(query, partition)
  }
  return undefined
}

/**
 * Top N by total of day (or month) buckets × keys, and their identities: each bucket's key totals,
 * from its whole days' aggregates and its edges' rows, pick the contenders, whose counters then
 * come from the key indexes. A key's group with its identity is the key's own when every event of
 * the key carried that one identity (the partition keeps track); if a contending key's did not,
 * undefined (the scan answers). Keys without an identity are not in an identity grouping.
 */
const topKeysByBucket = (context: QueryContext): AggregationResult | undefined => {
  const { keyMask, late, partition, plan, query, runs } = context
  const n = partition.keyIds.length
  const byIdentity = context.dims.length === 2
  const compute = (day: number) => partition.computeDay(day)
  const totals = new Uint32Array(n)
  const scratch = makeScratch(totals, { keyMask })
  const scanTotals = compile({
    keyFilter: keyMask !== null,
    tagFilter: false,
    identityFilter: false,
    requireIdentity: false,
    group: "key",
    counting: "totals",
    track: false,
    source: "range"
  }) as RangeScan
  // The (bucket, key) groups with data: their bucket, key and total.
  const bucketOf = new U32List(1024)
  const keyOf = new U32List(1024)
  const totalOf = new U32List(1024)
  for (let j = 0; j < plan.length; j++) {
    const bucket = plan[j]!
    totals.fill(0)
    const split = edgesAndDays(bucket.fromHour, bucket.toHour)
    if (split.days) {
      for (const day of partition.days.between(split.days.from, split.days.to, compute)) {
        const data = day.keyTotals!
        addInto(totals, data, Math.min(n, data.length))
      }
    }
    for (const { from, to } of split.edges) {
      for (const run of runs) {
        const [a, b] = run.rows(from, to)
        scanTotals(run.chunks, a, b, null, scratch)
      }
    }
    for (let key = 0; key < n; key++) {
      const total = totals[key]!
      if (total === 0 || (keyMask !== null && keyMask[key] !== 1)) continue
      if (byIdentity) {
        const identity = partition.identityOfKey(key)
        if (identity === MIXED_IDENTITIES) return undefined
        if (identity === 0) continue
      }
      bucketOf.push(j)
      keyOf.push(key)
      totalOf.push(total)
    }
  }
  const rows = new Rows(query.maxRows)
  const candidates = new Array<number>(totalOf.length)
  for (let i = 0; i < candidates.length; i++) candidates[i] = i
  rows.groups = candidates.length
  const totalsData = totalOf.data
  // The contenders of each bucket counted together (see `countKeysHours`).
  const byBucket = new Map<number, Array<number>>()
  for (const i of contenders(candidates, (c) => totalsData[c]!, query.limit!, query.order)) {
    const chosen = byBucket.get(bucketOf.data[i]!)
    if (chosen === undefined) byBucket.set(bucketOf.data[i]!, [i])
    else chosen.push(i)
  }
  for (const [j, chosen] of byBucket) {
    const bucket = plan[j]!
    const keys = chosen.map((i) => keyOf.data[i]!)
    const counts = countKeysHours(partition.main, late, keys, bucket.fromHour, bucket.toHour, partition.keyIds.length)
    for (let k = 0; k < keys.length; k++) {
      const key = keys[k]!
      rows.push(bucket.time, key, byIdentity ? partition.identityOfKey(key) : 0, 0, counts, k * OUTCOMES)
    }
  }
  return rows.build(query, partition)
}
