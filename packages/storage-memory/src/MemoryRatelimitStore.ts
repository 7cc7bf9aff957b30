/**
 * The rate-limit half of the Storage port in memory: decisions counted by the columnar engine of
 * `@keymeter/engine` through `RatelimitEvent`'s projection (so they are counted exactly, and as
 * fast, as verifications), each override's hits, and the latest decisions in full.
 */
import * as Aggregation from "@keymeter/core/Aggregation"
import { StorageError } from "@keymeter/core/Errors"
import type { HitTally, OverrideHits, RatelimitEvent } from "@keymeter/core/RatelimitEvent"
import { asVerification, tallyHit } from "@keymeter/core/RatelimitEvent"
import { RatelimitStore } from "@keymeter/core/Storage"
import { Engine } from "@keymeter/engine"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** Tuning of the store. */
export interface Options extends Engine.Options {
  /** Latest decisions held in full, of all workspaces (default 10,000); counts are kept for all. */
  readonly heldDecisions?: number | undefined
}

/** Default of {@link Options.heldDecisions}. */
export const DEFAULT_HELD_DECISIONS = 10_000

/** A {@link RatelimitStore} over a new, empty {@link Engine}. */
export const make = (options: Options = {}) => {
  const engine = new Engine.Engine(options)
  const held = Math.max(0, options.heldDecisions ?? DEFAULT_HELD_DECISIONS)
  // The latest decisions, a ring: `next` is where the next one goes.
  const ring: Array<RatelimitEvent | undefined> = []
  let next = 0
  const hits: HitTally = new Map()
  let revision = 0

  const append = (events: ReadonlyArray<RatelimitEvent>) => {
    engine.append(events.map(asVerification))
    for (const event of events) {
      if (held > 0) {
        ring[next] = event
        next = (next + 1) % held
      }
      tallyHit(hits, event)
    }
    revision++
  }

  return RatelimitStore.of({
    append: (events) =>
      Effect.try({
        try: () => append(events),
        catch: (cause) => new StorageError({ message: "Could not store the rate-limit decisions", cause })
      }),
    aggregate: (query) =>
      Effect.suspend(() => {
        const result = engine.aggregate(query)
        return result === undefined ? Effect.fail(Aggregation.tooLarge(query, query.maxRows)) : Effect.succeed(result)
      }),
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
        const found: Array<RatelimitEvent> = []
        // From the newest arrival back, so that equal times keep the later arrival first.
        for (let n = 0; n < ring.length; n++) {
          const event = ring[(next - 1 - n + ring.length) % ring.length]
          if (
            event !== undefined && event.workspaceId === workspaceId && event.namespaceId === namespaceId &&
            (identifier === undefined || event.identifier === identifier)
          ) found.push(event)
        }
        return found.sort((a, b) => b.time - a.time).slice(0, limit)
      }),
    revision: () => revision
  })
}

/** A fresh in-memory rate-limit store. */
export const layer: Layer.Layer<RatelimitStore> = Layer.sync(RatelimitStore, () => make())

/** {@link layer} with tuning options. */
export const layerWith = (options: Options): Layer.Layer<RatelimitStore> =>
  Layer.sync(RatelimitStore, () => make(options))
