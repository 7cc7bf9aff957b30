/**
 * A thread that runs SQL analytics off the serving event loop, both of its sides: {@link make} on
 * the serving thread, a {@link SqlRunner} that hands queries over and their answers back, and
 * {@link serve} on the thread, which runs them one after another over the stores it was given. A
 * store that can be read from another thread provides one (SQLite's file; memory's replica): its
 * queries' slices and its collector's pauses then stay off the hot paths'. The thread runs at the
 * lowest priority the system gives it, and while the serving thread's hot paths run its queries
 * keep to the lane's share of the CPU, as they would on its loop (it follows its `Foreground`).
 */
import { StorageError } from "@keymeter/core/Errors"
import * as Foreground from "@keymeter/core/Foreground"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Scope from "effect/Scope"
import { setPriority } from "node:os"
import { parentPort, Worker } from "node:worker_threads"
import type { Budget } from "./SqlError.js"
import { InvalidQuery, QueryBudgetExceeded } from "./SqlError.js"
import type { Answer, AnswerColumn } from "./SqlQuery.js"
import type { Request } from "./SqlRunner.js"
import { SqlRunner } from "./SqlRunner.js"

/** Default of {@link Options.foregroundMs}. */
export const DEFAULT_FOREGROUND_MS = 1000

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

/** What the thread posts once it takes queries: until then they run in-process. */
export interface Ready {
  readonly ready: true
}

/**
 * The thread's reply to an {@link Ask}: the answer, or, when the request asked for JSON, its columns
 * and its rows encoded (moved, not copied, to the serving thread).
 */
export type Reply =
  | { readonly id: number; readonly answer: Answer }
  | { readonly id: number; readonly columns: ReadonlyArray<AnswerColumn>; readonly json: Uint8Array }
  | { readonly id: number; readonly failure: Failure }

/** How the serving side starts and uses its thread. */
export interface Options {
  /** A new thread (see {@link spawn}). */
  readonly start: () => Worker
  /**
   * Ms since a hot path last ran within which a query goes to the thread (default 1,000). 0 sends
   * none; `Infinity` sends every one. Until the thread has said it takes queries ({@link Ready},
   * once its modules are loaded), they run in-process.
   */
  readonly foregroundMs?: number | undefined
  /**
   * Whether the thread starts with the layer and is not replaced when it stops (a replica: a new
   * thread would lack what the old one was sent; queries then run in-process). Otherwise it starts
   * at the first query it takes, and the next query after it stops starts another.
   */
  readonly eager?: boolean | undefined
}

/** The serving side: the runner, and the thread's port for what else the store sends it. */
export interface Host {
  readonly runner: SqlRunner["Type"]
  /** Posts to the thread, in order with the queries (false when there is no thread). */
  readonly post: (message: unknown, transfer?: ReadonlyArray<ArrayBuffer>) => boolean
}

/**
 * The thread of module `file` next to `here` (the caller's `import.meta.url`): the compiled module,
 * or, run from source (tests), the `.ts` one through tsx's loader.
 */
export const spawn = (here: string, file: string, workerData: unknown): Worker => {
  if (!here.endsWith(".ts")) return new Worker(new URL(`${file}.js`, here), { workerData })
  const source = new URL(`${file}.ts`, here).href
  return new Worker(
    `import("tsx/esm/api").then(({ register }) => { register(); return import(${JSON.stringify(source)}) })`,
    { eval: true, workerData, execArgv: ["--conditions=@keymeter/source"] }
  )
}

const errorOf = (failure: Failure) =>
  failure._tag === "InvalidQuery"
    ? new InvalidQuery({ message: failure.message, position: failure.position })
    : failure._tag === "QueryBudgetExceeded"
    ? new QueryBudgetExceeded({ budget: failure.budget as Budget, message: failure.message })
    : new StorageError({ message: failure.message })

