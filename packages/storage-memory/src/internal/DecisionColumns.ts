/**
 * Every rate-limit decision's time, identifier, passed, latency and override, kept for SQL
 * analytics (`RatelimitStore.scan`) in compact columns, with no object per decision:
 *
 * - one partition per (workspace, namespace), as the engine's (the namespace is its api): the
 *   identifier and override codes are the ones the engine gave the decision's key and identity in
 *   that partition (handed in by the caller, so each value is looked up once for both), and the
 *   partition keeps their values by code (the engine hands codes out in increasing order, densely;
 *   override code 0 is none). A scan hands over only what its scope may read, codes and values
 *   alike;
 * - a partition's decisions in chunks of typed arrays, in order of arrival: time (Float64, unix
 *   ms), identifier and override codes (8, 16 or 32 bits, widened when a dictionary outgrows
 *   them), passed (Uint8), latency (Uint32, µs). About 15 to 20 bytes a decision;
 * - a partition's first chunk doubles from {@link FIRST_ROWS} rows up to {@link CHUNK_ROWS}, each
 *   later chunk is made full size: an append is amortized O(1), and a namespace with few decisions
 *   costs little;
 * - each chunk knows its least and greatest time, so a scan skips the chunks outside its range,
 *   hands the chunks inside it as views (`subarray`) and copies out the rows of those across its
 *   edges.
 *
 * Rows are never changed once written, and a chunk that grows or widens gets new arrays: a view
 * handed out stays what it was when it was made.
 */
import type { RatelimitColumns, ScanScope } from "@keymeter/core/EventScan"
import type { RatelimitEvent } from "@keymeter/core/RatelimitEvent"

/** Rows of a full chunk. */
export const CHUNK_ROWS = 65_536

/** Rows a partition's first chunk is made for. */
export const FIRST_ROWS = 64

/** Most latency a row holds, in µs (about 71 minutes); longer ones are kept as this. */
const MAX_LATENCY_MICROS = 0xffff_ffff

type Codes = Uint8Array | Uint16Array | Uint32Array

/** The greatest code an array of `codes`' width holds. */
const widthLimit = (codes: Codes): number =>
  codes instanceof Uint8Array ? 0xff : codes instanceof Uint16Array ? 0xffff : 0xffff_ffff

/** An array of `capacity` codes wide enough for codes up to `largest`. */
const codesFor = (capacity: number, largest: number): Codes =>
  largest <= 0xff ? new Uint8Array(capacity) : largest <= 0xffff ? new Uint16Array(capacity) : new Uint32Array(capacity)

/** Codes of the namespace column: a partition's rows all hold its namespace, code 0. */
const ZEROS = new Uint8Array(CHUNK_ROWS)

/** Rows `[0, length)` of a partition's decisions, in arrival order. */
class Chunk {
  length = 0
  /** Least and greatest time of the rows; +Infinity and -Infinity while there are none. */
  minTime = Infinity
  maxTime = -Infinity
  time: Float64Array
  identifier: Codes
  identifierLimit: number
  passed: Uint8Array
  latency: Uint32Array
  override: Codes
  overrideLimit: number

  constructor(readonly capacity: number, identifiers: number, overrides: number) {
    this.time = new Float64Array(capacity)
    this.identifier = codesFor(capacity, identifiers)
    this.identifierLimit = widthLimit(this.identifier)
    this.passed = new Uint8Array(capacity)
    this.latency = new Uint32Array(capacity)
    this.override = codesFor(capacity, overrides)
    this.overrideLimit = widthLimit(this.override)
  }

  /** The same rows in arrays of `capacity` rows. */
  grown(capacity: number): Chunk {
    const out = new Chunk(capacity, this.identifierLimit, this.overrideLimit)
    out.length = this.length
    out.minTime = this.minTime
    out.maxTime = this.maxTime
    out.time.set(this.time)
    out.identifier.set(this.identifier)
    out.passed.set(this.passed)
    out.latency.set(this.latency)
    out.override.set(this.override)
    return out
  }
}

