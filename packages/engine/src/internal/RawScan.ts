/**
 * Raw rows for SQL analytics (`EventScan`): the rows of a scope's hours in each partition's main
 * and late runs, one batch per chunk they touch. Codes and counters are views of the chunk's
 * columns (no copy) with the partition's own dictionaries; only `time` (hour and offset) and
 * `latency` (µs to ms) are materialized. A chunk holding rows of an hour at an edge of the window
 * (a window that starts or ends inside an hour) is copied instead, with only the rows inside.
 */
import type { Dictionary, ScanScope, VerificationColumns } from "@keymeter/core/EventScan"
import type { Partition } from "./Partition.js"
import type { Chunk, Run } from "./Run.js"
import { CHUNK_BITS, CHUNK_MASK, CHUNK_SIZE } from "./Run.js"

const HOUR = 3_600_000

/** Zeros: the api codes of every batch (one api per partition). */
const ZEROS = new Uint8Array(CHUNK_SIZE)

/** A partition to scan, with its api id. */
export interface Scanned {
  readonly apiId: string
  readonly partition: Partition
}

/** Rows [a, b) of a run, with the rows [a, inFrom) and [inTo, b) that belong to edge hours. */
interface Range {
  readonly run: Run
  readonly a: number
  readonly b: number
  /** Rows before this are of the first hour, which the window holds in part (a when it holds it whole). */
  readonly inFrom: number
  /** Rows from this on are of the last hour, which the window holds in part (b when it holds it whole). */
  readonly inTo: number
  /** Rows of the range inside the window. */
  readonly rows: number
}

/** Whether row `i` of `chunk` is inside [from, to). */
const inside = (chunk: Chunk, i: number, from: number, to: number) => {
  const time = chunk.hour[i]! * HOUR + chunk.offset[i]!
  return time >= from && time < to
}

/** Rows of `run` in [a, b) inside [from, to), read one by one. */
const countInside = (run: Run, a: number, b: number, from: number, to: number): number => {
  let n = 0
  for (let r = a; r < b; r++) if (inside(run.chunks[r >>> CHUNK_BITS]!, r & CHUNK_MASK, from, to)) n++
  return n
}

/** The range of `run`'s rows in the window's hours, and how many of them are inside it. */
const rangeOf = (run: Run, from: number, to: number): Range | undefined => {
  const firstHour = Math.floor(from / HOUR)
  const lastHour = Math.floor((to - 1) / HOUR)
  const [a, b] = run.rows(firstHour, lastHour)
  if (a >= b) return undefined
  // A window that cuts an hour: that hour's rows are read one by one.
  const cutFirst = from !== firstHour * HOUR
  const cutLast = to !== (lastHour + 1) * HOUR
  const inFrom = cutFirst ? run.rows(firstHour, firstHour)[1] : a
  const inTo = Math.max(inFrom, cutLast ? run.rows(lastHour, lastHour)[0] : b)
  const rows = countInside(run, a, inFrom, from, to) + (inTo - inFrom) + countInside(run, inTo, b, from, to)
  return { run, a, b, inFrom, inTo, rows }
}

/** The dictionaries a partition's batches share, made once per scan. */
interface Dictionaries {
  readonly apiId: ReadonlyArray<string>
  readonly keyId: ReadonlyArray<string>
  readonly identityId: ReadonlyArray<string>
  readonly externalId: ReadonlyArray<string>
  readonly tags: ReadonlyArray<ReadonlyArray<string>>
  readonly region: ReadonlyArray<string>
}

const dictionary = <A>(codes: ArrayLike<number>, values: ReadonlyArray<A>): Dictionary<A> => ({ codes, values })

/** Rows [from, to) of `chunk` as a batch of views. */
const viewBatch = (chunk: Chunk, from: number, to: number, values: Dictionaries): VerificationColumns => {
  const n = to - from
  const time = new Float64Array(n)
  const latency = new Float64Array(n)
  const hour = chunk.hour
  const offset = chunk.offset
  const micros = chunk.latency
  for (let i = 0; i < n; i++) {
    time[i] = hour[from + i]! * HOUR + offset[from + i]!
    latency[i] = micros[from + i]! / 1000
  }
  const identity = chunk.identity.subarray(from, to)
  return {
    length: n,
    time,
    apiId: dictionary(ZEROS.subarray(0, n), values.apiId),
    keyId: dictionary(chunk.key.subarray(from, to), values.keyId),
    identityId: dictionary(identity, values.identityId),
    externalId: dictionary(identity, values.externalId),
    outcome: chunk.outcome.subarray(from, to),
    tags: dictionary(chunk.tagset.subarray(from, to), values.tags),
    spentCredits: chunk.credits.subarray(from, to),
    latency,
    region: dictionary(chunk.region.subarray(from, to), values.region)
  }
}

