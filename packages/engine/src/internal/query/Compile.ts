/**
 * Scan loops generated per query shape (filters × grouping × row source) with `new Function`, so
 * the hot loop does not branch on the shape; shapes are cached. Also the scratch state the loops
 * share with the paths that harvest it, and the counters' helpers.
 */
import { OUTCOMES } from "@keymeter/core/Aggregation"
import { OutcomeIndex } from "@keymeter/core/Verification"
import type { Chunk } from "../Run.js"
import { CHUNK_BITS, CHUNK_MASK } from "../Run.js"
import type { GroupTable } from "./GroupTable.js"

/** Group tables larger than this many groups use a hash map instead of a dense array. */
export const DENSE_GROUPS_MAX = 1 << 20

/** Top-N pushdown applies up to this `limit`. */
export const TOP_N_MAX = 1000

export type Dim = "key" | "identity" | "tagset"

/** State shared between the generated loops and the harvest. */
export interface Scratch {
  /** Counters of the dense group table; a bucket holds fewer than 2^32 rows (row ids are u32). */
  acc: Uint32Array
  /** Spent credits beside each counter of `acc` (shapes with `credits`). */
  credits: Float64Array | null
  seen: Uint32Array
  touched: Uint32Array
  nt: number
  epoch: number
  keyMask: Uint8Array | null
  tagsetMask: Uint8Array | null
  identityMask: Uint8Array | null
  /** Composite groups (`group: "map"`) when not dense: a hash table. */
  table: GroupTable | null
  /** Dense composite groups: `g = key * keyStride + identity * identityStride + tag or tag set`. */
  keyStride: number
  identityStride: number
  /** Tags of each tag set, for composite groups by tag: `tagList[tagStart[t] .. tagStart[t + 1]]`. */
  tagStart: Uint32Array | null
  tagList: Uint32Array | null
}

export type RangeScan = (chunks: Array<Chunk>, from: number, to: number, rows: null, s: Scratch) => void
export type PostingScan = (chunks: Array<Chunk>, from: number, to: number, rows: Uint32Array, s: Scratch) => void

export interface Shape {
  readonly keyFilter: boolean
  readonly tagFilter: boolean
  readonly identityFilter: boolean
  readonly requireIdentity: boolean
  /**
   * `none`: one group; a dim: dense by that code; `map`: composite groups of the `mapped` dims,
   * `dense` in `acc` (tracked) or in the hash table `s.table`, tag sets split into single tags
   * when `perTag`.
   */
  readonly group: "none" | Dim | "map"
  readonly mapped?: { readonly dims: ReadonlyArray<Dim>; readonly dense: boolean; readonly perTag: boolean } | undefined
  readonly track: boolean
  /** `totals`: count rows per group (in `acc[g]`), not per outcome. */
  readonly counting: "outcomes" | "totals"
  /** Sum each row's spent credits beside its counter (`s.credits`, or the table's), per outcome. */
  readonly credits?: boolean | undefined
  readonly source: "range" | "postings"
}

const cache = new Map<number, RangeScan | PostingScan>()

const GROUPS: ReadonlyArray<Shape["group"]> = ["none", "key", "identity", "tagset", "map"]
const DIMS: ReadonlyArray<Dim> = ["key", "identity", "tagset"]

/**
 * The cache key of a shape: its fields packed into one number, absent ones at their defaults, so
 * that the same loop asked from two paths (objects spread in another order, `credits` left out) is
 * compiled, and warmed, once. Mapped dims count as a set: the loops only ask whether one is there.
 * A string of the fields took ~4 us of a small query's ~170.
 */
