/**
 * Answers an aggregation query over one partition. Filters become masks over the dictionaries,
 * the window becomes time buckets (one without a time unit), and then the cheapest path answers:
 *
 * - unfiltered, ungrouped series: the per-hour counters of the hour index, no row is read;
 * - key-filtered series: the keys' entries in the full chunks' key indexes (row and outcome), no
 *   column is read; only the last, unfilled chunk is scanned;
 * - whole days of top-N and per-tag queries: the day aggregates (see `DayIndex`);
 * - `orderBy` + small `limit` over one dimension without a time unit (top N): counters for all
 *   groups, then rows only for the groups that can make the top N (for keys, a totals-only pass
 *   picks them and their counters come from the key indexes);
 * - everything else: a scan of each bucket's row slice into a group table, harvested per bucket.
 *
 * Scan loops are generated per query shape (filters × grouping × row source) with `new Function`,
 * so the hot loop does not branch on the shape; shapes are cached.
 */
import type { AggregationQuery, AggregationResult } from "@keymeter/core/Aggregation"
import * as Time from "@keymeter/core/Time"
import { Outcomes } from "@keymeter/core/Verification"
import { LIMITS } from "./DayIndex.js"
import * as KeyIndex from "./KeyIndex.js"
import type { Partition } from "./Partition.js"
import type { Chunk, Run } from "./Run.js"
import { CHUNK_BITS, CHUNK_MASK, CHUNK_SIZE, lowerBound, U32List } from "./Run.js"

/** Thrown inside a scan when the answer outgrows `maxRows`; caught by the store. */
export class TooManyRows {}

/** Group tables larger than this many groups use a hash map instead of a dense array. */
const DENSE_GROUPS_MAX = 1 << 20

/** Top-N pushdown applies up to this `limit`. */
const TOP_N_MAX = 1000

type Dim = "key" | "identity" | "tagset"

/** State shared between the generated loops and the harvest. */
interface Scratch {
  /** Counters of the dense group table; a bucket holds fewer than 2^32 rows (row ids are u32). */
  acc: Uint32Array
  seen: Uint32Array
  touched: Uint32Array
  nt: number
  epoch: number
  keyMask: Uint8Array | null
  tagsetMask: Uint8Array | null
  identityMask: Uint8Array | null
  add: ((key: number, identity: number, tagset: number, outcome: number) => void) | null
}

type RangeScan = (chunks: Array<Chunk>, from: number, to: number, rows: null, s: Scratch) => void
type PostingScan = (chunks: Array<Chunk>, from: number, to: number, rows: Uint32Array, s: Scratch) => void

interface Shape {
  readonly keyFilter: boolean
  readonly tagFilter: boolean
  readonly identityFilter: boolean
  readonly requireIdentity: boolean
  /** `none`: one group; a dim: dense by that code; `map`: composite groups via `s.add`. */
  readonly group: "none" | Dim | "map"
  readonly track: boolean
  /** `totals`: count rows per group (in `acc[g]`), not per outcome. */
  readonly counting: "outcomes" | "totals"
  readonly source: "range" | "postings"
}

const cache = new Map<string, RangeScan | PostingScan>()

const compile = (shape: Shape): RangeScan | PostingScan => {
  const id = JSON.stringify(shape)
  const cached = cache.get(id)
  if (cached !== undefined) return cached
  const body: Array<string> = []
  if (shape.keyFilter && shape.source === "range") body.push("if (keyMask[K[i]] === 0) continue;")
  if (shape.tagFilter) body.push("if (tagsetMask[T[i]] === 0) continue;")
  if (shape.identityFilter) body.push("if (identityMask[I[i]] === 0) continue;")
  if (shape.requireIdentity) body.push("if (I[i] === 0) continue;")
  if (shape.group === "map") {
    body.push("add(K[i], I[i], T[i], O[i]);")
  } else {
    const column = { none: "0", key: "K[i]", identity: "I[i]", tagset: "T[i]" }[shape.group]
    body.push(`const g = ${column};`)
    if (shape.track) body.push("if (seen[g] !== epoch) { seen[g] = epoch; touched[nt++] = g; }")
    body.push(shape.counting === "totals" ? "acc[g]++;" : "acc[g * 9 + O[i]]++;")
  }
  const code = body.join(" ")
  const columns = [
    code.includes("K[i]") ? "const K = ch.key;" : "",
    code.includes("I[i]") ? "const I = ch.identity;" : "",
    code.includes("T[i]") ? "const T = ch.tagset;" : "",
    code.includes("O[i]") ? "const O = ch.outcome;" : ""
  ].join(" ")
  const loop = shape.source === "range"
    ? `if (a >= b) return;
       const c0 = a >>> ${CHUNK_BITS}, c1 = (b - 1) >>> ${CHUNK_BITS};
       for (let c = c0; c <= c1; c++) {
         const ch = chunks[c]; ${columns}
         const from = c === c0 ? (a & ${CHUNK_MASK}) : 0;
         const to = c === c1 ? ((b - 1) & ${CHUNK_MASK}) + 1 : ${CHUNK_MASK + 1};
         for (let i = from; i < to; i++) { ${code} }
       }`
    : `for (let p = a; p < b; p++) {
         const r = P[p] >>> 4; const ch = chunks[r >>> ${CHUNK_BITS}]; const i = r & ${CHUNK_MASK}; ${columns}
         ${code}
       }`
  const source = `"use strict";
    const acc = s.acc, seen = s.seen, touched = s.touched, epoch = s.epoch, add = s.add;
    const keyMask = s.keyMask, tagsetMask = s.tagsetMask, identityMask = s.identityMask;
    let nt = s.nt;
    ${loop}
    s.nt = nt;`
  const fn = new Function("chunks", "a", "b", "P", "s", source) as RangeScan | PostingScan
  cache.set(id, fn)
  return fn
}

