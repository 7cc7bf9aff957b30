/**
 * Records the verifications keymeter makes itself (`keys.verifyKey`) without making them wait for
 * storage: events go to a bounded queue, and one writer stores what has gathered within
 * {@link RecorderDelay} as one batch (a store's append costs about the same for one event as for
 * hundreds). A caller may wait for its event to be stored (`durable`), and analytics reads call
 * `flush` first, so a verification is counted by any read that starts after it: both make the
 * writer write at once. When the queue is full, verifications wait for room rather than lose events.
 */
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Queue from "effect/Queue"
import * as Decision from "./Decision.js"
import type { StorageError } from "./Errors.js"
import { VerificationStore } from "./Storage.js"
import type { Verification } from "./Verification.js"

/** Events waiting at most; past it, recording waits for the writer. */
export class RecorderCapacity extends Context.Reference<RecorderCapacity>()("@keymeter/core/Recorder/Capacity", {
  defaultValue: () => 100_000
}) {}

/**
 * Longest an event waits to be stored, in ms (unless a durable verification or an analytics read
 * makes the writer write at once): what a crash of the process can lose.
 */
export class RecorderDelay extends Context.Reference<RecorderDelay>()("@keymeter/core/Recorder/Delay", {
  defaultValue: () => 100
}) {}

/** Most events the writer stores in one batch. */
const BATCH = 10_000

/** An event (with who waits for it to be stored), or a `flush` waiting for everything before it. */
interface Entry {
  readonly event: Verification | undefined
  readonly stored: Deferred.Deferred<void, StorageError> | undefined
}

/** Stores verification events in the background, in batches. */
export class Recorder extends Effect.Service<Recorder>()("@keymeter/core/Recorder", {
  scoped: Effect.gen(function*() {
    const store = yield* VerificationStore
    const queue = yield* Queue.bounded<Entry>(yield* RecorderCapacity)
    const delay = yield* RecorderDelay
    // Done when someone waits for the writer; a new one for each batch.
    let hurry = Deferred.unsafeMake<void>(FiberId.none)
    // Events queued and not yet written (or failed to be). Counted from the offer, not read off the
    // queue: an event handed straight to the waiting writer is in no queue before it runs.
    let outstanding = 0

    const write = (entries: ReadonlyArray<Entry>) => {
      const events: Array<Verification> = []
      for (const entry of entries) if (entry.event !== undefined) events.push(entry.event)
      return (events.length === 0 ? Effect.exit(Effect.void) : Effect.exit(store.append(events))).pipe(
        Effect.tap(() => {
          outstanding -= events.length
        }),
        Effect.flatMap((exit) =>
          Effect.zipRight(
            exit._tag === "Failure"
              ? Effect.logError(`${events.length} verification events could not be stored`, exit.cause)
              : Effect.void,
            Effect.forEach(
              entries,
              (entry) => entry.stored === undefined ? Effect.void : Deferred.done(entry.stored, exit),
              { discard: true }
            )
          )
        )
      )
    }
    const urgent = (entries: ReadonlyArray<Entry>) => entries.some((entry) => entry.stored !== undefined)

    // Interruptible only while waiting: a batch taken is always written, even at shutdown.
    yield* Effect.uninterruptibleMask((restore) =>
      Effect.gen(function*() {
        hurry = Deferred.unsafeMake<void>(FiberId.none)
        const entries = Array.from(yield* restore(Queue.takeBetween(queue, 1, BATCH)))
        if (!urgent(entries) && entries.length < BATCH) {
          yield* Effect.exit(restore(Effect.raceFirst(Effect.sleep(delay), Deferred.await(hurry))))
          for (const entry of yield* Queue.takeUpTo(queue, BATCH - entries.length)) entries.push(entry)
        }
        yield* write(entries)
      })
    ).pipe(Effect.forever, Effect.forkScoped)
    // On shutdown, what is still queued is stored before the store closes.
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(Queue.takeAll(queue), (rest) => rest.length === 0 ? Effect.void : write(Array.from(rest)))
    )

    /** Offers `entry`, waiting for room; an event given up on (interrupted) is no longer counted. */
    const offer = (entry: Entry) =>
      Effect.suspend(() => {
        if (entry.event !== undefined) outstanding++
        return Effect.onInterrupt(Queue.offer(queue, entry), () =>
          Effect.sync(() => {
            if (entry.event !== undefined) outstanding--
          }))
      })

    const decideRecord = (event: Verification): Effect.Effect<void> => {
      const entry = { event, stored: undefined }
      if (!queue.unsafeOffer(entry)) return Effect.asVoid(offer(entry))
      outstanding++
      return Exit.void
    }

    const waitFor = (entry: Entry & { readonly stored: Deferred.Deferred<void, StorageError> }) =>
      Effect.zipRight(
        offer(entry),
        Effect.zipRight(Effect.sync(() => Deferred.unsafeDone(hurry, Exit.void)), Deferred.await(entry.stored))
      )

    return {
      /** Queues `event`; with `durable`, completes once it is stored (failing if it could not be). */
      record: (event: Verification, durable: boolean): Effect.Effect<void, StorageError> =>
        durable
          ? Effect.flatMap(Deferred.make<void, StorageError>(), (stored) => waitFor({ event, stored }))
          : Decision.make(() => decideRecord(event)),
      /**
       * `record` without `durable` as a decision (see `Decision`), for other decisions: queued when
       * called if there is room (an Exit), else the effect that waits for room.
       */
      decideRecord,
      /** Whether events are queued or being written: a read now would not count them all. */
      pending: (): boolean => outstanding > 0,
      /** Completes once every event queued before it is stored (or failed to be). */
      flush: Effect.suspend(() =>
        outstanding === 0
          ? Effect.void
          : Effect.flatMap(
            Deferred.make<void, StorageError>(),
            (stored) => Effect.ignore(waitFor({ event: undefined, stored }))
          )
      )
    } as const
  })
}) {}