/** The serving side, its thread stopped with the scope. */
export const make = (options: Options): Effect.Effect<Host, never, Scope.Scope> =>
  Effect.gen(function*() {
    const foregroundMs = options.foregroundMs ?? DEFAULT_FOREGROUND_MS
    let worker: Worker | undefined
    // The thread that said it takes queries: one still loading its modules (from source, through
    // tsx, seconds on a loaded machine) would keep the first queries waiting.
    let ready: Worker | undefined
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
      const thread = options.start()
      thread.unref()
      thread.on("message", (reply: Reply | Ready) => {
        if ("ready" in reply) ready = thread
        else settle(reply.id, reply)
      })
      // A thread that dies fails the queries it held.
      const stopped = (message: string) => {
        if (worker === thread) worker = undefined
        for (const id of [...pending.keys()]) settle(id, { _tag: "StorageError", message })
      }
      thread.on("error", (error) => stopped(`SQL analytics' worker stopped: ${error.message}`))
      thread.on("exit", () => stopped("SQL analytics' worker stopped"))
      return thread
    }
    if (options.eager === true) worker = start()
    yield* Effect.addFinalizer(() => Effect.promise(async () => void (await worker?.terminate())))

    const ask = (thread: Worker, request: Request) =>
      Effect.async<Answer, InvalidQuery | QueryBudgetExceeded | StorageError>((resume) => {
        const id = next++
        pending.set(id, (reply) =>
          resume(
            "_tag" in reply
              ? Effect.fail(errorOf(reply))
              : "answer" in reply
              ? Effect.succeed(reply.answer)
              : "json" in reply
              ? Effect.succeed(encoded(reply.columns, reply.json))
              : Effect.fail(errorOf(reply.failure))
          ))
        thread.ref()
        thread.postMessage({ id, request } satisfies Ask)
        // Its caller went away (a closed connection): the thread skips it, or stops it at its next
        // slice, rather than spend its budgets on an answer no one reads.
        return Effect.sync(() => {
          if (!pending.delete(id)) return
          worker?.postMessage({ cancel: id } satisfies Cancel)
          if (pending.size === 0) worker?.unref()
        })
      })

    const thread = (): Worker | undefined => worker ?? (options.eager === true ? undefined : (worker = start()))
    return {
      runner: SqlRunner.of({
        run: (request) => {
          if (foregroundMs !== Infinity && Foreground.idleFor() >= foregroundMs) return undefined
          const to = thread()
          return to === undefined || to !== ready ? undefined : ask(to, request)
        }
      }),
      post: (message, transfer) => {
        if (worker === undefined) return false
        worker.postMessage(message, transfer as Array<ArrayBuffer> | undefined)
        return true
      }
    }
  })

const decoder = new TextDecoder()

/** An answer of rows encoded as JSON, decoded when first read. */
const encoded = (columns: ReadonlyArray<AnswerColumn>, json: Uint8Array): Answer => {
  let rows: ReadonlyArray<Record<string, unknown>> | undefined
  return {
    columns,
    json,
    get rows() {
      return rows ??= JSON.parse(decoder.decode(json)) as ReadonlyArray<Record<string, unknown>>
    }
  }
}

const encoder = new TextEncoder()

/**
 * The reply of an answer. Asked for JSON, the rows are encoded here: a big answer's objects cost
 * the serving thread milliseconds to copy in and again to encode (2,730 rows: 3-8 ms), its bytes
 * nothing, moved with their buffer.
 */
const replyOf = (id: number, answer: Answer, json: boolean): [Reply, Array<ArrayBuffer>] => {
  if (json) {
    let bytes: Uint8Array | undefined
    try {
      bytes = encoder.encode(JSON.stringify(answer.rows))
    } catch {
      // A value JSON cannot write: the rows go as they are, for the caller to say so.
    }
    if (bytes !== undefined) return [{ id, columns: answer.columns, json: bytes }, [bytes.buffer as ArrayBuffer]]
  }
  return [{ id, answer }, []]
}

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

/** What the thread side is given: how to run a query, and what to do with the store's own messages. */
export interface Served {
  /** The serving thread's marks (`Foreground.shared`): queries keep to their share while it serves. */
  readonly foreground: SharedArrayBuffer
  /** Runs one query to its exit, interrupted when `signal` is raised. */
  readonly run: (request: Request, signal: AbortSignal) => Promise<Exit.Exit<Answer, unknown>>
  /** A message that is neither a query nor a cancel (a replica's feed), handled in arrival order. */
  readonly receive?: ((message: unknown) => void) | undefined
  /**
   * Whether queries start as they arrive, their slices interleaved by the lane as on the serving
   * thread, rather than one after another (a store whose reads share one connection must not).
   */
  readonly concurrent?: boolean | undefined
}

/**
 * The thread side, on a worker thread: queries run one after another (or at once, `concurrent`);
 * each has a signal its {@link Cancel} raises; a dropped query gets no reply.
 */
export const serve = (served: Served): void => {
  // The lane here steps aside while the serving thread's hot paths run, as it would there: the CPU
  // is shared (two cores serve the requests, their clients and this thread), the loop and heap not.
  Foreground.follow(served.foreground)
  // Linux gives each thread a nice value of its own: this one yields the CPU to the event loop's.
  try {
    setPriority(0, 19)
  } catch {
    // Not permitted, or not this system: the thread runs at the process's priority.
  }
  const signals = new Map<number, AbortController>()
  let queue: Promise<void> = Promise.resolve()
  parentPort!.on("message", (message: Ask | Cancel | object) => {
    if ("cancel" in message) {
      signals.get(message.cancel)?.abort()
      return
    }
    if (!("request" in message)) {
      served.receive?.(message)
      return
    }
    const { id, request } = message
    const controller = new AbortController()
    signals.set(id, controller)
    const answer = async () => {
      if (!controller.signal.aborted) {
        const exit = await served.run(request, controller.signal)
        if (!controller.signal.aborted) {
          const [reply, transfer] = Exit.isSuccess(exit)
            ? replyOf(id, exit.value, request.json === true)
            : [{ id, failure: failureOf(exit.cause) }, []]
          parentPort!.postMessage(reply, transfer)
        }
      }
      signals.delete(id)
    }
    if (served.concurrent === true) void answer()
    else queue = queue.then(answer)
  })
  parentPort!.postMessage({ ready: true } satisfies Ready)
}
