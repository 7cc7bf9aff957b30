/**
 * Answers an aggregation query over one partition.
 *
 * Plan: resolve the filters to masks over the dictionaries; split the window into time buckets
 * (one bucket without a time unit); for each bucket find its row slice in the main and late runs
 * by binary search on the hour index, count the slice into a group table and harvest the groups.
 * Unfiltered, ungrouped series never touch rows: they sum the per-hour counters of the index.
 * A key filter reads the keys' posting lists instead of the slice when that is fewer rows.
 *
 * The inner loops are generated per query shape (filters × grouping × row source) with
 * `new Function`, so the hot loop has no per-row branching on the shape; shapes are cached.
 */
import type { AggregationQuery, AggregationResult } from "@keymeter/core/Aggregation"
import * as Time from "@keymeter/core/Time"
import type { Partition } from "./Partition.js"
import type { Chunk } from "./Run.js"
import { CHUNK_BITS, CHUNK_MASK, lowerBound, U32List } from "./Run.js"

/** Thrown inside a scan when the answer outgrows `maxRows`; caught by {@link aggregate}. */
export class TooManyRows {}

/** Group tables larger than this many groups use a hash map instead of a dense array. */
const DENSE_GROUPS_MAX = 1 << 20

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
    body.push("acc[g * 9 + O[i]]++;")
  }
  const code = body.join(" ")
  const columns = [
    code.includes("K[i]") ? "const K = ch.key;" : "",
    code.includes("I[i]") ? "const I = ch.identity;" : "",
    code.includes("T[i]") ? "const T = ch.tagset;" : "",
    "const O = ch.outcome;"
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
         const r = P[p]; const ch = chunks[r >>> ${CHUNK_BITS}]; const i = r & ${CHUNK_MASK}; ${columns}
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

const buckets = (query: AggregationQuery, lo: number, hi: number): Array<Bucket> => {
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
 * answered per tag set (`tags`); core splits sets into single tags when the query asks for `tag`.
 */
class Rows {
  size = 0
  private readonly time: Array<number> = []
  private readonly key = new U32List(64)
  private readonly identity = new U32List(64)
  private readonly tagset = new U32List(64)
  private counts = new Float64Array(64 * 9)

  constructor(private readonly maxRows: number) {}

  push(time: number | undefined, key: number, identity: number, tagset: number, source: ArrayLike<number>, at: number) {
    const row = this.size
    if (row >= this.maxRows) throw new TooManyRows()
    this.size++
    if (time !== undefined) this.time.push(time)
    this.key.push(key)
    this.identity.push(identity)
    this.tagset.push(tagset)
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
    return {
      size: n,
      counts: this.counts.subarray(0, n * 9),
      time: query.timeUnit !== undefined ? Float64Array.from(this.time) : undefined,
      keyId: query.groupByKey ? Array.from(codes(this.key), (c) => partition!.keyIds[c]!) : undefined,
      identity: query.groupByIdentity ? Array.from(codes(this.identity), (c) => partition!.identities[c]!) : undefined,
      tags: query.groupByTag !== undefined ? Array.from(codes(this.tagset), (c) => partition!.tagsets[c]!) : undefined
    }
  }
}

const empty = (query: AggregationQuery): AggregationResult => new Rows(0).build(query, undefined)

/** Answers `query` from `partition` (undefined: the api holds no verifications). */
export const aggregate = (partition: Partition | undefined, query: AggregationQuery): AggregationResult => {
  if (partition === undefined || partition.size === 0) return empty(query)
  const late = partition.lateRun()
  const main = partition.main
  const runs = late.length > 0 ? [main, late] : [main]

  // Filters as masks over the dictionaries. A filter naming nothing stored matches nothing.
  let keyMask: Uint8Array | null = null
  let keyCodes: Array<number> = []
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
  const firstHour = late.length > 0 ? Math.min(main.length > 0 ? main.firstHour : Infinity, late.firstHour) : main.firstHour
  const lastHour = Math.max(main.lastHour, late.lastHour)
  const lo = Math.max(query.start === undefined ? firstHour : query.start / Time.HOUR, firstHour)
  const hi = Math.min(query.end / Time.HOUR, lastHour)
  if (lo > hi) return empty(query)
  const plan = buckets(query, lo, hi)

  const dims: Array<Dim> = []
  if (query.groupByKey) dims.push("key")
  if (query.groupByIdentity) dims.push("identity")
  if (query.groupByTag !== undefined) dims.push("tagset")
  const rows = new Rows(query.maxRows)
  const push = rows.push.bind(rows)

  // Unfiltered and ungrouped: the hour index's counters answer it.
  if (dims.length === 0 && !keyMask && !tagsetMask && !identityMask) {
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
      if (bucket.time === undefined || sum.some((v) => v !== 0)) push(bucket.time, 0, 0, 0, sum, 0)
    }
    return rows.build(query, partition)
  }

  const cardinality = { key: partition.keyIds.length, identity: partition.identities.length, tagset: partition.tagsets.length }
  const group: Shape["group"] = dims.length === 0
    ? "none"
    : dims.length === 1 && cardinality[dims[0]!] <= DENSE_GROUPS_MAX
    ? dims[0]!
    : "map"
  const groups = group === "none" ? 1 : group === "map" ? 0 : cardinality[group]
  const track = plan.length > 1 && group !== "none" && group !== "map"
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
    track
  }
  const scanRange = compile({ ...base, source: "range" }) as RangeScan
  const scanPostings = compile({ ...base, source: "postings" }) as PostingScan

  // Posting lists pay when the filtered keys hold well under the window's rows.
  let usePostings = false
  const cursors: Array<number> = []
  if (keyMask !== null) {
    const [a, b] = main.rows(lo, hi)
    let rows = 0
    for (const code of keyCodes) {
      const posting = partition.postings[code]
      if (posting === undefined) continue
      const pa = lowerBound(posting.data, posting.length, a)
      rows += lowerBound(posting.data, posting.length, b, pa) - pa
      cursors.push(pa)
    }
    usePostings = rows * 4 < b - a
    keyCodes = keyCodes.filter((code) => partition.postings[code] !== undefined)
  }

  const harvest = (time: number | undefined) => {
    const acc = scratch.acc
    if (group === "map") {
      for (let slot = 0; slot < slots!.size; slot++) {
        push(time, slotCodes[slot * 3]!, slotCodes[slot * 3 + 1]!, slotCodes[slot * 3 + 2]!, slotCounts, slot * 9)
      }
      slots!.clear()
      slotCodes = []
      slotCounts.fill(0)
      return
    }
    const emit = (g: number) => {
      const at = g * 9
      if (acc[at]! + acc[at + 1]! + acc[at + 2]! + acc[at + 3]! + acc[at + 4]! + acc[at + 5]! + acc[at + 6]! +
          acc[at + 7]! + acc[at + 8]! === 0) return
      push(time, group === "key" ? g : 0, group === "identity" ? g : 0, group === "tagset" ? g : 0, acc, at)
      acc.fill(0, at, at + 9)
    }
    if (track) {
      for (let t = 0; t < scratch.nt; t++) emit(scratch.touched[t]!)
      scratch.nt = 0
      scratch.epoch++
    } else {
      for (let g = 0; g < groups; g++) emit(g)
    }
  }

  for (const bucket of plan) {
    if (usePostings) {
      const [a, b] = main.rows(bucket.fromHour, bucket.toHour)
      for (let k = 0; k < keyCodes.length; k++) {
        const posting = partition.postings[keyCodes[k]!]!
        const pa = lowerBound(posting.data, posting.length, a, cursors[k]!)
        const pb = lowerBound(posting.data, posting.length, b, pa)
        scanPostings(main.chunks, pa, pb, posting.data, scratch)
        cursors[k] = pb
      }
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
