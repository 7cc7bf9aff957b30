/**
 * The rate-limit half of the Storage port in memory: decisions counted by the columnar engine of
 * `@keymeter/engine` through `RatelimitEvent`'s projection (so they are counted exactly, and as
 * fast, as verifications), each override's hits, the latest decisions in full, and every decision's
 * time, namespace, identifier, passed, latency and override in compact columns for SQL analytics
 * (`scan`, see `internal/DecisionColumns`).
 */
import { QueryTooLarge, StorageError } from "@keymeter/core/Errors"
import type { HitTally, OverrideHits, RatelimitEvent } from "@keymeter/core/RatelimitEvent"
import { asVerification, tallyHit } from "@keymeter/core/RatelimitEvent"
import { RatelimitStore } from "@keymeter/core/Storage"
import * as Time from "@keymeter/core/Time"
import { OutcomeIndex } from "@keymeter/core/Verification"
import { Engine } from "@keymeter/engine"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { Partition } from "./internal/DecisionColumns.js"
import { DecisionColumns } from "./internal/DecisionColumns.js"
import * as EngineAnswer from "./internal/EngineAnswer.js"
import { HeldDecisions } from "./internal/HeldDecisions.js"

/** Tuning of the store. */
export interface Options extends Engine.Options {
  /** Latest decisions held in full, of all workspaces (default 10,000); counts are kept for all. */
  readonly heldDecisions?: number | undefined
}

/** Default of {@link Options.heldDecisions}. */
export const DEFAULT_HELD_DECISIONS = 10_000

const VALID = OutcomeIndex.get("valid")!

/** The failure of a scan whose scope holds more than `maxRows` decisions. */
const scanTooLarge = (maxRows: number) =>
  new QueryTooLarge({
    message: `The scope holds more than ${maxRows} rate-limit decisions (the row budget of a scan); narrow it ` +
      "with a shorter window or fewer namespaces"
  })

/** A {@link RatelimitStore} over a new, empty {@link Engine}. */
export const make = (options: Options = {}) => {
  const engine = new Engine.Engine(options)
  const held = new HeldDecisions<Engine.Loader>(Math.max(0, options.heldDecisions ?? DEFAULT_HELD_DECISIONS))
  const hits: HitTally = new Map()
  // Each partition's columns beside the engine's loader of the same partition: its codes are the columns' too.
  const columns = new DecisionColumns((workspaceId, namespaceId) =>
    engine.load(workspaceId, namespaceId, { replace: false })
  )
  let revision = 0
  let batches = 0

  const append = (events: ReadonlyArray<RatelimitEvent>) => {
    // As `engine.append(events.map(asVerification))`, each projected value looked up once for both.
    const touched: Array<Partition<Engine.Loader>> = []
    batches++
    for (const event of events) {
      const partition = columns.partition(event.workspaceId, event.namespaceId)
      const counts = partition.counts
      const projected = asVerification(event)
      const key = counts.keyCode(projected.keyId)
      const identity = projected.identity === undefined ? 0 : counts.identityCode(projected.identity)
      const tagset = projected.tags.length === 0 ? 0 : counts.tagsetCode(projected.tags)
      const outcome = projected.outcome === "valid" ? VALID : OutcomeIndex.get(projected.outcome)!
      counts.add(Math.floor(projected.time / Time.HOUR), key, identity, tagset, outcome, 1)
      if (partition.batch !== batches) {
        partition.batch = batches
        touched.push(partition)
      }
      partition.push(event, key, identity)
      held.push(partition, event, key, identity)
    }
    for (const partition of touched) partition.counts.flush()
    for (const event of events) tallyHit(hits, event)
    revision++
  }

  return RatelimitStore.of({
    append: (events) =>
      Effect.try({
        try: () => append(events),
        catch: (cause) => new StorageError({ message: "Could not store the rate-limit decisions", cause })
      }),
    aggregate: EngineAnswer.aggregate(engine),
    overrideHits: (workspaceId, overrideIds) =>
      Effect.sync(() => {
        const out = new Map<string, OverrideHits>()
        const ofWorkspace = hits.get(workspaceId)
        if (ofWorkspace === undefined) return out
        for (const id of overrideIds) {
          const counted = ofWorkspace.get(id)
          if (counted !== undefined) out.set(id, { hits: counted.hits, lastHitAt: counted.lastHitAt })
        }
        return out
      }),
    decisions: (workspaceId, namespaceId, { identifier, limit }) =>
      Effect.sync(() => {
        const partition = columns.existing(workspaceId, namespaceId)
        // From the newest arrival back, so that equal times keep the later arrival first.
        return partition === undefined
          ? []
          : held.of(partition, identifier).sort((a, b) => b.time - a.time).slice(0, limit)
      }),
    // The engine counts every decision the columns hold.
    scanCountsFrom: Effect.succeed(-Infinity),
    countedIn: (workspaceId) => Effect.sync(() => engine.apis(workspaceId)),
    scan: (scope) =>
      Effect.suspend(() => {
        const found = columns.scan(scope)
        return found === undefined ? Effect.fail(scanTooLarge(scope.maxRows)) : Effect.succeed(found)
      }),
    revision: () => revision
  })
}

/** A fresh in-memory rate-limit store. */
export const layer: Layer.Layer<RatelimitStore> = Layer.sync(RatelimitStore, () => make())

/** {@link layer} with tuning options. */
export const layerWith = (options: Options): Layer.Layer<RatelimitStore> =>
  Layer.sync(RatelimitStore, () => make(options))
