/**
 * The verification half of the Storage port, in memory: columnar, dictionary-encoded, partitioned
 * by api and ordered by hour (see `internal/Partition`).
 */
import * as Aggregation from "@keymeter/core/Aggregation"
import { StorageError } from "@keymeter/core/Errors"
import { VerificationStore } from "@keymeter/core/Storage"
import type { Verification } from "@keymeter/core/Verification"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Partition } from "./internal/Partition.js"
import { aggregate, TooManyRows } from "./internal/Query.js"

/** One api's columns, for adapters that feed the engine already-coded events in bulk. */
export type { Partition }

/** Figures about what the store holds. */
export interface Stats {
  readonly partitions: number
  readonly events: number
  /** Bytes of columns, indexes and posting lists (dictionaries not counted). */
  readonly bytes: number
}

/** Tuning of the in-memory engine. */
export interface Options {
  /**
   * Events older than an api's newest hour wait in a side run and are merged into the main run in
   * bulk once there are this many (default 65,536) and a quarter of the rows they displace.
   */
  readonly lateMergeThreshold?: number | undefined
}

/** A store without Effect, for embedding and benchmarks; the layer wraps it. */
export class Engine {
  private readonly partitions = new Map<string, Map<string, Partition>>()
  constructor(private readonly options: Options = {}) {}

  partition(workspaceId: string, apiId: string): Partition | undefined {
    return this.partitions.get(workspaceId)?.get(apiId)
  }

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

  /** The partition of (workspace, api), created when new; for feeding coded events in bulk. */
  partitionFor(workspaceId: string, apiId: string): Partition {
    const apis = this.apisOf(workspaceId)
    let partition = apis.get(apiId)
    if (partition === undefined) apis.set(apiId, partition = new Partition(this.options.lateMergeThreshold))
    return partition
  }

  /** A partition outside the engine, filled by the caller, to take an api's place with {@link replace}. */
  detachedPartition(): Partition {
    return new Partition(this.options.lateMergeThreshold)
  }

  /** Puts `partition` in place of the api's current one (which is then dropped). */
  replace(workspaceId: string, apiId: string, partition: Partition): void {
    this.apisOf(workspaceId).set(apiId, partition)
  }

  private apisOf(workspaceId: string): Map<string, Partition> {
    let apis = this.partitions.get(workspaceId)
    if (apis === undefined) this.partitions.set(workspaceId, apis = new Map())
    return apis
  }

  /** Answers the query, or undefined when the answer would exceed `query.maxRows`. */
  aggregate(query: Aggregation.AggregationQuery): Aggregation.AggregationResult | undefined {
    try {
      return aggregate(this.partition(query.workspaceId, query.apiId), query)
    } catch (error) {
      if (error instanceof TooManyRows) return undefined
      throw error
    }
  }

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
}

/** A {@link VerificationStore} over a new, empty {@link Engine}. */
export const make = (engine: Engine = new Engine()) =>
  VerificationStore.of({
    append: (events) =>
      Effect.try({
        try: () => engine.append(events),
        catch: (cause) => new StorageError({ message: "Could not store the verifications", cause })
      }),
    aggregate: (query) =>
      Effect.suspend(() => {
        const result = engine.aggregate(query)
        return result === undefined ? Effect.fail(Aggregation.tooLarge(query, query.maxRows)) : Effect.succeed(result)
      })
  })

/** A fresh in-memory verification store. */
export const layer: Layer.Layer<VerificationStore> = Layer.sync(VerificationStore, () => make())

/** {@link layer} with tuning options. */
export const layerWith = (options: Options): Layer.Layer<VerificationStore> =>
  Layer.sync(VerificationStore, () => make(new Engine(options)))
