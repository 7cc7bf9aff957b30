/**
 * The whole Storage port in memory: nothing survives the process. The fastest adapter, for tests,
 * embedding and hot data.
 */
import type { Catalog, VerificationStore } from "@keymeter/core/Storage"
import * as Layer from "effect/Layer"
import * as MemoryCatalog from "./MemoryCatalog.js"
import * as MemoryVerificationStore from "./MemoryVerificationStore.js"

/** Both halves of the port, fresh and empty each time the layer is built. */
export const layer: Layer.Layer<VerificationStore | Catalog> = Layer.merge(
  MemoryVerificationStore.layer,
  MemoryCatalog.layer
)

/** {@link layer} with tuning options for the verification engine. */
export const layerWith = (options: MemoryVerificationStore.Options): Layer.Layer<VerificationStore | Catalog> =>
  Layer.merge(MemoryVerificationStore.layerWith(options), MemoryCatalog.layer)
