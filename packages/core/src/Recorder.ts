/**
 * Records the verifications keymeter makes itself (`keys.verifyKey`) without making them wait for
 * storage: events go to a bounded queue, and one writer stores whatever has gathered as one batch
 * (so concurrent verifications share a commit). A caller may wait for its event to be stored.
 * When the queue is full, verifications wait for room rather than lose events.
 */
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import type { StorageError } from "./Errors.js"
import { VerificationStore } from "./Storage.js"
import type { Verification } from "./Verification.js"

/** Events waiting at most; past it, recording waits for the writer. */
export class RecorderCapacity extends Context.Reference<RecorderCapacity>()("@keymeter/core/Recorder/Capacity", {
  defaultValue: () => 100_000
}) {}

/** Most events the writer stores in one batch. */
const BATCH = 10_000

interface Entry {
  readonly event: Verification
  readonly stored: Deferred.Deferred<void, StorageError> | undefined
}

/** Stores verification events in the background, in batches. */
export class Recorder extends Effect.Service<Recorder>()("@keymeter/core/Recorder", {
  scoped: Effect.gen(function*() {
    const store = yield* VerificationStore
    const queue = yield* Queue.bounded<Entry>(yield* RecorderCapacity)

    const write = (entries: ReadonlyArray<Entry>) =>
      store.append(entries.map((entry) => entry.event)).pipe(
        Effect.exit,
        Effect.flatMap((exit) =>
          Effect.zipRight(
            exit._tag === "Failure"
              ? Effect.logError(`${entries.length} verification events could not be stored`, exit.cause)
              : Effect.void,
            Effect.forEach(
              entries,
              (entry) => entry.stored === undefined ? Effect.void : Deferred.done(entry.stored, exit),
              { discard: true }
            )
          )
        )
      )

    // Interruptible only while waiting: a batch taken is always written, even at shutdown.
    yield* Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(restore(Queue.takeBetween(queue, 1, BATCH)), (chunk) => write(Array.from(chunk)))
    ).pipe(Effect.forever, Effect.forkScoped)
    // On shutdown, what is still queued is stored before the store closes.
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(Queue.takeAll(queue), (rest) => rest.length === 0 ? Effect.void : write(Array.from(rest)))
    )

    return {
      /** Queues `event`; with `durable`, completes once it is stored (failing if it could not be). */
      record: (event: Verification, durable: boolean): Effect.Effect<void, StorageError> =>
        durable
          ? Effect.flatMap(Deferred.make<void, StorageError>(), (stored) =>
            Effect.zipRight(Queue.offer(queue, { event, stored }), Deferred.await(stored)))
          : Effect.asVoid(Queue.offer(queue, { event, stored: undefined })),
      /** Queues `event` when there is room at once (true); false when `record` must wait for room. */
      recordNow: (event: Verification): boolean => queue.unsafeOffer({ event, stored: undefined })
    } as const
  })
}) {}