/** The decisions of one (workspace, namespace). */
export class Partition<Counts> {
  /** The namespace column's dictionary: one value, code 0. */
  readonly namespace: ReadonlyArray<string>
  /** Identifiers by code. */
  readonly identifiers: Array<string> = []
  /** Override ids by code; "" (code 0): no override decided. */
  readonly overrides: Array<string> = [""]
  readonly chunks: Array<Chunk> = []
  /** The caller's number of the last batch that added to it. */
  batch = -1

  constructor(readonly workspaceId: string, readonly namespaceId: string, readonly counts: Counts) {
    this.namespace = [namespaceId]
  }

  /** The chunk the next row goes in, made or grown when the last one is full. */
  private open(): Chunk {
    const last = this.chunks[this.chunks.length - 1]
    if (last !== undefined && last.length < last.capacity) return last
    const chunk = last === undefined
      ? new Chunk(FIRST_ROWS, this.identifiers.length, this.overrides.length)
      : last.capacity < CHUNK_ROWS
      ? last.grown(Math.min(CHUNK_ROWS, last.capacity * 2))
      : new Chunk(CHUNK_ROWS, this.identifiers.length, this.overrides.length)
    if (last !== undefined && last.capacity < CHUNK_ROWS) this.chunks[this.chunks.length - 1] = chunk
    else this.chunks.push(chunk)
    return chunk
  }

  /**
   * Adds `event`, whose identifier and override (0: none) have the codes `identifier` and
   * `override`: a code not seen before is greater than every code seen (as the engine hands them out).
   */
  push(event: RatelimitEvent, identifier: number, override: number) {
    if (identifier >= this.identifiers.length) this.identifiers[identifier] = event.identifier
    if (override >= this.overrides.length) this.overrides[override] = event.overrideId!
    const chunk = this.open()
    const row = chunk.length
    const time = event.time
    chunk.time[row] = time
    if (time < chunk.minTime) chunk.minTime = time
    if (time > chunk.maxTime) chunk.maxTime = time
    if (identifier > chunk.identifierLimit) {
      const wider = codesFor(chunk.capacity, identifier)
      wider.set(chunk.identifier)
      chunk.identifier = wider
      chunk.identifierLimit = widthLimit(wider)
    }
    chunk.identifier[row] = identifier
    chunk.passed[row] = event.passed ? 1 : 0
    const micros = Math.round(event.latency * 1000)
    chunk.latency[row] = micros > 0 ? Math.min(micros, MAX_LATENCY_MICROS) : 0
    if (override > chunk.overrideLimit) {
      const wider = codesFor(chunk.capacity, override)
      wider.set(chunk.override)
      chunk.override = wider
      chunk.overrideLimit = widthLimit(wider)
    }
    chunk.override[row] = override
    chunk.length = row + 1
  }

  /** Rows `[0, n)` of `chunk` as columns: views of its arrays, but latency (in ms). */
  view(chunk: Chunk, n: number): RatelimitColumns {
    const latency = new Float64Array(n)
    const micros = chunk.latency
    for (let i = 0; i < n; i++) latency[i] = micros[i]! / 1000
    return {
      length: n,
      time: chunk.time.subarray(0, n),
      namespaceId: { codes: ZEROS.subarray(0, n), values: this.namespace },
      identifier: { codes: chunk.identifier.subarray(0, n), values: this.identifiers },
      passed: chunk.passed.subarray(0, n),
      latency,
      overrideId: { codes: chunk.override.subarray(0, n), values: this.overrides }
    }
  }

  /** Rows `rows[0, n)` of `chunk` as columns, copied out. */
  gather(chunk: Chunk, rows: Uint32Array, n: number): RatelimitColumns {
    const time = new Float64Array(n)
    const identifier = codesFor(n, chunk.identifierLimit)
    const passed = new Uint8Array(n)
    const latency = new Float64Array(n)
    const override = codesFor(n, chunk.overrideLimit)
    for (let i = 0; i < n; i++) {
      const row = rows[i]!
      time[i] = chunk.time[row]!
      identifier[i] = chunk.identifier[row]!
      passed[i] = chunk.passed[row]!
      latency[i] = chunk.latency[row]! / 1000
      override[i] = chunk.override[row]!
    }
    return {
      length: n,
      time,
      namespaceId: { codes: ZEROS.subarray(0, n), values: this.namespace },
      identifier: { codes: identifier, values: this.identifiers },
      passed,
      latency,
      overrideId: { codes: override, values: this.overrides }
    }
  }
}