interface Bucket {
  readonly time: number | undefined
  readonly fromHour: number
  readonly toHour: number
}

const bucketsOf = (query: AggregationQuery, lo: number, hi: number): Array<Bucket> => {
  const unit = query.timeUnit
  if (unit === undefined) return [{ time: undefined, fromHour: lo, toHour: hi }]
  const out: Array<Bucket> = []
  const HOUR = Time.HOUR
  for (let t = Time.bucketStart(unit, lo * HOUR); t <= hi * HOUR;) {
    const next = Time.nextBucket(unit, t)
    out.push({ time: t, fromHour: Math.max(lo, t / HOUR), toHour: Math.min(hi, next / HOUR - 1) })
    t = next
  }
  return out
}

/**
 * The answer's rows as dictionary codes, turned into strings once at the end. Tag grouping is
 * answered per tag (`tag`) when the engine expanded the tag sets, else per tag set (`tags`), which
 * core splits into single tags.
 */
class Rows {
  size = 0
  groups: number | undefined
  private readonly time: Array<number> = []
  private readonly key = new U32List(64)
  private readonly identity = new U32List(64)
  /** Tag set codes, or tag codes when `perTag`. */
  private readonly tag = new U32List(64)
  private counts = new Float64Array(64 * 9)

  constructor(private readonly maxRows: number, readonly perTag = false) {}

  push(time: number | undefined, key: number, identity: number, tag: number, source: ArrayLike<number>, at: number) {
    const row = this.size
    if (row >= this.maxRows) throw new TooManyRows()
    this.size++
    if (time !== undefined) this.time.push(time)
    this.key.push(key)
    this.identity.push(identity)
    this.tag.push(tag)
    if ((row + 1) * 9 > this.counts.length) {
      const grown = new Float64Array(this.counts.length * 2)
      grown.set(this.counts)
      this.counts = grown
    }
    for (let o = 0; o < 9; o++) this.counts[row * 9 + o] = source[at + o]!
  }

  build(query: AggregationQuery, partition: Partition | undefined): AggregationResult {
    const n = this.size
    const codes = (list: U32List) => list.data.subarray(0, n)
    const tagged = query.groupByTag !== undefined
    return {
      size: n,
      ...(this.groups !== undefined ? { groups: this.groups } : {}),
      counts: this.counts.subarray(0, n * 9),
      time: query.timeUnit !== undefined ? Float64Array.from(this.time) : undefined,
      keyId: query.groupByKey ? Array.from(codes(this.key), (c) => partition!.keyIds[c]!) : undefined,
      identity: query.groupByIdentity ? Array.from(codes(this.identity), (c) => partition!.identities[c]!) : undefined,
      tag: tagged && this.perTag ? Array.from(codes(this.tag), (c) => partition!.tagNames[c]!) : undefined,
      tags: tagged && !this.perTag ? Array.from(codes(this.tag), (c) => partition!.tagsets[c]!) : undefined
    }
  }
}

const empty = (query: AggregationQuery): AggregationResult => new Rows(0).build(query, undefined)

/** Everything the paths share about one query on one partition. */
interface Context {
  readonly query: AggregationQuery
  readonly partition: Partition
  readonly runs: ReadonlyArray<Run>
  readonly late: Run
  readonly plan: ReadonlyArray<Bucket>
  readonly lo: number
  readonly hi: number
  readonly keyMask: Uint8Array | null
  readonly keyCodes: ReadonlyArray<number>
  readonly tagsetMask: Uint8Array | null
  readonly identityMask: Uint8Array | null
  readonly dims: ReadonlyArray<Dim>
}

