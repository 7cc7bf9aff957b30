/**
 * Group commit, for storage adapters: concurrent `offer` calls queue up and one writer stores
 * what is queued (up to `maxEvents`) with a single `write`, then answers every caller with that
 * outcome, so a call completes only once its events are stored and fails with all the others of a
 * failed write. Only the wait for work can be interrupted: a taken batch is always written (or
 * failed) and always answered. Calls still queued when the scope closes fail.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import { StorageError } from "./Errors.js"
import type { Receipt } from "./Idempotency.js"

/** How the writer runs, for events of type `A` (verifications, rate-limit decisions, …). */
export interface Options<A> {
  /**
   * Stores one batch and the receipts of the keyed calls in it, all or nothing; each receipt
   * comes with where its call's events are in the batch.
   */
  readonly write: (
    events: ReadonlyArray<A>,
    keyed: ReadonlyArray<Keyed>
  ) => Effect.Effect<void, StorageError>
  /** Events one write takes at most (calls are never split: one call may exceed it alone). */
  readonly maxEvents: number
  /**
   * Events waiting to be written beyond which new calls fail at once rather than queue (the store
   * behind is down or not keeping up). Default: no bound in events; past 1,024 waiting calls,
   * callers wait for room.
   */
  readonly maxBuffered?: number | undefined
  /** Runs after every successful write. */
  readonly afterWrite?: Effect.Effect<void> | undefined
  /** Runs whenever the writer has had nothing to do for `ms`. */
  readonly whenIdle?: { readonly ms: number; readonly run: Effect.Effect<void> } | undefined
}

/** A keyed call in a batch: its receipt, and its events as `batch.slice(from, from + count)`. */
export interface Keyed {
  readonly receipt: Receipt
  readonly from: number
  readonly count: number
}

interface Pending<A> {
  readonly events: ReadonlyArray<A>
  readonly receipt: Receipt | undefined
  readonly done: Deferred.Deferred<void, StorageError>
}

/** Completes once the event loop has run the I/O callbacks now pending (a `setImmediate`). */
const afterPendingIo = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/** Starts the writer for the life of the scope; returns `offer`, which stores a batch through it. */
export const make = <A>(
  options: Options<A>
): Effect.Effect<
  (events: ReadonlyArray<A>, receipt?: Receipt) => Effect.Effect<void, StorageError>,
  never,
  Scope.Scope
> =>
  Effect.gen(function*() {
    const queue = yield* Queue.bounded<Pending<A>>(1024)
    let buffered = 0
    const take = options.whenIdle === undefined
      ? Effect.map(Queue.take(queue), Option.some)
      : Effect.timeoutOption(Queue.take(queue), options.whenIdle.ms)
    const round = Effect.uninterruptibleMask((restore) =>
      Effect.gen(function*() {
        const first = yield* restore(take)
        if (Option.isNone(first)) return yield* options.whenIdle!.run
        // Let the event loop read what arrived meanwhile (a synchronous write, SQLite's, blocks
        // it), so the calls it brings join this batch rather than each waiting for its own write.
        yield* afterPendingIo
        const batch = [first.value]
        let events = first.value.events.length
        while (events < options.maxEvents) {
          const next = yield* Queue.poll(queue)
          if (Option.isNone(next)) break
          batch.push(next.value)
          events += next.value.events.length
        }
        const all = batch.length === 1 ? batch[0]!.events : batch.flatMap((pending) => pending.events)
        const keyed: Array<Keyed> = []
        let from = 0
        for (const pending of batch) {
          if (pending.receipt !== undefined) {
            keyed.push({ receipt: pending.receipt, from, count: pending.events.length })
          }
          from += pending.events.length
        }
        const exit = yield* Effect.exit(options.write(all, keyed))
        buffered -= events
        yield* Effect.forEach(batch, (pending) => Deferred.done(pending.done, exit), { discard: true })
        if (Exit.isSuccess(exit) && options.afterWrite !== undefined) yield* options.afterWrite
      })
    )
    yield* Effect.forkScoped(Effect.forever(round))
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(Queue.takeAll(queue), (left) =>
        Effect.forEach(
          left,
          (pending) => Deferred.fail(pending.done, new StorageError({ message: "The store is shutting down" })),
          { discard: true }
        ))
    )
    return (events: ReadonlyArray<A>, receipt?: Receipt) =>
      Effect.suspend(() => {
        if (events.length === 0 && receipt === undefined) return Effect.void
        if (options.maxBuffered !== undefined && buffered + events.length > options.maxBuffered) {
          return Effect.fail(
            new StorageError({ message: `The store is not keeping up: ${buffered} events are waiting to be stored` })
          )
        }
        buffered += events.length
        return Effect.flatMap(Deferred.make<void, StorageError>(), (done) =>
          Queue.offer(queue, { events, receipt, done }).pipe(
            // Interrupted while waiting for room: never queued, so never counted down by the writer.
            Effect.onInterrupt(() => Effect.sync(() => (buffered -= events.length))),
            Effect.zipRight(Deferred.await(done))
          ))
      })
  })
