/**
 * The thread of `SqliteSqlWorker`: SQL analytics over a SQLite file, on a read-only connection of
 * its own. Each query runs in a read transaction, over stores made for it at its start (the file's
 * dictionaries as they are then, no hot range), so it reads one state of the file whatever the
 * writer commits meanwhile, and answers what the writer's process would. Queries run one after
 * another (one whose caller went away is skipped, or interrupted), at the lowest priority the system gives a thread, and while the serving thread's hot
 * paths run they keep to the lane's share of the CPU, as they would on its loop.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqliteClient } from "@effect/sql-sqlite-node"
import * as SqlClient from "@effect/sql/SqlClient"
import { StorageError } from "@keymeter/core/Errors"
import * as Foreground from "@keymeter/core/Foreground"
import { RatelimitStore, VerificationStore } from "@keymeter/core/Storage"
import * as SqlQuery from "@keymeter/sql/SqlQuery"
import type { Request } from "@keymeter/sql/SqlRunner"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { setPriority } from "node:os"
import { parentPort, workerData } from "node:worker_threads"
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

/** A query for the thread. */
export interface Ask {
  readonly id: number
  readonly request: Request
}

/** Drops a query its caller no longer waits for: skipped if queued, interrupted if running. */
export interface Cancel {
  readonly cancel: number
}

/** Why a query failed, as the thread hands it back (the errors' fields). */
export type Failure =
  | { readonly _tag: "InvalidQuery"; readonly message: string; readonly position?: number | undefined }
  | { readonly _tag: "QueryBudgetExceeded"; readonly budget: string; readonly message: string }
  | { readonly _tag: "StorageError"; readonly message: string }

/** The thread's reply to an {@link Ask}. */
export type Reply =
  | { readonly id: number; readonly answer: SqlQuery.Answer }
  | { readonly id: number; readonly failure: Failure }

const setup = workerData as Setup
// The lane here steps aside while the serving thread's hot paths run, as it would there: the CPU
// is shared (two cores serve the requests, their clients and this thread), the loop and heap not.
Foreground.follow(setup.foreground)

// Linux gives each thread a nice value of its own: this one yields the CPU to the event loop's.
try {
  setPriority(0, 19)
} catch {
  // Not permitted, or not this system: the thread runs at the process's priority.
}

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

const failureOf = (cause: Cause.Cause<unknown>): Failure => {
  const error = Cause.failureOption(cause)
  if (error._tag === "Some") {
    const e = error.value as { _tag?: string; message?: string; position?: number; budget?: string }
    if (e._tag === "InvalidQuery") return { _tag: "InvalidQuery", message: e.message!, position: e.position }
    if (e._tag === "QueryBudgetExceeded") return { _tag: "QueryBudgetExceeded", budget: e.budget!, message: e.message! }
    if (e._tag === "StorageError") return { _tag: "StorageError", message: e.message! }
  }
  return { _tag: "StorageError", message: "SQL analytics' worker failed to run the query" }
}

// Queries run one after another; each has a signal its Cancel raises. A dropped query gets no reply.
const signals = new Map<number, AbortController>()
let queue: Promise<void> = Promise.resolve()
parentPort!.on("message", (message: Ask | Cancel) => {
  if ("cancel" in message) {
    signals.get(message.cancel)?.abort()
    return
  }
  const { id, request } = message
  const controller = new AbortController()
  signals.set(id, controller)
  queue = queue.then(async () => {
    if (!controller.signal.aborted) {
      // Interrupted at its next slice, its read transaction ended.
      const exit = await runtime.runPromiseExit(run(request), { signal: controller.signal })
      if (!controller.signal.aborted) {
        const reply: Reply = Exit.isSuccess(exit) ? { id, answer: exit.value } : { id, failure: failureOf(exit.cause) }
        parentPort!.postMessage(reply)
      }
    }
    signals.delete(id)
  })
})
