/**
 * keymeter's in-memory storage adapter.
 */
export * as MemoryCatalog from "./MemoryCatalog.js"
export * as MemoryRatelimitStore from "./MemoryRatelimitStore.js"
export * as MemorySqlWorker from "./MemorySqlWorker.js"
export * as MemoryStorage from "./MemoryStorage.js"
export * as MemoryVerificationStore from "./MemoryVerificationStore.js"
