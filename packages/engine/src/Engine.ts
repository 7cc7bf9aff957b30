/**
 * The columnar verification engine: per api, dictionary-encoded columns ordered by hour, with an
 * hour index, per-chunk key indexes and lazy day aggregates (see `internal/`), answering
 * aggregation queries by the cheapest of several paths (`internal/query/`). It has no I/O and no
 * Effect: the memory adapter wraps it as a store, and the SQLite adapter keeps its hot range in
 * it, fed through a {@link Loader}.
 */
import type { AggregationQuery, AggregationResult } from "@keymeter/core/Aggregation"
import type { ScanScope, VerificationColumns } from "@keymeter/core/EventScan"
import type { Identity, Verification } from "@keymeter/core/Verification"
import { Partition } from "./internal/Partition.js"
import { aggregate } from "./internal/query/Aggregate.js"
import { TooManyRows } from "./internal/query/Rows.js"
import type { Scanned } from "./internal/RawScan.js"
import * as RawScan from "./internal/RawScan.js"
import { Layout } from "./internal/Run.js"
import * as WarmUp from "./internal/WarmUp.js"

/** Figures about what the engine holds. */
export interface Stats {
  readonly partitions: number
  readonly events: number
  /** Bytes of columns, indexes and posting lists (dictionaries not counted). */
  readonly bytes: number
}

/** Tuning of the engine. */
export interface Options {
  /**
   * Events older than an api's newest hour wait in a side run and are merged into the main run in
   * bulk once there are this many (default 65,536) and a quarter of the rows they displace.
   */
  readonly lateMergeThreshold?: number | undefined
  /**
   * Whether each event keeps its details (its time to the ms, credits spent, latency, region) for
   * {@link Engine.scan} (default true). Without them an event takes 14 bytes less, and `scan` is
   * unavailable: for an engine that only counts (SQLite's hot range).
   */
  readonly details?: boolean | undefined
  /**
   * Whether the thread's first engine to hold a large api (four chunks of rows) asks dashboards'
   * queries of it once, in idle turns after its writes pause, so that the query paths are compiled
   * before callers' first queries (default true; see `internal/WarmUp`).
   */
  readonly warmUp?: boolean | undefined
}

/**
 * Adds one api's events already counted (rollup rows: a count per hour, key, identity, tag set and
 * outcome). Codes are the api's own in the engine, looked up once per value with `keyCode`,
 * `identityCode` and `tagsetCode`. Such events have no details: each is at the start of its hour,
 * with no credits spent, no latency and no region.
 */
export interface Loader {
  keyCode(keyId: string): number
  identityCode(identity: Identity): number
  tagsetCode(tags: ReadonlyArray<string>): number
  /** Adds `count` events of one hour (unix ms / HOUR) and outcome (its code). */
  add(hour: number, key: number, identity: number, tagset: number, outcome: number, count: number): void
  /** Adds an event as `Engine.append` would (a batch committed while a replacement loads). */
  append(event: Verification): void
  /** Ends a run of additions: merges out-of-order rows when they are many enough. */
  flush(): void
  /** A replacement takes the live partition's place (which is dropped); a live load has nothing to do. */
  commit(): void
}

/** Verifications in memory, by workspace and api. */
export class Engine {
  private readonly partitions = new Map<string, Map<string, Partition>>()
  /** Batches written so far: the warm-up waits for it to stop moving. */
  private writes = 0
  constructor(private readonly options: Options = {}) {}

  /** The apis of a workspace the engine holds events of. */
  apis(workspaceId: string): ReadonlyArray<string> {
    const apis = this.partitions.get(workspaceId)
    return apis === undefined ? [] : [...apis].flatMap(([apiId, partition]) => partition.size > 0 ? [apiId] : [])
  }

  /** Whether events keep their details: then `scan` reads them and `aggregate` sums credits. */
  get keepsDetails(): boolean {
    return this.options.details !== false
  }

  /** Adds a batch. */
  append(events: ReadonlyArray<Verification>): void {
    // Partitions of this batch by api; a batch almost always comes from one workspace.
    let workspaceId = events.length > 0 ? events[0]!.workspaceId : ""
    let byApi = new Map<string, Partition>()
    const touched: Array<Partition> = []
    for (const event of events) {
      if (event.workspaceId !== workspaceId) {
        workspaceId = event.workspaceId
        byApi = new Map()
      }
      let partition = byApi.get(event.apiId)
      if (partition === undefined) {
        partition = this.partitionFor(workspaceId, event.apiId)
        byApi.set(event.apiId, partition)
        touched.push(partition)
      }
      partition.add(event)
    }
    this.writes++
    for (const partition of touched) {
      partition.maybeMerge()
      this.warmUpOver(partition)
    }
  }