const keyOf = (shape: Shape): number => {
  let key = 0
  let bit = 1
  const flag = (on: boolean) => {
    if (on) key += bit
    bit *= 2
  }
  flag(shape.keyFilter)
  flag(shape.tagFilter)
  flag(shape.identityFilter)
  flag(shape.requireIdentity)
  flag(shape.track)
  flag(shape.counting === "totals")
  flag(shape.credits === true)
  flag(shape.source === "postings")
  const mapped = shape.group === "map" ? shape.mapped : undefined
  flag(mapped !== undefined)
  for (const dim of DIMS) flag(mapped !== undefined && mapped.dims.includes(dim))
  flag(mapped !== undefined && mapped.dense)
  flag(mapped !== undefined && mapped.perTag)
  return key + bit * GROUPS.indexOf(shape.group)
}

export const compile = (shape: Shape): RangeScan | PostingScan => {
  const id = keyOf(shape)
  const cached = cache.get(id)
  if (cached !== undefined) return cached
  const body: Array<string> = []
  if (shape.keyFilter && shape.source === "range") body.push("if (keyMask[K[i]] === 0) continue;")
  if (shape.tagFilter) body.push("if (tagsetMask[T[i]] === 0) continue;")
  if (shape.identityFilter) body.push("if (identityMask[I[i]] === 0) continue;")
  if (shape.requireIdentity) body.push("if (I[i] === 0) continue;")
  if (shape.group === "map") {
    const { dense, dims, perTag } = shape.mapped!
    const tag = perTag ? "TL[j]" : "T[i]"
    // The statements counting into one group: once a row, or once for each of its tag set's tags.
    const counting: Array<string> = []
    if (dense) {
      const terms = [
        ...(dims.includes("key") ? ["K[i] * keyStride"] : []),
        ...(dims.includes("identity") ? ["I[i] * identityStride"] : []),
        ...(dims.includes("tagset") ? [tag] : [])
      ]
      counting.push(`const g = ${terms.join(" + ")};`)
      if (shape.track) counting.push(MARK)
      counting.push(count(shape, "g"))
    } else {
      const code = (dim: Dim, column: string) => dims.includes(dim) ? column : "0"
      const credits = shape.credits === true ? ", C[i]" : ""
      counting.push(
        `table.add(${code("key", "K[i]")}, ${code("identity", "I[i]")}, ${code("tagset", tag)}, O[i]${credits});`
      )
    }
    body.push(
      perTag
        ? `for (let j = tagStart[T[i]], e = tagStart[T[i] + 1]; j < e; j++) { ${counting.join(" ")} }`
        : counting.join(" ")
    )
  } else {
    const column = { none: "0", key: "K[i]", identity: "I[i]", tagset: "T[i]" }[shape.group]
    body.push(`const g = ${column};`)
    if (shape.track) body.push(MARK)
    body.push(shape.counting === "totals" ? "acc[g]++;" : count(shape, "g"))
  }
  const code = body.join(" ")
  const columns = [
    code.includes("K[i]") ? "const K = ch.key;" : "",
    code.includes("I[i]") ? "const I = ch.identity;" : "",
    code.includes("T[i]") ? "const T = ch.tagset;" : "",
    code.includes("O[i]") ? "const O = ch.outcome;" : "",
    code.includes("C[i]") ? "const C = ch.credits;" : ""
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
    const acc = s.acc, credits = s.credits, seen = s.seen, touched = s.touched, epoch = s.epoch, table = s.table;
    const keyStride = s.keyStride, identityStride = s.identityStride, tagStart = s.tagStart, TL = s.tagList;
    const keyMask = s.keyMask, tagsetMask = s.tagsetMask, identityMask = s.identityMask;
    let nt = s.nt;
    ${loop}
    s.nt = nt;`
  const fn = new Function("chunks", "a", "b", "P", "s", source) as RangeScan | PostingScan
  cache.set(id, fn)
  return fn
}

/** The statement marking group `g` as counted in this bucket, the first time (tracked shapes). */
const MARK = "if (seen[g] !== epoch) { seen[g] = epoch; touched[nt++] = g; }"

/** The statement counting a row into group `g` (and its credits, when the shape sums them). */
const count = (shape: Shape, g: string): string =>
  shape.credits === true
    ? `{ const at = ${g} * ${OUTCOMES} + O[i]; acc[at]++; credits[at] += C[i]; }`
    : `acc[${g} * ${OUTCOMES} + O[i]]++;`

/**
 * The marks and list of tracked groups (`Scratch.seen`, `touched`), and the epoch to count from:
 * every mark in `seen` is below it, so `seen` needs no zeroing.
 */
export interface Tracking {
  readonly seen: Uint32Array
  readonly touched: Uint32Array
  readonly epoch: number
}

/** No group tracked. */
const UNTRACKED: Tracking = { seen: new Uint32Array(0), touched: new Uint32Array(0), epoch: 1 }

/** Scratch over the counters `acc`, filtered by the masks given, tracking groups in `tracking`. */
export const makeScratch = (
  acc: Uint32Array,
  masks: {
    readonly keyMask?: Uint8Array | null
    readonly tagsetMask?: Uint8Array | null
    readonly identityMask?: Uint8Array | null
  } = {},
  tracking: Tracking = UNTRACKED,
  credits: Float64Array | null = null
): Scratch => ({
  acc,
  credits,
  seen: tracking.seen,
  touched: tracking.touched,
  nt: 0,
  epoch: tracking.epoch,
  keyMask: masks.keyMask ?? null,
  tagsetMask: masks.tagsetMask ?? null,
  identityMask: masks.identityMask ?? null,
  table: null,
  keyStride: 0,
  identityStride: 0,
  tagStart: null,
  tagList: null
})

/** The sum of the nine counters at `counts[at ..]`. */
export const total = (counts: ArrayLike<number>, at: number): number => {
  let sum = 0
  for (let o = 0; o < OUTCOMES; o++) sum += counts[at + o]!
  return sum
}

/**
 * The value a query orders by (`total`, or one outcome's count) of the nine counters at
 * `counts[at ..]`, as core's ordering computes it.
 */
export const counterValue = (orderBy: string): (counts: ArrayLike<number>, at: number) => number => {
  if (orderBy === "total") return total
  const outcome = OutcomeIndex.get(orderBy)!
  return (counts, at) => counts[at + outcome]!
}

/**
 * Adds `from[0 .. length)` into `to`. The loops that sum day aggregates live here, in a function of
 * their own: inline in a path of many branches they ran interpreted (ten times slower) whenever V8
 * threw that path's code away on meeting a branch for the first time.
 */
export const addInto = (to: Uint32Array | Float64Array, from: Uint32Array, length: number): void => {
  for (let i = 0; i < length; i++) to[i]! += from[i]!
}

/**
 * Zeroes the nine counters at `counts[at ..]`. Written out: `fill(0, at, at + 9)` is a builtin
 * call of ~50 ns, and harvests zero tens of thousands of groups one at a time.
 */
export const clearCounters = (counts: Uint32Array | Float64Array, at: number): void => {
  counts[at] = 0
  counts[at + 1] = 0
  counts[at + 2] = 0
  counts[at + 3] = 0
  counts[at + 4] = 0
  counts[at + 5] = 0
  counts[at + 6] = 0
  counts[at + 7] = 0
  counts[at + 8] = 0
}

/**
 * Copies the nine counters at `from[at ..]` to `to[into ..]`. Written out: the loop took half as
 * long again in a row's push (30,000 rows pushed in 1.57 ms against 1.05).
 */
export const copyCounters = (to: Float64Array, into: number, from: ArrayLike<number>, at: number): void => {
  to[into] = from[at]!
  to[into + 1] = from[at + 1]!
  to[into + 2] = from[at + 2]!
  to[into + 3] = from[at + 3]!
  to[into + 4] = from[at + 4]!
  to[into + 5] = from[at + 5]!
  to[into + 6] = from[at + 6]!
  to[into + 7] = from[at + 7]!
  to[into + 8] = from[at + 8]!
}

/** True when any of the nine counters at `counts[at ..]` is not zero. */
export const any = (counts: ArrayLike<number>, at: number): boolean => {
  for (let o = 0; o < OUTCOMES; o++) if (counts[at + o] !== 0) return true
  return false
}
