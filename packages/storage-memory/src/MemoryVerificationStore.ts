/**
 * The verification half of the Storage port, in memory: the columnar engine of `@keymeter/engine`
 * (dictionary-encoded, partitioned by api, ordered by hour) as a store.
 */
import { QueryTooLarge, StorageError } from "@keymeter/core/Errors"
import type { Receipt } from "@keymeter/core/Idempotency"
import { VerificationStore } from "@keymeter/core/Storage"
import { Engine } from "@keymeter/engine"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as EngineAnswer from "./internal/EngineAnswer.js"

/** Tuning of the engine. */
export type Options = Engine.Options

/**
 * A {@link VerificationStore} over a new, empty {@link Engine}. Receipts live in a map beside it,
 * added in the same synchronous step as their batch: for the life of the process, a batch and its
 * receipt are stored together or not at all.
 */
export const make = (engine: Engine.Engine = new Engine.Engine()) => {
  const receipts = new Map<string, Receipt>()
  let revision = 0
  const id = (workspaceId: string, key: string) => `${workspaceId}\u0000${key}`
  /** Drops expired receipts from the oldest on (insertion order is nearly expiry order). */
  const sweep = (now: number) => {
    for (const [name, receipt] of receipts) {
      if (receipt.expiresAt > now) break
      receipts.delete(name)
    }
  }
  return VerificationStore.of({
    append: (events, receipt) =>
      Effect.try({
        try: () => {
          if (receipt !== undefined) {
            sweep(receipt.createdAt)
            const held = receipts.get(id(receipt.workspaceId, receipt.key))
            if (held !== undefined && held.expiresAt > receipt.createdAt) return false
          }
          engine.append(events)
          revision++
          if (receipt !== undefined) receipts.set(id(receipt.workspaceId, receipt.key), receipt)
          return true
        },
        catch: (cause) => new StorageError({ message: "Could not store the verifications", cause })
      }).pipe(
        Effect.flatMap((stored) =>
          stored
            ? Effect.void
            : Effect.fail(new StorageError({ message: "The idempotency key was taken by another request meanwhile" }))
        )
      ),
    findReceipt: (workspaceId, key, now) =>
      Effect.sync(() => {
        const receipt = receipts.get(id(workspaceId, key))
        return receipt !== undefined && receipt.expiresAt > now ? Option.some(receipt) : Option.none()
      }),
    aggregate: EngineAnswer.aggregate(engine),
    // Views of the engine's columns (see `Engine.scan`), which later appends leave as they are.
    // The engine counts the events it scans.
    scanCountsFrom: Effect.succeed(-Infinity),
    countedIn: (workspaceId) => Effect.sync(() => engine.apis(workspaceId)),
    sumsCredits: engine.keepsDetails,
    scan: (scope) =>
      Effect.suspend(() => {
        const batches = engine.scan(scope)
        return batches === undefined
          ? Effect.fail(
            new QueryTooLarge({
              message: `The scan would read more than ${scope.maxRows} rows; narrow it with a shorter ` +
                "time range or fewer apis"
            })
          )
          : Effect.succeed(batches)
      }),
    revision: () => revision
  })
}

/** A fresh in-memory verification store. */
export const layer: Layer.Layer<VerificationStore> = Layer.sync(VerificationStore, () => make())

/** {@link layer} with tuning options. */
export const layerWith = (options: Options): Layer.Layer<VerificationStore> =>
  Layer.sync(VerificationStore, () => make(new Engine.Engine(options)))
