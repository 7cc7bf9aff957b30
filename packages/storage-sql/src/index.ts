/**
 * keymeter's catalog in SQL, for the adapters on SQL databases (SQLite, PostgreSQL).
 */
export * as SqlCatalog from "./SqlCatalog.js"