/**
 * Every decision, by workspace and namespace; each partition carries `Counts`, what
 * `countsOf(workspaceId, namespaceId)` made for it when it was made (the engine's loader of the
 * same partition, which hands out the codes).
 */
export class DecisionColumns<Counts> {
  private readonly workspaces = new Map<string, Map<string, Partition<Counts>>>()
  /** The last workspace's partitions: a batch almost always comes from one workspace. */
  private lastWorkspace: string | undefined
  private lastPartitions = new Map<string, Partition<Counts>>()
  /** The last partition: often the next decision's too. */
  private last: Partition<Counts> | undefined

  constructor(private readonly countsOf: (workspaceId: string, namespaceId: string) => Counts) {}

  /** The partition of (workspace, namespace), made when new. */
  partition(workspaceId: string, namespaceId: string): Partition<Counts> {
    let ofWorkspace = this.lastPartitions
    if (workspaceId === this.lastWorkspace) {
      if (this.last !== undefined && this.last.namespaceId === namespaceId) return this.last
    } else {
      const found = this.workspaces.get(workspaceId)
      if (found === undefined) this.workspaces.set(workspaceId, ofWorkspace = new Map())
      else ofWorkspace = found
      this.lastWorkspace = workspaceId
      this.lastPartitions = ofWorkspace
    }
    let partition = ofWorkspace.get(namespaceId)
    if (partition === undefined) {
      ofWorkspace.set(
        namespaceId,
        partition = new Partition(workspaceId, namespaceId, this.countsOf(workspaceId, namespaceId))
      )
    }
    this.last = partition
    return partition
  }

  /** The partition of (workspace, namespace), if it holds any decision. */
  existing(workspaceId: string, namespaceId: string): Partition<Counts> | undefined {
    return this.workspaces.get(workspaceId)?.get(namespaceId)
  }

  /**
   * The decisions of `scope`, a batch of columns per chunk it touches; undefined once they number
   * more than `scope.maxRows` (counted chunk by chunk, before a chunk's rows are copied or handed).
   */
  scan(scope: ScanScope): Array<RatelimitColumns> | undefined {
    const out: Array<RatelimitColumns> = []
    const ofWorkspace = this.workspaces.get(scope.workspaceId)
    if (ofWorkspace === undefined) return out
    const partitions = scope.within === undefined
      ? [...ofWorkspace.values()]
      : [...new Set(scope.within)].flatMap((id) => ofWorkspace.get(id) ?? [])
    const { from, maxRows, to } = scope
    let rows = 0
    let picked = new Uint32Array(0)
    for (const partition of partitions) {
      for (const chunk of partition.chunks) {
        const n = chunk.length
        if (n === 0 || chunk.maxTime < from || chunk.minTime >= to) continue
        if (chunk.minTime >= from && chunk.maxTime < to) {
          rows += n
          if (rows > maxRows) return undefined
          out.push(partition.view(chunk, n))
          continue
        }
        // Across an edge of the range: its rows inside it, copied.
        if (picked.length < n) picked = new Uint32Array(CHUNK_ROWS)
        const time = chunk.time
        let k = 0
        for (let i = 0; i < n; i++) {
          const t = time[i]!
          if (t >= from && t < to) picked[k++] = i
        }
        if (k === 0) continue
        rows += k
        if (rows > maxRows) return undefined
        out.push(partition.gather(chunk, picked, k))
      }
    }
    return out
  }

  /** Bytes the columns' arrays take (capacity, not rows), for measurements. */
  bytes(): number {
    let total = 0
    for (const ofWorkspace of this.workspaces.values()) {
      for (const partition of ofWorkspace.values()) {
        for (const c of partition.chunks) {
          total += c.time.byteLength + c.identifier.byteLength + c.passed.byteLength + c.latency.byteLength +
            c.override.byteLength
        }
      }
    }
    return total
  }
}
