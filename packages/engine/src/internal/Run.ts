/**
 * A run of verification rows in columns, kept in chunks of 65,536 rows so that growing never copies
 * or doubles memory. Each row is 31 bytes: hour (since the epoch), key, identity and tag-set codes,
 * outcome (17 bytes, what counting reads), then what only raw scans read: ms within the hour, spent
 * credits, latency in µs and region code (2 bytes, 4 once a partition has more than 65,535
 * regions), unless the engine keeps no details (see {@link Layout}). A run is sorted by hour (the main run is appended in order; the late run is sorted on
 * demand) and has an hour index: for every distinct hour, its first row and its nine counters.
 */
import { OUTCOMES } from "@keymeter/core/Aggregation"

export const CHUNK_BITS = 16
export const CHUNK_SIZE = 1 << CHUNK_BITS
export const CHUNK_MASK = CHUNK_SIZE - 1

/** The rows of each key in a full chunk (built by `KeyIndex.build`). */
export interface KeyIndex {
  /** Key codes present in the chunk, ascending. */
  readonly keys: Uint32Array
  /** `entries[starts[i] .. starts[i + 1])` are the rows of `keys[i]`. */
  readonly starts: Uint32Array
  readonly entries: Uint32Array
}

/** Largest value of a Uint32 column: spent credits and latency are clamped to it. */
export const MAX_U32 = 4_294_967_295

/** Region codes a 16-bit column holds: past them, a partition's region columns are widened. */
export const MAX_NARROW_REGION = 65_535

/** How the chunks of a partition's runs are laid out (shared by them, so a change reaches all). */
export class Layout {
  /** Whether region codes take 32 bits (a partition with more than 65,535 regions). */
  wideRegions = false
  /** `details`: whether rows keep their offset, credits, latency and region (for raw scans). */
  constructor(readonly details: boolean) {}
}

/** The detail columns of an engine that keeps none: writes to them do nothing. */
const NO_COLUMN = new Uint32Array(0)

/** Columns of up to {@link CHUNK_SIZE} rows. */
export class Chunk {
  /** Rows per key, built once the chunk is full (main run only). */
  keyIndex: KeyIndex | undefined = undefined
  readonly hour = new Uint32Array(CHUNK_SIZE)
  readonly key = new Uint32Array(CHUNK_SIZE)
  /** 0: no identity; otherwise the identity's code. */
  readonly identity = new Uint32Array(CHUNK_SIZE)
  /** 0: the empty tag set. */
  readonly tagset = new Uint32Array(CHUNK_SIZE)
  readonly outcome = new Uint8Array(CHUNK_SIZE)
  /** Ms since the start of the row's hour. */
  readonly offset: Uint32Array
  readonly credits: Uint32Array
  /** Latency in µs. */
  readonly latency: Uint32Array
  /** 0: no region; otherwise the region's code. */
  region: Uint16Array | Uint32Array
  constructor(layout: Layout) {
    const details = layout.details
    this.offset = details ? new Uint32Array(CHUNK_SIZE) : NO_COLUMN
    this.credits = details ? new Uint32Array(CHUNK_SIZE) : NO_COLUMN
    this.latency = details ? new Uint32Array(CHUNK_SIZE) : NO_COLUMN
    this.region = !details ? NO_COLUMN : layout.wideRegions ? new Uint32Array(CHUNK_SIZE) : new Uint16Array(CHUNK_SIZE)
  }

  /** Bytes of the columns. */
  get bytes(): number {
    return CHUNK_SIZE * 17 + this.offset.byteLength + this.credits.byteLength + this.latency.byteLength +
      this.region.byteLength
  }
}

/** A growable Uint32Array. */
export class U32List {
  data: Uint32Array
  length = 0
  constructor(capacity = 4) {
    this.data = new Uint32Array(capacity)
  }
  push(value: number): void {
    if (this.length === this.data.length) {
      const grown = new Uint32Array(this.data.length * 2)
      grown.set(this.data)
      this.data = grown
    }
    this.data[this.length++] = value
  }
}

/** A growable Uint8Array. */
export class U8List {
  data: Uint8Array
  length = 0
  constructor(capacity = 4) {
    this.data = new Uint8Array(capacity)
  }
  push(value: number): void {
    if (this.length === this.data.length) {
      const grown = new Uint8Array(this.data.length * 2)
      grown.set(this.data)
      this.data = grown
    }
    this.data[this.length++] = value
  }
}

/** First index in `values[0 .. length)` (ascending) holding a value >= `target`. */
export const lowerBound = (values: ArrayLike<number>, length: number, target: number, from = 0): number => {
  let lo = from
  let hi = length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (values[mid]! < target) lo = mid + 1
    else hi = mid
  }
  return lo
}

export class Run {
  chunks: Array<Chunk> = []
  length = 0
  constructor(private readonly layout: Layout = new Layout(true)) {}
  /** Distinct hours, ascending; `indexStart[j]` is the first row of `indexHour[j]`. */
  indexHour = new U32List(64)
  indexStart = new U32List(64)
  /** Nine outcome counters per indexed hour. */
  indexCounts = new Float64Array(64 * OUTCOMES)

  /** Last hour in the run, or -1 when empty. */
  get lastHour(): number {
    return this.currentHour
  }

  get firstHour(): number {
    return this.indexHour.length === 0 ? -1 : this.indexHour.data[0]!
  }

