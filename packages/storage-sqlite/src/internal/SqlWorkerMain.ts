/**
 * The thread of `SqliteSqlWorker`: SQL analytics over a SQLite file, on a read-only connection of
 * its own. Each query runs in a read transaction, over stores made for it at its start (the file's
 * dictionaries as they are then, no hot range), so it reads one state of the file whatever the
 * writer commits meanwhile, and answers what the writer's process would. `SqlWorker.serve` runs
 * them one after another, at the lowest priority, keeping to the lane's share while the serving
 * thread's hot paths run.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqliteClient } from "@effect/sql-sqlite-node"
import * as SqlClient from "@effect/sql/SqlClient"
import { StorageError } from "@keymeter/core/Errors"
import { RatelimitStore, VerificationStore } from "@keymeter/core/Storage"
import * as SqlQuery from "@keymeter/sql/SqlQuery"
import type { Request } from "@keymeter/sql/SqlRunner"
import * as SqlWorker from "@keymeter/sql/SqlWorker"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { workerData } from "node:worker_threads"
import * as SqliteRatelimitStore from "../SqliteRatelimitStore.js"
import * as SqliteVerificationStore from "../SqliteVerificationStore.js"

/** What the thread is started with. */
export interface Setup {
  readonly filename: string
  readonly eventDays?: number | undefined
  readonly decisionDays?: number | undefined
  readonly busyTimeoutMs: number
  /** The serving thread's marks (`Foreground.shared`): queries keep to their share while it serves. */
  readonly foreground: SharedArrayBuffer
}

const setup = workerData as Setup
const client = Layer.scopedContext(
  SqliteClient.make({ filename: setup.filename, readonly: true, disableWAL: true, prepareCacheSize: 400 }).pipe(
    Effect.tap((sql) => Effect.orDie(sql.unsafe(`PRAGMA busy_timeout = ${setup.busyTimeoutMs}`))),
    Effect.map((sql) => Context.make(SqliteClient.SqliteClient, sql).pipe(Context.add(SqlClient.SqlClient, sql)))
  )
).pipe(Layer.provide(Reactivity.layer))
const runtime = ManagedRuntime.make(client)

const run = (request: Request) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // One snapshot of the file for the whole query: the stores' dictionaries and every read.
    yield* sql.unsafe("BEGIN")
    return yield* Effect.scoped(Effect.gen(function*() {
      const verifications = Context.get(
        yield* SqliteVerificationStore.make({ hotDays: 0, eventDays: setup.eventDays, readOnly: true }),
        VerificationStore
      )
      const ratelimits = Context.get(
        yield* SqliteRatelimitStore.make({ hotDays: 0, decisionDays: setup.decisionDays, readOnly: true }),
        RatelimitStore
      )
      return yield* SqlQuery.run(request.text, {
        family: request.family,
        workspaceId: request.workspaceId,
        within: request.within,
        ...SqlQuery.storesOf(verifications, ratelimits),
        limits: request.limits,
        now: request.now
      })
    })).pipe(Effect.ensuring(Effect.ignore(sql.unsafe("COMMIT"))))
  }).pipe(Effect.catchTag("SqlError", (error) => new StorageError({ message: String(error.cause ?? error.message) })))

SqlWorker.serve({
  foreground: setup.foreground,
  // Interrupted at its next slice, its read transaction ended.
  run: (request, signal) => runtime.runPromiseExit(run(request), { signal })
})