/** Answers `query` from `partition` (undefined: the api holds no verifications). */
export const aggregate = (partition: Partition | undefined, query: AggregationQuery): AggregationResult => {
  if (partition === undefined || partition.size === 0) return empty(query)
  const late = partition.lateRun()
  const main = partition.main

  // Filters as masks over the dictionaries. A filter naming nothing stored matches nothing.
  let keyMask: Uint8Array | null = null
  const keyCodes: Array<number> = []
  if (query.keyIds.length > 0) {
    keyMask = new Uint8Array(partition.keyIds.length)
    for (const keyId of query.keyIds) {
      const code = partition.keyCodes.get(keyId)
      if (code !== undefined && keyMask[code] === 0) {
        keyMask[code] = 1
        keyCodes.push(code)
      }
    }
    if (keyCodes.length === 0) return empty(query)
  }
  let tagsetMask: Uint8Array | null = null
  if (query.tags.length > 0) {
    const wanted: Array<number> = []
    for (const tag of query.tags) {
      const code = partition.tagCodes.get(tag)
      if (code === undefined) return empty(query)
      wanted.push(code)
    }
    tagsetMask = new Uint8Array(partition.tagsets.length)
    let any = false
    for (let t = 1; t < partition.tagsetTags.length; t++) {
      const codes = partition.tagsetTags[t]!
      if (wanted.every((w) => codes[lowerBound(codes, codes.length, w)] === w)) {
        tagsetMask[t] = 1
        any = true
      }
    }
    if (!any) return empty(query)
  }
  let identityMask: Uint8Array | null = null
  if (query.externalId !== undefined) {
    identityMask = new Uint8Array(partition.identities.length)
    let any = false
    for (let c = 1; c < partition.identities.length; c++) {
      if (partition.identities[c]!.externalId === query.externalId) {
        identityMask[c] = 1
        any = true
      }
    }
    if (!any) return empty(query)
  }

  // The window, clamped to the hours that hold data.
  const firstHour = late.length > 0
    ? Math.min(main.length > 0 ? main.firstHour : Infinity, late.firstHour)
    : main.firstHour
  const lastHour = Math.max(main.lastHour, late.lastHour)
  const lo = Math.max(query.start === undefined ? firstHour : query.start / Time.HOUR, firstHour)
  const hi = Math.min(query.end / Time.HOUR, lastHour)
  if (lo > hi) return empty(query)

  const dims: Array<Dim> = []
  if (query.groupByKey) dims.push("key")
  if (query.groupByIdentity) dims.push("identity")
  if (query.groupByTag !== undefined) dims.push("tagset")

  const context: Context = {
    query,
    partition,
    runs: late.length > 0 ? [main, late] : [main],
    late,
    plan: bucketsOf(query, lo, hi),
    lo,
    hi,
    keyMask,
    keyCodes,
    tagsetMask,
    identityMask,
    dims
  }
  if (dims.length === 0 && !keyMask && !tagsetMask && !identityMask) return totalsSeries(context)
  if (dims.length === 0 && keyMask && !tagsetMask && !identityMask) return postingSeries(context)
  const daily = fromDayIndex(context)
  if (daily !== undefined) return daily
  const top = topN(context)
  if (top !== undefined) return top
  return scan(context)
}

/** Unfiltered and ungrouped: the hour index's counters answer it. */
const totalsSeries = ({ partition, plan, query, runs }: Context): AggregationResult => {
  const rows = new Rows(query.maxRows)
  const sum = new Float64Array(9)
  for (const bucket of plan) {
    sum.fill(0)
    for (const run of runs) {
      const [a, b] = run.indexRange(bucket.fromHour, bucket.toHour)
      const counts = run.indexCounts
      for (let j = a * 9, end = b * 9; j < end; j += 9) {
        for (let o = 0; o < 9; o++) sum[o]! += counts[j + o]!
      }
    }
    if (bucket.time === undefined || sum.some((v) => v !== 0)) rows.push(bucket.time, 0, 0, 0, sum, 0)
  }
  return rows.build(query, partition)
}

/**
 * Rows a key-index read of `keys` over main-run rows [a, b) would visit: their entries in full
 * chunks, and every row of a chunk without an index (it is scanned).
 */
const keyRowsEstimate = (run: Run, keys: ReadonlyArray<number>, a: number, b: number): number => {
  let count = 0
  if (a >= b) return 0
  for (let c = a >>> CHUNK_BITS; c <= (b - 1) >>> CHUNK_BITS; c++) {
    const base = c * CHUNK_SIZE
    const from = Math.max(a - base, 0)
    const to = Math.min(b - base, CHUNK_SIZE)
    const index = run.chunks[c]!.keyIndex
    if (index === undefined) count += to - from
    else {
      for (const key of keys) {
        const [p, end] = KeyIndex.range(index, key, from, to)
        count += end - p
      }
    }
  }
  return count
}