  /**
   * Appends a row whose hour is >= the last hour (callers guarantee it) and returns its row number.
   * `offset` (ms in the hour), `credits` and `latency` (µs) are Uint32s, `region` a region code.
   */
  append(
    hour: number,
    key: number,
    identity: number,
    tagset: number,
    outcome: number,
    offset: number,
    credits: number,
    latency: number,
    region: number
  ): number {
    const row = this.length++
    const i = row & CHUNK_MASK
    if (i === 0) this.chunks.push(new Chunk(this.layout))
    const chunk = this.chunks[row >>> CHUNK_BITS]!
    chunk.hour[i] = hour
    chunk.key[i] = key
    chunk.identity[i] = identity
    chunk.tagset[i] = tagset
    chunk.outcome[i] = outcome
    chunk.offset[i] = offset
    chunk.credits[i] = credits
    chunk.latency[i] = latency
    chunk.region[i] = region
    if (hour !== this.currentHour) this.startHour(hour, row)
    this.indexCounts[this.currentCounts + outcome]!++
    return row
  }

  /**
   * Copies the region codes of the chunks held to 32-bit columns, once the layout says they take 32
   * bits (new chunks have them already).
   */
  widenRegions(): void {
    for (const chunk of this.chunks) {
      if (chunk.region instanceof Uint16Array) chunk.region = Uint32Array.from(chunk.region)
    }
  }

  /** Hour of the last index entry (-1 when none) and where its counters start. */
  private currentHour = -1
  private currentCounts = 0

  private startHour(hour: number, row: number): void {
    this.indexHour.push(hour)
    this.indexStart.push(row)
    const j = this.indexHour.length - 1
    if ((j + 1) * OUTCOMES > this.indexCounts.length) {
      const grown = new Float64Array(this.indexCounts.length * 2)
      grown.set(this.indexCounts)
      this.indexCounts = grown
    }
    this.currentHour = hour
    this.currentCounts = j * OUTCOMES
  }

  /**
   * Drops every row from `row` on. `row` must be where an indexed hour starts (or the length), so
   * the kept index entries keep exact counters.
   */
  truncate(row: number): void {
    const keep = lowerBound(this.indexStart.data, this.indexStart.length, row)
    if (keep < this.indexStart.length && this.indexStart.data[keep] !== row) {
      throw new Error("Run.truncate: row is not the start of an hour")
    }
    this.indexCounts.fill(0, keep * OUTCOMES, this.indexHour.length * OUTCOMES)
    this.indexHour.length = keep
    this.indexStart.length = keep
    this.currentHour = keep === 0 ? -1 : this.indexHour.data[keep - 1]!
    this.currentCounts = Math.max(0, keep - 1) * OUTCOMES
    this.length = row
    const chunks = Math.ceil(row / CHUNK_SIZE)
    if (this.chunks.length > chunks) this.chunks.length = chunks
    // A chunk cut in the middle is replaced by a copy of the rows it keeps (without the key index
    // of a full chunk): rows once written never change, so views of them (scans) stay true.
    const kept = row & CHUNK_MASK
    if (kept !== 0) {
      const cut = this.chunks[chunks - 1]!
      const copy = new Chunk(this.layout)
      copy.hour.set(cut.hour.subarray(0, kept))
      copy.key.set(cut.key.subarray(0, kept))
      copy.identity.set(cut.identity.subarray(0, kept))
      copy.tagset.set(cut.tagset.subarray(0, kept))
      copy.outcome.set(cut.outcome.subarray(0, kept))
      copy.offset.set(cut.offset.subarray(0, kept))
      copy.credits.set(cut.credits.subarray(0, kept))
      copy.latency.set(cut.latency.subarray(0, kept))
      copy.region.set(cut.region.subarray(0, kept))
      this.chunks[chunks - 1] = copy
    }
  }

  /** Row range [from, to) of the hours in [fromHour, toHour]. */
  rows(fromHour: number, toHour: number): [number, number] {
    const n = this.indexHour.length
    const hours = this.indexHour.data
    const a = lowerBound(hours, n, fromHour)
    const b = lowerBound(hours, n, toHour + 1, a)
    const starts = this.indexStart.data
    return [a < n ? starts[a]! : this.length, b < n ? starts[b]! : this.length]
  }

  /** Index entries [from, to) of the hours in [fromHour, toHour]. */
  indexRange(fromHour: number, toHour: number): [number, number] {
    const n = this.indexHour.length
    const a = lowerBound(this.indexHour.data, n, fromHour)
    return [a, lowerBound(this.indexHour.data, n, toHour + 1, a)]
  }

  /** Bytes held by the columns and the index. */
  get bytes(): number {
    let columns = 0
    for (const chunk of this.chunks) columns += chunk.bytes
    return columns + this.indexHour.data.byteLength * 2 + this.indexCounts.byteLength
  }
}

/** Calls `f` for each chunk that rows [a, b) touch: its number, its first row, and the local rows [from, to). */
export const forEachChunk = (
  a: number,
  b: number,
  f: (chunk: number, base: number, from: number, to: number) => void
): void => {
  if (a >= b) return
  for (let c = a >>> CHUNK_BITS; c <= (b - 1) >>> CHUNK_BITS; c++) {
    const base = c * CHUNK_SIZE
    f(c, base, Math.max(a - base, 0), Math.min(b - base, CHUNK_SIZE))
  }
}
