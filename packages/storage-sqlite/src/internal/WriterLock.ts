/**
 * One writer per file: an exclusive transaction held on `<file>-lock`, a SQLite database of its
 * own. SQLite locks with POSIX advisory locks, which the operating system drops with the process
 * that held them (killed, out of memory, power lost), whatever its pid was or becomes: a server
 * whose predecessor died starts at once, and a pid written in a file can never hold it shut. A
 * second connection in the same process is refused like another process (SQLite tracks its own
 * locks per file), so two stores in one process cannot both write either.
 */
import * as Data from "effect/Data"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import { chmodSync } from "node:fs"
import { createRequire } from "node:module"

/** The file is being written by another keymeter server. */
export class FileInUse extends Data.TaggedError("FileInUse")<{ readonly message: string }> {}

interface Database {
  exec(source: string): void
  close(): void
}
type DatabaseConstructor = new(filename: string, options: { readonly timeout: number }) => Database

/** The lock's file beside `filename`. */
export const pathOf = (filename: string) => `${filename}-lock`

class Held extends Data.TaggedError("Held")<{}> {}

/** Takes the lock or fails with `Held` at once; other failures (no such folder) are defects. */
const attempt = (path: string) =>
  Effect.suspend(() => {
    const Sqlite = createRequire(import.meta.url)("better-sqlite3") as DatabaseConstructor
    const db = new Sqlite(path, { timeout: 0 })
    try {
      // Owner-only, beside a file of hashed secrets. Never opened here but through SQLite: closing
      // any other descriptor of the file would drop this process's POSIX locks on it.
      chmodSync(path, 0o600)
      db.exec("BEGIN EXCLUSIVE")
      return Effect.succeed(db)
    } catch (error) {
      db.close()
      if ((error as { code?: unknown }).code === "SQLITE_BUSY") return Effect.fail(new Held())
      throw error
    }
  })

/**
 * The writer lock of `filename`, held until the scope closes. Held by another, it is tried again
 * for `wait` (a supervisor restarting at once must not lose to the process still dying), then
 * refused with {@link FileInUse}.
 */
export const acquire = (filename: string, wait: Duration.DurationInput = "5 seconds") =>
  Effect.acquireRelease(
    attempt(pathOf(filename)).pipe(
      Effect.retry({
        while: (error) => error._tag === "Held",
        schedule: Schedule.spaced("50 millis").pipe(Schedule.upTo(wait))
      }),
      Effect.catchTag("Held", () =>
        new FileInUse({
          message: `Another keymeter server is writing to ${filename} (it holds ${pathOf(filename)}); ` +
            `stop it first, or give this one a file of its own`
        }))
    ),
    (db) =>
      Effect.sync(() => {
        db.exec("ROLLBACK")
        db.close()
      })
  )