/**
 * The entries (`row * 16 + outcome`) of `keys` in main-run rows [a, b), appended to `into` from
 * the key indexes of full chunks; the row ranges of chunks without an index go to `unindexed`.
 */
const gather = (
  run: Run,
  keys: ReadonlyArray<number>,
  a: number,
  b: number,
  into: U32List,
  unindexed: (from: number, to: number) => void
) => {
  if (a >= b) return
  for (let c = a >>> CHUNK_BITS; c <= (b - 1) >>> CHUNK_BITS; c++) {
    const chunk = run.chunks[c]!
    const base = c * CHUNK_SIZE
    const from = Math.max(a - base, 0)
    const to = Math.min(b - base, CHUNK_SIZE)
    const index = chunk.keyIndex
    if (index === undefined) {
      unindexed(base + from, base + to)
      continue
    }
    for (const key of keys) {
      const [p, end] = KeyIndex.range(index, key, from, to)
      const entries = index.entries
      for (let q = p; q < end; q++) into.push(base * 16 + entries[q]!)
    }
  }
}

/** Adds the outcomes of `key`'s rows in main-run rows [a, b) to `counts[0 .. 9)`. */
const countKey = (run: Run, key: number, a: number, b: number, counts: Float64Array) => {
  if (a >= b) return
  for (let c = a >>> CHUNK_BITS; c <= (b - 1) >>> CHUNK_BITS; c++) {
    const chunk = run.chunks[c]!
    const base = c * CHUNK_SIZE
    const from = Math.max(a - base, 0)
    const to = Math.min(b - base, CHUNK_SIZE)
    const index = chunk.keyIndex
    if (index !== undefined) {
      const [p, end] = KeyIndex.range(index, key, from, to)
      const entries = index.entries
      for (let q = p; q < end; q++) counts[entries[q]! & 15]!++
    } else {
      const keys = chunk.key
      const outcomes = chunk.outcome
      for (let i = from; i < to; i++) if (keys[i] === key) counts[outcomes[i]!]!++
    }
  }
}

/**
 * Filtered by key only, not grouped: each key's rows (in row, so hour, order) from the key
 * indexes, walked once across the buckets; the late run is scanned.
 */
const postingSeries = ({ keyCodes, keyMask, late, partition, plan, query }: Context): AggregationResult => {
  const main = partition.main
  const acc = new Uint32Array(plan.length * 9)
  // Row where each bucket ends in the main run.
  const ends = plan.map((bucket) => main.rows(bucket.fromHour, bucket.toHour)[1])
  const start = main.rows(plan[0]!.fromHour, plan[0]!.toHour)[0]
  const end = ends[ends.length - 1]!
  for (const key of keyCodes) {
    if (start >= end) break
    let j = 0
    for (let c = start >>> CHUNK_BITS; c <= (end - 1) >>> CHUNK_BITS; c++) {
      const chunk = main.chunks[c]!
      const base = c * CHUNK_SIZE
      const from = Math.max(start - base, 0)
      const to = Math.min(end - base, CHUNK_SIZE)
      const index = chunk.keyIndex
      if (index !== undefined) {
        const [p, last] = KeyIndex.range(index, key, from, to)
        const entries = index.entries
        for (let q = p; q < last; q++) {
          const entry = entries[q]!
          const row = base + (entry >>> 4)
          while (row >= ends[j]!) j++
          acc[j * 9 + (entry & 15)]!++
        }
      } else {
        const keys = chunk.key
        const outcomes = chunk.outcome
        for (let i = from; i < to; i++) {
          if (keys[i] !== key) continue
          while (base + i >= ends[j]!) j++
          acc[j * 9 + outcomes[i]!]!++
        }
      }
    }
  }
  if (late.length > 0) {
    const scratch: Scratch = {
      acc: new Uint32Array(9),
      seen: new Uint32Array(0),
      touched: new Uint32Array(0),
      nt: 0,
      epoch: 1,
      keyMask,
      tagsetMask: null,
      identityMask: null,
      add: null
    }
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
      scratch.acc = acc.subarray(j * 9, j * 9 + 9)
      const [a, b] = late.rows(bucket.fromHour, bucket.toHour)
      scanLate(late.chunks, a, b, null, scratch)
    })
  }
  const rows = new Rows(query.maxRows)
  plan.forEach((bucket, j) => {
    const at = j * 9
    let any = false
    for (let o = 0; o < 9; o++) any ||= acc[at + o] !== 0
    if (bucket.time === undefined || any) rows.push(bucket.time, 0, 0, 0, acc, at)
  })
  return rows.build(query, partition)
}

