/**
 * SQL analytics of a SQLite file off the event loop: the `SqlRunner` of `@keymeter/sql`, a worker
 * thread with a read-only connection to the file (`internal/SqlWorkerMain`). A query that arrives
 * while the hot paths are being asked for (`Foreground`: a verifyKey or limit in the last second)
 * runs there, so neither its slices nor its collector's pauses reach theirs: its heap is its own,
 * and the thread runs at the lowest priority. A query on an idle server runs in-process, where the
 * store's hot range answers counts at memory speed. Both answer the same (WAL lets the thread
 * read one committed state of the file while the writer goes on).
 */
import { StorageError } from "@keymeter/core/Errors"
import * as Foreground from "@keymeter/core/Foreground"
import { InvalidQuery, QueryBudgetExceeded } from "@keymeter/sql/SqlError"
import type { Budget } from "@keymeter/sql/SqlError"
import type { Answer } from "@keymeter/sql/SqlQuery"
import type { Request } from "@keymeter/sql/SqlRunner"
import { SqlRunner } from "@keymeter/sql/SqlRunner"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Worker } from "node:worker_threads"
import type { Ask, Cancel, Failure, Reply, Setup } from "./internal/SqlWorkerMain.js"

/** How the worker reads the file: as the writer's stores do (see `SqliteStorage.Options`). */
export interface Options {
  readonly filename: string
  readonly eventDays?: number | undefined
  readonly decisionDays?: number | undefined
  readonly busyTimeoutMs?: number | undefined
  /**
   * Ms since a hot path last ran within which a query goes to the worker (default 1,000). 0 sends
   * none; `Infinity` sends every one.
   */
  readonly foregroundMs?: number | undefined
}

/** Default of {@link Options.foregroundMs}. */
export const DEFAULT_FOREGROUND_MS = 1000

/** The thread, from the compiled module, or (run from source: tests) through tsx's loader. */
const spawn = (setup: Setup): Worker => {
  const here = import.meta.url
  if (!here.endsWith(".ts")) return new Worker(new URL("./internal/SqlWorkerMain.js", here), { workerData: setup })
  const source = new URL("./internal/SqlWorkerMain.ts", here).href
  return new Worker(
    `import("tsx/esm/api").then(({ register }) => { register(); return import(${JSON.stringify(source)}) })`,
    { eval: true, workerData: setup, execArgv: ["--conditions=@keymeter/source"] }
  )
}

const errorOf = (failure: Failure) =>
  failure._tag === "InvalidQuery"
    ? new InvalidQuery({ message: failure.message, position: failure.position })
    : failure._tag === "QueryBudgetExceeded"
    ? new QueryBudgetExceeded({ budget: failure.budget as Budget, message: failure.message })
    : new StorageError({ message: failure.message })

/** The runner, its thread started at the first query it takes and stopped with the layer. */
export const layer = (options: Options): Layer.Layer<SqlRunner> =>
  Layer.scoped(
    SqlRunner,
    Effect.gen(function*() {
      const foregroundMs = options.foregroundMs ?? DEFAULT_FOREGROUND_MS
      const setup: Setup = {
        filename: options.filename,
        eventDays: options.eventDays,
        decisionDays: options.decisionDays,
        busyTimeoutMs: Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000)),
        foreground: Foreground.shared()
      }
      let worker: Worker | undefined
      let next = 0
      const pending = new Map<number, (reply: Reply | Failure) => void>()
      const settle = (id: number, reply: Reply | Failure) => {
        const resume = pending.get(id)
        pending.delete(id)
        // An idle thread does not keep the process alive.
        if (pending.size === 0) worker?.unref()
        resume?.(reply)
      }
      const start = (): Worker => {
        const thread = spawn(setup)
        thread.on("message", (reply: Reply) => settle(reply.id, reply))
        // A thread that dies fails the queries it held; the next query starts another.
        const stopped = (message: string) => {
          if (worker === thread) worker = undefined
          for (const id of [...pending.keys()]) settle(id, { _tag: "StorageError", message })
        }
        thread.on("error", (error) => stopped(`SQL analytics' worker stopped: ${error.message}`))
        thread.on("exit", () => stopped("SQL analytics' worker stopped"))
        return thread
      }
      yield* Effect.addFinalizer(() => Effect.promise(async () => void (await worker?.terminate())))

      const ask = (request: Request) =>
        Effect.async<Answer, InvalidQuery | QueryBudgetExceeded | StorageError>((resume) => {
          const thread = worker ??= start()
          const id = next++
          pending.set(id, (reply) =>
            resume(
              "_tag" in reply
                ? Effect.fail(errorOf(reply))
                : "answer" in reply
                ? Effect.succeed(reply.answer)
                : Effect.fail(errorOf(reply.failure))
            ))
          thread.ref()
          thread.postMessage({ id, request } satisfies Ask)
          // Its caller went away (a closed connection): the thread skips it, or stops it at its
          // next slice, rather than spend its budgets on an answer no one reads.
          return Effect.sync(() => {
            if (!pending.delete(id)) return
            worker?.postMessage({ cancel: id } satisfies Cancel)
            if (pending.size === 0) worker?.unref()
          })
        })

      return SqlRunner.of({
        run: (request) => foregroundMs === Infinity || Foreground.idleFor() < foregroundMs ? ask(request) : undefined
      })
    })
  )
