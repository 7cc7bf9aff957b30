/**
 * keymeter's columnar verification engine, shared by the memory and SQLite adapters.
 */
export * as Engine from "./Engine.js"
