/**
 * keymeter's SQLite storage adapter.
 */
export * as Migrations from "./Migrations.js"
export * as SqliteCatalog from "./SqliteCatalog.js"
export * as SqliteRatelimitStore from "./SqliteRatelimitStore.js"
export * as SqliteSqlWorker from "./SqliteSqlWorker.js"
export * as SqliteStorage from "./SqliteStorage.js"
export * as SqliteVerificationStore from "./SqliteVerificationStore.js"
