/**
 * The verification half of the Storage port, in memory: the columnar engine of `@keymeter/engine`
 * (dictionary-encoded, partitioned by api, ordered by hour) as a store.
 */
import * as Aggregation from "@keymeter/core/Aggregation"
import { StorageError } from "@keymeter/core/Errors"
import { VerificationStore } from "@keymeter/core/Storage"
import { Engine } from "@keymeter/engine"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** Tuning of the engine. */
export type Options = Engine.Options

/** A {@link VerificationStore} over a new, empty {@link Engine}. */
export const make = (engine: Engine.Engine = new Engine.Engine()) =>
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
  Layer.sync(VerificationStore, () => make(new Engine.Engine(options)))