/** The whole days of hours [from, to] (if any) and the hour ranges around them. */
const splitDays = (from: number, to: number) => {
  const first = Math.ceil(from / 24)
  const last = Math.floor((to + 1) / 24) - 1
  if (first > last) return { days: undefined, edges: [[from, to]] as Array<[number, number]> }
  const edges: Array<[number, number]> = []
  if (from < first * 24) edges.push([from, first * 24 - 1])
  if ((last + 1) * 24 <= to) edges.push([(last + 1) * 24, to])
  return { days: [first, last] as const, edges }
}

/**
 * Whole days from the day index, partial days at the edges from rows: top keys by total, top
 * identities by any counter, counts per tag (no time unit, or day/month buckets). Undefined when
 * the query is not one of these or the index does not keep the dimension.
 */
const fromDayIndex = (context: Context): AggregationResult | undefined => {
  const { dims, identityMask, keyMask, lo, hi, partition, plan, query, runs, tagsetMask } = context
  const days = partition.days
  if (tagsetMask || identityMask || dims.length !== 1) return undefined
  const compute = (day: number) => partition.computeDay(day)
  const rows = new Rows(query.maxRows, dims[0] === "tagset")
  const limit = query.limit
  const orderBy = query.orderBy
  const topShape = query.timeUnit === undefined && limit !== undefined && limit <= TOP_N_MAX && orderBy !== undefined &&
    orderBy !== "time"
  const { days: whole, edges } = splitDays(lo, hi)
  const edgeScan = (shape: Omit<Shape, "source" | "track">, scratch: Scratch) => {
    const scan = compile({ ...shape, track: false, source: "range" }) as RangeScan
    for (const [from, to] of edges) {
      for (const run of runs) {
        const [a, b] = run.rows(from, to)
        scan(run.chunks, a, b, null, scratch)
      }
    }
  }
  const scratchOf = (acc: Uint32Array, mask: Uint8Array | null = null): Scratch => ({
    acc,
    seen: new Uint32Array(0),
    touched: new Uint32Array(0),
    nt: 0,
    epoch: 1,
    keyMask: mask,
    tagsetMask: null,
    identityMask: null,
    add: null
  })
  const noFilter = { keyFilter: false, tagFilter: false, identityFilter: false, requireIdentity: false } as const

  if (dims[0] === "key" && topShape && orderBy === "total" && partition.keyIds.length <= LIMITS.key) {
    const n = partition.keyIds.length
    const totals = new Uint32Array(n)
    for (const day of whole ? days.between(whole[0], whole[1], compute) : []) {
      const data = day.keyTotals!
      for (let k = Math.min(n, data.length) - 1; k >= 0; k--) totals[k]! += data[k]!
    }
    edgeScan({ ...noFilter, keyFilter: keyMask !== null, group: "key", counting: "totals" }, scratchOf(totals, keyMask))
    const candidates: Array<number> = []
    for (let k = 0; k < n; k++) if (totals[k] !== 0 && (keyMask === null || keyMask[k] === 1)) candidates.push(k)
    rows.groups = candidates.length
    const counts = new Float64Array(9)
    const [a, b] = partition.main.rows(lo, hi)
    const lateMask = new Uint8Array(n)
    const lateScratch = scratchOf(new Uint32Array(9), lateMask)
    const lateScan = compile({
      ...noFilter,
      keyFilter: true,
      group: "none",
      track: false,
      counting: "outcomes",
      source: "range"
    }) as RangeScan
    for (const key of contenders(candidates, (k) => totals[k]!, limit!, query.order)) {
      counts.fill(0)
      countKey(partition.main, key, a, b, counts)
      if (context.late.length > 0) {
        lateMask[key] = 1
        lateScratch.acc.fill(0)
        const [la, lb] = context.late.rows(lo, hi)
        lateScan(context.late.chunks, la, lb, null, lateScratch)
        lateMask[key] = 0
        for (let o = 0; o < 9; o++) counts[o]! += lateScratch.acc[o]!
      }
      rows.push(undefined, key, 0, 0, counts, 0)
    }
    return rows.build(query, partition)
  }

  if (dims[0] === "identity" && topShape && keyMask === null && partition.identities.length <= LIMITS.identity) {
    const n = partition.identities.length
    const counts = new Uint32Array(n * 9)
    for (const day of whole ? days.between(whole[0], whole[1], compute) : []) {
      const data = day.identityCounts!
      for (let i = Math.min(n * 9, data.length) - 1; i >= 0; i--) counts[i]! += data[i]!
    }
    edgeScan({ ...noFilter, requireIdentity: true, group: "identity", counting: "outcomes" }, scratchOf(counts))
    const candidates: Array<number> = []
    for (let g = 1; g < n; g++) {
      const at = g * 9
      if (
        counts[at]! + counts[at + 1]! + counts[at + 2]! + counts[at + 3]! + counts[at + 4]! + counts[at + 5]! +
            counts[at + 6]! + counts[at + 7]! + counts[at + 8]! !== 0
      ) candidates.push(g)
    }
    rows.groups = candidates.length
    for (const g of contenders(candidates, (g) => valueOf(orderBy!, counts, g * 9), limit!, query.order)) {
      rows.push(undefined, 0, g, 0, counts, g * 9)
    }
    return rows.build(query, partition)
  }

  if (
    dims[0] === "tagset" && query.groupByTag === "tag" && keyMask === null && partition.tagNames.length <= LIMITS.tag &&
    query.timeUnit !== "hour"
  ) {
    const nTags = partition.tagNames.length
    const tagAcc = new Float64Array(nTags * 9)
    const setAcc = new Uint32Array(partition.tagsets.length * 9)
    const scanSets = compile({
      ...noFilter,
      group: "tagset",
      track: false,
      counting: "outcomes",
      source: "range"
    }) as RangeScan
    const setScratch = scratchOf(setAcc)
    for (const bucket of plan) {
      tagAcc.fill(0)
      const split = splitDays(bucket.fromHour, bucket.toHour)
      for (const day of split.days ? days.between(split.days[0], split.days[1], compute) : []) {
        const data = day.tagCounts!
        for (let i = Math.min(nTags * 9, data.length) - 1; i >= 0; i--) tagAcc[i]! += data[i]!
      }
      for (const [from, to] of split.edges) {
        for (const run of runs) {
          const [a, b] = run.rows(from, to)
          scanSets(run.chunks, a, b, null, setScratch)
        }
      }
      for (let g = 1; g < partition.tagsets.length; g++) {
        const at = g * 9
        if (
          setAcc[at]! + setAcc[at + 1]! + setAcc[at + 2]! + setAcc[at + 3]! + setAcc[at + 4]! + setAcc[at + 5]! +
              setAcc[at + 6]! + setAcc[at + 7]! + setAcc[at + 8]! === 0
        ) continue
        const tags = partition.tagsetTags[g]!
        for (let t = 0; t < tags.length; t++) {
          for (let o = 0; o < 9; o++) tagAcc[tags[t]! * 9 + o]! += setAcc[at + o]!
        }
        setAcc.fill(0, at, at + 9)
      }
      for (let tag = 0; tag < nTags; tag++) {
        const at = tag * 9
        let any = false
        for (let o = 0; o < 9; o++) any ||= tagAcc[at + o] !== 0
        if (any) rows.push(bucket.time, 0, 0, tag, tagAcc, at)
      }
    }
    return rows.build(query, partition)
  }
  return undefined
}

