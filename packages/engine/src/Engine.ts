/**
 * The columnar verification engine: per api, dictionary-encoded columns ordered by hour, with an
 * hour index, per-chunk key indexes and lazy day aggregates (see `internal/`), answering
 * aggregation queries by the cheapest of several paths (`internal/query/`). It has no I/O and no
 * Effect: the memory adapter wraps it as a store, and the SQLite adapter keeps its hot range in
 * it, fed through a {@link Loader}.
 */
import type { AggregationQuery, AggregationResult } from "@keymeter/core/Aggregation"
import type { Identity, Verification } from "@keymeter/core/Verification"
import { Partition } from "./internal/Partition.js"
import { aggregate } from "./internal/query/Aggregate.js"
import { TooManyRows } from "./internal/query/Rows.js"

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
}

/**
 * Adds one api's events already counted (rollup rows: a count per hour, key, identity, tag set and
 * outcome). Codes are the api's own in the engine, looked up once per value with `keyCode`,
 * `identityCode` and `tagsetCode`.
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
  constructor(private readonly options: Options = {}) {}

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
    for (const partition of touched) partition.maybeMerge()
  }

  /**
   * A loader of (workspace, api): into its live partition (created when new), or with `replace`
   * into a new one, which answers nothing until its `commit` puts it in the live one's place.
   */
  load(workspaceId: string, apiId: string, options: { readonly replace: boolean }): Loader {
    const partition = options.replace
      ? new Partition(this.options.lateMergeThreshold)
      : this.partitionFor(workspaceId, apiId)
    return {
      keyCode: (keyId) => partition.keyCode(keyId),
      identityCode: (identity) => partition.identityCode(identity),
      tagsetCode: (tags) => partition.tagsetCode(tags),
      add: (hour, key, identity, tagset, outcome, count) => {
        for (let n = count; n > 0; n--) partition.addCoded(hour, key, identity, tagset, outcome)
      },
      append: (event) => partition.add(event),
      flush: () => partition.maybeMerge(),
      commit: () => {
        if (options.replace) this.apisOf(workspaceId).set(apiId, partition)
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

  private partitionFor(workspaceId: string, apiId: string): Partition {
    const apis = this.apisOf(workspaceId)
    let partition = apis.get(apiId)
    if (partition === undefined) apis.set(apiId, partition = new Partition(this.options.lateMergeThreshold))
    return partition
  }

  private apisOf(workspaceId: string): Map<string, Partition> {
    let apis = this.partitions.get(workspaceId)
    if (apis === undefined) this.partitions.set(workspaceId, apis = new Map())
    return apis
  }
}
