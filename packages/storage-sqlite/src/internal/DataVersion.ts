/**
 * SQLite's `PRAGMA data_version` read on a connection of its own, opened read-only: it changes
 * whenever any other connection (this server's, or the admin CLI's in another process) commits
 * to the file, and reading it costs no I/O, so it can guard what is remembered from the catalog.
 * better-sqlite3 directly, since SqlClient runs every statement as an effect and the check sits
 * on each request's path.
 */
import * as Effect from "effect/Effect"
import { createRequire } from "node:module"

interface Statement {
  pluck(): Statement
  get(): unknown
}
interface Database {
  prepare(source: string): Statement
  close(): void
}
type DatabaseConstructor = new(
  filename: string,
  options: { readonly readonly: boolean; readonly fileMustExist: boolean }
) => Database

/** Reads the file's data version; the connection closes with the scope. Fails if it cannot open. */
export const open = (filename: string) =>
  Effect.acquireRelease(
    Effect.try(() => {
      const Sqlite = createRequire(import.meta.url)("better-sqlite3") as DatabaseConstructor
      return new Sqlite(filename, { readonly: true, fileMustExist: true })
    }),
    (db) => Effect.sync(() => db.close())
  ).pipe(Effect.map((db) => {
    const version = db.prepare("PRAGMA data_version").pluck()
    return () => version.get() as number
  }))
