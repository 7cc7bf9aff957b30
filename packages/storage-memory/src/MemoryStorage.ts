/**
 * The whole Storage port in memory: nothing survives the process. The fastest adapter, for tests,
 * embedding and hot data.
 */
import type { Catalog, RatelimitStore, VerificationStore } from "@keymeter/core/Storage"
import * as Layer from "effect/Layer"
import * as MemoryCatalog from "./MemoryCatalog.js"
import * as MemoryRatelimitStore from "./MemoryRatelimitStore.js"
import * as MemoryVerificationStore from "./MemoryVerificationStore.js"

/** Every part of the port, fresh and empty each time the layer is built. */
export const layer: Layer.Layer<VerificationStore | RatelimitStore | Catalog> = Layer.mergeAll(
  MemoryVerificationStore.layer,
  MemoryRatelimitStore.layer,
  MemoryCatalog.layer
)

/** {@link layer} with tuning options for the engines (verifications' and rate-limit decisions'). */
export const layerWith = (
  options: MemoryVerificationStore.Options
): Layer.Layer<VerificationStore | RatelimitStore | Catalog> =>
  Layer.mergeAll(
    MemoryVerificationStore.layerWith(options),
    MemoryRatelimitStore.layerWith(options),
    MemoryCatalog.layer
  )