/** The order value of a group (total, or one outcome's count) from its nine counters. */
const valueOf = (orderBy: string, counts: ArrayLike<number>, at: number) => {
  if (orderBy === "total") {
    let total = 0
    for (let o = 0; o < 9; o++) total += counts[at + o]!
    return total
  }
  return counts[at + Outcomes.indexOf(orderBy as never)]!
}

/**
 * Of `candidates` (groups with data) by `value`, those that can make the first `limit` in
 * `order`: the `limit` best and every one tied with the last of them.
 */
const contenders = (
  candidates: ReadonlyArray<number>,
  value: (g: number) => number,
  limit: number,
  order: "asc" | "desc"
) => {
  if (candidates.length <= limit) return candidates
  // The limit-th best value, with a bounded heap whose root is the worst of the best so far.
  const sign = order === "desc" ? 1 : -1
  const heap = new Float64Array(limit)
  let size = 0
  for (const g of candidates) {
    const v = sign * value(g)
    if (size < limit) {
      let i = size++
      heap[i] = v
      while (i > 0 && heap[(i - 1) >> 1]! > heap[i]!) {
        const parent = (i - 1) >> 1
        ;[heap[i], heap[parent]] = [heap[parent]!, heap[i]!]
        i = parent
      }
    } else if (v > heap[0]!) {
      heap[0] = v
      for (let i = 0;;) {
        const l = 2 * i + 1
        const r = l + 1
        let least = i
        if (l < size && heap[l]! < heap[least]!) least = l
        if (r < size && heap[r]! < heap[least]!) least = r
        if (least === i) break
        ;[heap[i], heap[least]] = [heap[least]!, heap[i]!]
        i = least
      }
    }
  }
  const threshold = heap[0]!
  return candidates.filter((g) => sign * value(g) >= threshold)
}

/**
 * Top N: one dimension, no time unit, ordered by a counter, with a small limit. Only the rows that
 * can make the first `limit` are built; `groups` says how many the full answer holds.
 */