  /**
   * A loader of (workspace, api): into its live partition (created when new), or with `replace`
   * into a new one, which answers nothing until its `commit` puts it in the live one's place.
   */
  load(workspaceId: string, apiId: string, options: { readonly replace: boolean }): Loader {
    const partition = options.replace
      ? this.newPartition()
      : this.partitionFor(workspaceId, apiId)
    return {
      keyCode: (keyId) => partition.keyCode(keyId),
      identityCode: (identity) => partition.identityCode(identity),
      tagsetCode: (tags) => partition.tagsetCode(tags),
      add: (hour, key, identity, tagset, outcome, count) => {
        for (let n = count; n > 0; n--) partition.addCoded(hour, key, identity, tagset, outcome, 0, 0, 0, 0)
      },
      append: (event) => partition.add(event),
      flush: () => {
        this.writes++
        partition.maybeMerge()
        if (!options.replace) this.warmUpOver(partition)
      },
      commit: () => {
        if (options.replace) this.apisOf(workspaceId).set(apiId, partition)
        this.warmUpOver(partition)
      }
    }
  }

  /** Answers the query, or undefined when the answer would exceed `query.maxRows`. */
  aggregate(query: AggregationQuery): AggregationResult | undefined {
    try {
      return aggregate(this.partitions.get(query.workspaceId)?.get(query.apiId), query)
    } catch (error) {
      if (error instanceof TooManyRows) return undefined
      throw error
    }
  }

  /**
   * The raw rows of the scope (`EventScan`), one batch per chunk of rows, or undefined when they
   * are more than `scope.maxRows`. Batches are views of the engine's columns where they can be (no
   * copy); rows once written never change (a merge of late rows writes copies), so a batch stays
   * true whatever is appended after. Rows loaded from rollups (`Loader.add`) read as events at the
   * start of their hour, without details.
   */
  scan(scope: ScanScope): ReadonlyArray<VerificationColumns> | undefined {
    if (this.options.details === false) throw new Error("Engine.scan: this engine keeps no event details")
    const apis = this.partitions.get(scope.workspaceId)
    if (apis === undefined) return []
    const scanned: Array<Scanned> = []
    if (scope.within === undefined) {
      for (const [apiId, partition] of apis) scanned.push({ apiId, partition })
    } else {
      for (const apiId of new Set(scope.within)) {
        const partition = apis.get(apiId)
        if (partition !== undefined) scanned.push({ apiId, partition })
      }
    }
    return RawScan.scan(scanned, scope)
  }

  /** What the engine holds. */
  stats(): Stats {
    let partitions = 0
    let events = 0
    let bytes = 0
    for (const apis of this.partitions.values()) {
      for (const partition of apis.values()) {
        partitions++
        events += partition.size
        bytes += partition.bytes
      }
    }
    return { partitions, events, bytes }
  }

  /** Schedules the thread's warm-up once `partition` is large enough (see `internal/WarmUp`). */
  private warmUpOver(partition: Partition): void {
    if (partition.main.length < WarmUp.ROWS || this.options.warmUp === false || WarmUp.current() !== undefined) return
    void WarmUp.schedule({ aggregate: (query) => this.aggregate(query), writes: () => this.writes }, () => {
      const apis: Array<WarmUp.Named> = []
      for (const [workspaceId, partitions] of this.partitions) {
        for (const [apiId, partition] of partitions) apis.push({ workspaceId, apiId, partition })
      }
      return WarmUp.queries(apis, this.keepsDetails)
    })
  }

  private partitionFor(workspaceId: string, apiId: string): Partition {
    const apis = this.apisOf(workspaceId)
    let partition = apis.get(apiId)
    if (partition === undefined) apis.set(apiId, partition = this.newPartition())
    return partition
  }

  private newPartition(): Partition {
    return new Partition(this.options.lateMergeThreshold, new Layout(this.options.details ?? true))
  }

  private apisOf(workspaceId: string): Map<string, Partition> {
    let apis = this.partitions.get(workspaceId)
    if (apis === undefined) this.partitions.set(workspaceId, apis = new Map())
    return apis
  }
}
