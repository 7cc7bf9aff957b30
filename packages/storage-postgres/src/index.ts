/**
 * keymeter's PostgreSQL catalog, for several servers that share one.
 */
export * as Migrations from "./Migrations.js"
export * as PostgresCatalog from "./PostgresCatalog.js"
