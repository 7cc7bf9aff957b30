/**
 * Calls that wait for a commit, made one transaction: concurrent calls queue up and one writer
 * runs what is queued (up to `max`) with a single `run`, then answers each call with its own
 * result, or every call with the batch's failure. On SQLite a commit costs a sync to disk, so 32
 * callers each committing alone wait for 32 syncs; together they wait for one or two.
 */
import * as Chunk from "effect/Chunk"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"

/** Completes once the event loop has run the I/O callbacks now pending (a `setImmediate`). */
const afterPendingIo = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

interface Pending<I, O, E> {
  readonly input: I
  readonly done: Deferred.Deferred<O, E>
}

/**
 * Starts the writer for the life of the scope. `run` gets the queued inputs in the order they
 * came and answers one result each, in that order. Only the wait for work can be interrupted: a
 * taken batch is always run and answered.
 */
export const make = <I, O, E>(
  run: (inputs: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<O>, E>,
  max: number,
  options: {
    /**
     * Once a call waits, let the event loop run the I/O already pending (a `setImmediate`) before
     * taking the batch: requests that arrived meanwhile join it. For calls that come at the end of
     * a request's many steps, which a synchronous commit would otherwise take one at a time.
     */
    readonly gather?: boolean | undefined
  } = {}
): Effect.Effect<(input: I) => Effect.Effect<O, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<Pending<I, O, E>>()
    yield* Effect.addFinalizer(() => Queue.shutdown(queue))
    const first = Queue.takeBetween(queue, 1, max)
    const take = options.gather === true
      ? Effect.flatMap(first, (chunk) =>
        chunk.length >= max
          ? Effect.succeed(chunk)
          : Effect.zipRight(
            afterPendingIo,
            Effect.map(Queue.takeUpTo(queue, max - chunk.length), (rest) => Chunk.appendAll(chunk, rest))
          ))
      : first
    yield* Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(restore(take), (chunk) => {
        const batch = Array.from(chunk)
        return Effect.flatMap(Effect.exit(run(batch.map((pending) => pending.input))), (exit) =>
          Effect.forEach(
            batch,
            (pending, i) =>
              Deferred.done(
                pending.done,
                Exit.isSuccess(exit) ? Exit.succeed(exit.value[i] as O) : Exit.failCause(exit.cause)
              ),
            { discard: true }
          ))
      })
    ).pipe(Effect.forever, Effect.forkScoped)
    return (input: I) =>
      Effect.flatMap(
        Deferred.make<O, E>(),
        (done) => Effect.zipRight(Queue.offer(queue, { input, done }), Deferred.await(done))
      )
  })
