/**
 * The catalog's version as a sync read, for what is remembered from the catalog: the counter
 * `catalog_version` that every catalog write moves (triggers, so the admin CLI's writes in
 * another process count too), read on a read-only connection of its own only when SQLite's
 * `PRAGMA data_version` says the file changed since the last read (a read costs no I/O).
 * Commits of verifications change the file but not the counter, so they leave what is
 * remembered valid. better-sqlite3 directly, since SqlClient runs every statement as an effect
 * and the check sits on each request's path. A version read is reused for the rest of the turn
 * (one request's checks read it several times), until `forget` (a write of this process).
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

/**
 * The catalog's version (`read`) and `forget`, to call after a write of this process; the
 * connection closes with the scope. Fails if it cannot open.
 */
export const open = (filename: string) =>
  Effect.acquireRelease(
    Effect.try(() => {
      const Sqlite = createRequire(import.meta.url)("better-sqlite3") as DatabaseConstructor
      return new Sqlite(filename, { readonly: true, fileMustExist: true })
    }),
    (db) => Effect.sync(() => db.close())
  ).pipe(Effect.flatMap((db) =>
    Effect.try(() => {
      const dataVersion = db.prepare("PRAGMA data_version").pluck()
      const catalogVersion = db.prepare("SELECT n FROM catalog_version").pluck()
      let seen: unknown = undefined
      let version = 0
      let fresh = false
      const forget = () => {
        fresh = false
      }
      const read = () => {
        if (fresh) return version
        // A commit between the two reads is seen by the second; the next call reads it again.
        const now = dataVersion.get()
        if (now !== seen) {
          seen = now
          version = catalogVersion.get() as number
        }
        fresh = true
        queueMicrotask(forget)
        return version
      }
      return { read, forget }
    })
  ))
