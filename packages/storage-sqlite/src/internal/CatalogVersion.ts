/**
 * The catalog's versions as a sync read, for what is remembered from the catalog: the counters of
 * `catalog_parts`, one per `CatalogPart`, that catalog writes move (triggers, so the admin CLI's
 * writes in another process count too), read on a read-only connection of its own only when
 * SQLite's `PRAGMA data_version` says the file changed since the last read (a read costs no I/O).
 * Commits of verifications or overrides change the file but no counter, so they leave what is
 * remembered valid. better-sqlite3 directly, since SqlClient runs every statement as an effect
 * and the check sits on each request's path. A version read is reused for a millisecond (a
 * check costs microseconds, and a request checks several times), or until `forget` (a write of
 * this process): another process's write is seen within a millisecond, this process's at once.
 */

/** How long a version read holds, in ms. */
const FRESH_MS = 1
import type { CatalogPart } from "@keymeter/core/CatalogPart"
import * as Effect from "effect/Effect"
import { createRequire } from "node:module"

interface Statement {
  pluck(): Statement
  get(): unknown
  all(): Array<{ readonly part: CatalogPart; readonly n: number }>
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
      const partVersions = db.prepare("SELECT part, n FROM catalog_parts")
      let seen: unknown = undefined
      const versions: Record<CatalogPart, number> = { rootKeys: 0, apis: 0, namespaces: 0, keys: 0 }
      let checkedAt = -Infinity
      const forget = () => {
        checkedAt = -Infinity
      }
      const read = (part: CatalogPart) => {
        const now = performance.now()
        if (now - checkedAt < FRESH_MS) return versions[part]
        // A commit between the two reads is seen by the second; the next call reads it again.
        const current = dataVersion.get()
        if (current !== seen) {
          seen = current
          for (const row of partVersions.all()) versions[row.part] = row.n
        }
        checkedAt = now
        return versions[part]
      }
      return { read, forget }
    })
  ))