/** The rows of [from, to) of `chunk` inside the window [start, end), copied. */
const copyBatch = (
  chunk: Chunk,
  from: number,
  to: number,
  start: number,
  end: number,
  values: Dictionaries
): VerificationColumns => {
  let n = 0
  for (let i = from; i < to; i++) if (inside(chunk, i, start, end)) n++
  const time = new Float64Array(n)
  const key = new Uint32Array(n)
  const identity = new Uint32Array(n)
  const outcome = new Uint8Array(n)
  const tagset = new Uint32Array(n)
  const credits = new Uint32Array(n)
  const latency = new Float64Array(n)
  const region = new Uint32Array(n)
  let k = 0
  for (let i = from; i < to; i++) {
    const t = chunk.hour[i]! * HOUR + chunk.offset[i]!
    if (t < start || t >= end) continue
    time[k] = t
    key[k] = chunk.key[i]!
    identity[k] = chunk.identity[i]!
    outcome[k] = chunk.outcome[i]!
    tagset[k] = chunk.tagset[i]!
    credits[k] = chunk.credits[i]!
    latency[k] = chunk.latency[i]! / 1000
    region[k] = chunk.region[i]!
    k++
  }
  return {
    length: n,
    time,
    apiId: dictionary(ZEROS.subarray(0, n), values.apiId),
    keyId: dictionary(key, values.keyId),
    identityId: dictionary(identity, values.identityId),
    externalId: dictionary(identity, values.externalId),
    outcome,
    tags: dictionary(tagset, values.tags),
    spentCredits: credits,
    latency,
    region: dictionary(region, values.region)
  }
}

/**
 * The scope's rows of `partitions` as batches, or undefined when they are more than
 * `scope.maxRows` (counted before any batch is made).
 */
export const scan = (
  partitions: ReadonlyArray<Scanned>,
  scope: ScanScope
): Array<VerificationColumns> | undefined => {
  const out: Array<VerificationColumns> = []
  // Times are whole ms: an inclusive bound rounds up, as does the exclusive one.
  const from = Math.max(0, Math.ceil(scope.from))
  const to = Math.min(Number.MAX_SAFE_INTEGER, Math.ceil(scope.to))
  if (!(from < to)) return out
  const ranges: Array<{ readonly scanned: Scanned; readonly ranges: ReadonlyArray<Range> }> = []
  let total = 0
  for (const scanned of partitions) {
    const found: Array<Range> = []
    for (const run of [scanned.partition.main, scanned.partition.lateRun()]) {
      const range = rangeOf(run, from, to)
      if (range === undefined || range.rows === 0) continue
      total += range.rows
      if (total > scope.maxRows) return undefined
      found.push(range)
    }
    if (found.length > 0) ranges.push({ scanned, ranges: found })
  }
  for (const { ranges: found, scanned: { apiId, partition } } of ranges) {
    const values: Dictionaries = {
      apiId: [apiId],
      keyId: partition.keyIds,
      identityId: partition.identityIds,
      externalId: partition.externalIds,
      tags: partition.tagsets,
      region: partition.regionNames
    }
    for (const { a, b, inFrom, inTo, run } of found) {
      for (let c = a >>> CHUNK_BITS; c <= (b - 1) >>> CHUNK_BITS; c++) {
        const base = c * CHUNK_SIZE
        const lo = Math.max(a, base)
        const hi = Math.min(b, base + CHUNK_SIZE)
        const chunk = run.chunks[c]!
        // Rows of an edge hour in this chunk: only those inside, copied.
        const batch = lo < inFrom || hi > inTo
          ? copyBatch(chunk, lo - base, hi - base, from, to, values)
          : viewBatch(chunk, lo - base, hi - base, values)
        if (batch.length > 0) out.push(batch)
      }
    }
  }
  return out
}