const topN = (context: Context): AggregationResult | undefined => {
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

  if (dim === "key" && orderBy === "total" && !tagsetMask && !identityMask) {
    // Keys: totals alone pick the contenders (a small, cache-resident table), then their counters
    // come from their posting lists.
    const scratch: Scratch = {
      acc: new Uint32Array(groups),
      seen: new Uint32Array(0),
      touched: new Uint32Array(0),
      nt: 0,
      epoch: 1,
      keyMask,
      tagsetMask: null,
      identityMask: null,
      add: null
    }
    const count = compile({ ...base, counting: "totals" }) as RangeScan
    for (const run of runs) {
      const [a, b] = run.rows(lo, hi)
      count(run.chunks, a, b, null, scratch)
    }
    const totals = scratch.acc
    const candidates: Array<number> = []
    for (let g = 0; g < groups; g++) if (totals[g] !== 0) candidates.push(g)
    rows.groups = candidates.length
    const chosen = contenders(candidates, (g) => totals[g]!, query.limit, query.order)
    const counts = new Float64Array(9)
    const [a, b] = partition.main.rows(lo, hi)
    const lateScan = compile({
      ...base,
      keyFilter: true,
      group: "none",
      requireIdentity: false,
      counting: "outcomes"
    }) as RangeScan
    const lateScratch: Scratch = {
      acc: new Uint32Array(9),
      seen: new Uint32Array(0),
      touched: new Uint32Array(0),
      nt: 0,
      epoch: 1,
      keyMask: null,
      tagsetMask: null,
      identityMask: null,
      add: null
    }
    for (const key of chosen) {
      counts.fill(0)
      countKey(partition.main, key, a, b, counts)
      if (context.late.length > 0) {
        lateScratch.keyMask = new Uint8Array(groups)
        lateScratch.keyMask[key] = 1
        lateScratch.acc.fill(0)
        const [la, lb] = context.late.rows(lo, hi)
        lateScan(context.late.chunks, la, lb, null, lateScratch)
        for (let o = 0; o < 9; o++) counts[o]! += lateScratch.acc[o]!
      }
      rows.push(undefined, key, 0, 0, counts, 0)
    }
    return rows.build(query, partition)
  }

  // Other dimensions (and other orders): every group's counters, rows only for the contenders.
  const scratch: Scratch = {
    acc: new Uint32Array(groups * 9),
    seen: new Uint32Array(0),
    touched: new Uint32Array(0),
    nt: 0,
    epoch: 1,
    keyMask,
    tagsetMask,
    identityMask,
    add: null
  }
  const count = compile({ ...base, counting: "outcomes" }) as RangeScan
  for (const run of runs) {
    const [a, b] = run.rows(lo, hi)
    count(run.chunks, a, b, null, scratch)
  }
  const acc = scratch.acc
  const candidates: Array<number> = []
  for (let g = 0; g < groups; g++) {
    const at = g * 9
    if (
      acc[at]! + acc[at + 1]! + acc[at + 2]! + acc[at + 3]! + acc[at + 4]! + acc[at + 5]! + acc[at + 6]! +
          acc[at + 7]! + acc[at + 8]! !== 0
    ) {
      candidates.push(g)
    }
  }
  rows.groups = candidates.length
  for (const g of contenders(candidates, (g) => valueOf(orderBy, acc, g * 9), query.limit, query.order)) {
    rows.push(undefined, dim === "key" ? g : 0, dim === "identity" ? g : 0, dim === "tagset" ? g : 0, acc, g * 9)
  }
  return rows.build(query, partition)
}

