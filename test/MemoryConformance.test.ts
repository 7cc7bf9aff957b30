import { MemoryStorage } from "@keymeter/storage-memory"
import { conformance } from "@keymeter/testing/StorageConformance"

conformance("memory", MemoryStorage.layer)
// A tiny merge threshold exercises the late-run merge on every few events.
conformance("memory, late rows merged eagerly", MemoryStorage.layerWith({ lateMergeThreshold: 4 }))