/** The general path: each bucket's row slice (or the filtered keys' postings) into a group table. */
const scan = (context: Context): AggregationResult => {
  const { dims, identityMask, keyCodes, keyMask, late, partition, plan, query, runs, tagsetMask } = context
  const main = partition.main
  const cardinality = {
    key: partition.keyIds.length,
    identity: partition.identities.length,
    tagset: partition.tagsets.length
  }
  const group: Shape["group"] = dims.length === 0
    ? "none"
    : dims.length === 1 && cardinality[dims[0]!] <= DENSE_GROUPS_MAX
    ? dims[0]!
    : "map"
  const groups = group === "none" ? 1 : group === "map" ? 0 : cardinality[group]
  const track = plan.length > 1 && group !== "none" && group !== "map"
  // Tag sets grouped alone are split into single tags here, on integer codes.
  const perTag = group === "tagset" && query.groupByTag === "tag"
  const rows = new Rows(query.maxRows, perTag)
  const tagAcc = perTag ? new Float64Array(partition.tagNames.length * 9) : undefined
  const scratch: Scratch = {
    acc: new Uint32Array(Math.max(1, groups) * 9),
    seen: new Uint32Array(track ? groups : 0),
    touched: new Uint32Array(track ? groups : 0),
    nt: 0,
    epoch: 1,
    keyMask,
    tagsetMask,
    identityMask,
    add: null
  }

  // Composite groups: a map from the combined codes to a slot with nine counters.
  let slots: Map<number | string, number> | undefined
  let slotCodes: Array<number> = []
  let slotCounts = new Float64Array(0)
  if (group === "map") {
    slots = new Map()
    slotCounts = new Float64Array(64 * 9)
    const nI = cardinality.identity
    const nT = cardinality.tagset
    const numeric = cardinality.key * nI * nT < Number.MAX_SAFE_INTEGER
    const useKey = query.groupByKey
    const useIdentity = query.groupByIdentity
    const useTagset = query.groupByTag !== undefined
    const map = slots
    scratch.add = (key, identity, tagset, outcome) => {
      const k = useKey ? key : 0
      const i = useIdentity ? identity : 0
      const t = useTagset ? tagset : 0
      const id = numeric ? (k * nI + i) * nT + t : `${k},${i},${t}`
      let slot = map.get(id)
      if (slot === undefined) {
        slot = map.size
        if (rows.size + slot >= query.maxRows) throw new TooManyRows()
        map.set(id, slot)
        slotCodes.push(k, i, t)
        if ((slot + 1) * 9 > slotCounts.length) {
          const grown = new Float64Array(slotCounts.length * 2)
          grown.set(slotCounts)
          slotCounts = grown
        }
      }
      slotCounts[slot * 9 + outcome]!++
    }
  }

  const base = {
    keyFilter: keyMask !== null,
    tagFilter: tagsetMask !== null,
    identityFilter: identityMask !== null,
    requireIdentity: query.groupByIdentity,
    group,
    track,
    counting: "outcomes"
  } as const
  const scanRange = compile({ ...base, source: "range" }) as RangeScan
  const scanPostings = compile({ ...base, source: "postings" }) as PostingScan

  // Key indexes pay when the filtered keys hold well under the window's rows. Their entries are
  // gathered as `row * 16 + outcome`, so rows must stay below 2^28.
  let usePostings = false
  if (keyMask !== null && main.length < 2 ** 28) {
    const [a, b] = main.rows(context.lo, context.hi)
    usePostings = keyRowsEstimate(main, keyCodes, a, b) * 4 < b - a
  }
  const buffer = new U32List(1024)

  const harvest = (time: number | undefined) => {
    const acc = scratch.acc
    if (group === "map") {
      for (let slot = 0; slot < slots!.size; slot++) {
        rows.push(time, slotCodes[slot * 3]!, slotCodes[slot * 3 + 1]!, slotCodes[slot * 3 + 2]!, slotCounts, slot * 9)
      }
      slots!.clear()
      slotCodes = []
      slotCounts.fill(0)
      return
    }
    const emit = (g: number) => {
      const at = g * 9
      if (
        acc[at]! + acc[at + 1]! + acc[at + 2]! + acc[at + 3]! + acc[at + 4]! + acc[at + 5]! + acc[at + 6]! +
            acc[at + 7]! + acc[at + 8]! === 0
      ) return
      if (tagAcc !== undefined) {
        const tags = partition.tagsetTags[g]!
        for (let t = 0; t < tags.length; t++) {
          const to = tags[t]! * 9
          for (let o = 0; o < 9; o++) tagAcc[to + o]! += acc[at + o]!
        }
      } else {
        rows.push(time, group === "key" ? g : 0, group === "identity" ? g : 0, group === "tagset" ? g : 0, acc, at)
      }
      acc.fill(0, at, at + 9)
    }
    if (track) {
      for (let t = 0; t < scratch.nt; t++) emit(scratch.touched[t]!)
      scratch.nt = 0
      scratch.epoch++
    } else {
      for (let g = 0; g < groups; g++) emit(g)
    }
    if (tagAcc !== undefined) {
      for (let tag = 0; tag < partition.tagNames.length; tag++) {
        const at = tag * 9
        let any = false
        for (let o = 0; o < 9; o++) any ||= tagAcc[at + o] !== 0
        if (any) rows.push(time, 0, 0, tag, tagAcc, at)
      }
      tagAcc.fill(0)
    }
  }

  for (const bucket of plan) {
    if (usePostings) {
      const [a, b] = main.rows(bucket.fromHour, bucket.toHour)
      buffer.length = 0
      gather(main, keyCodes, a, b, buffer, (from, to) => scanRange(main.chunks, from, to, null, scratch))
      scanPostings(main.chunks, 0, buffer.length, buffer.data, scratch)
      if (late.length > 0) {
        const [la, lb] = late.rows(bucket.fromHour, bucket.toHour)
        scanRange(late.chunks, la, lb, null, scratch)
      }
    } else {
      for (const run of runs) {
        const [a, b] = run.rows(bucket.fromHour, bucket.toHour)
        scanRange(run.chunks, a, b, null, scratch)
      }
    }
    harvest(bucket.time)
  }
  return rows.build(query, partition)
}
