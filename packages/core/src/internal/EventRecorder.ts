/**
 * The batching writer behind the recorders of verifications (`Recorder`) and of rate-limit
 * decisions (`RatelimitRecorder`): events go to a bounded queue, and one writer stores what has
 * gathered within `delay` as one batch (a store's append costs about the same for one event as for
 * hundreds). A caller may wait for its event to be stored (`durable`), and reads call `flush`
 * first, so an event is counted by any read that starts after it: both make the writer write at
 * once. When the queue is full, events wait for room rather than be lost.
 *
 * The queue is a plain array the writer takes from, not Effect's `Queue`: that is a linked list
 * whose taken nodes keep their successors reachable, so once one node was promoted every later one
 * could be, with its event (a heap profile of the serving thread at 3,000 requests/s found 41 MB of
 * nodes and 52 MB of verification events promoted in 90 s, left for a mark-compact to collect).
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import type * as Scope from "effect/Scope"
import * as Decision from "../Decision.js"
import type { StorageError } from "../Errors.js"

/** Most events the writer stores in one batch. */
const BATCH = 10_000

/**
 * What someone waits for: an event to be stored (`durable`), or with no event, everything queued
 * before it (a `flush`). Other events are queued bare: one allocation fewer per event.
 */
class Waited<A> {
  constructor(readonly event: A | undefined, readonly stored: Deferred.Deferred<void, StorageError>) {}
}

/** A queued event, or a {@link Waited} one. */
type Entry<A> = A | Waited<A>

/** A recorder of events of type `A`. */
export interface EventRecorder<A> {
  /** Queues `event`; with `durable`, completes once it is stored (failing if it could not be). */
  readonly record: (event: A, durable: boolean) => Effect.Effect<void, StorageError>
  /**
   * `record` without `durable` as a decision (see `Decision`), for other decisions: queued when
   * called if there is room (an Exit), else the effect that waits for room.
   */
  readonly decideRecord: (event: A) => Effect.Effect<void>
  /** Whether events are queued or being written: a read now would not count them all. */
  readonly pending: () => boolean
  /** Completes once every event queued before it is stored (or failed to be). */
  readonly flush: Effect.Effect<void>
}

/**
 * A recorder storing with `append`, holding at most `capacity` events, each waiting at most
 * `delay` ms; `what` names the events in logs. Its writer lives as long as the scope, and what is
 * still queued at the scope's end is stored before it ends.
 */
export const make = <A>(options: {
  readonly append: (events: ReadonlyArray<A>) => Effect.Effect<void, StorageError>
  readonly capacity: number
  readonly delay: number
  readonly what: string
}): Effect.Effect<EventRecorder<A>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { append, capacity, delay, what } = options
    // What is queued, in arrival order.
    let queued: Array<Entry<A>> = []
    // Done when the first entry arrives, while the writer waits for one.
    let arrived: Deferred.Deferred<void> | undefined
    // Callers waiting for room, in order, each let in once an entry is taken.
    const waiting: Array<Deferred.Deferred<void>> = []
    // Done when someone waits for the writer; a new one for each batch.
    let hurry = Deferred.unsafeMake<void>(FiberId.none)
    // Events queued and not yet written (or failed to be).
    let outstanding = 0

    const push = (entry: Entry<A>) => {
      if (!(entry instanceof Waited) || entry.event !== undefined) outstanding++
      queued.push(entry)
      if (arrived !== undefined) {
        Deferred.unsafeDone(arrived, Exit.void)
        arrived = undefined
      }
    }

    /** The first `n` entries (or all), taken out; as many callers waiting for room are let in. */
    const take = (n: number): Array<Entry<A>> => {
      let taken = queued
      if (queued.length <= n) queued = []
      else {
        taken = queued.slice(0, n)
        queued = queued.slice(n)
      }
      for (let room = capacity - queued.length; room > 0 && waiting.length > 0; room--) {
        Deferred.unsafeDone(waiting.shift()!, Exit.void)
      }
      return taken
    }

    const write = (entries: ReadonlyArray<Entry<A>>) => {
      const events: Array<A> = []
      for (const entry of entries) {
        if (!(entry instanceof Waited)) events.push(entry)
        else if (entry.event !== undefined) events.push(entry.event)
      }
      return (events.length === 0 ? Effect.exit(Effect.void) : Effect.exit(append(events))).pipe(
        Effect.tap(() => {
          outstanding -= events.length
        }),
        Effect.flatMap((exit) =>
          Effect.zipRight(
            exit._tag === "Failure"
              ? Effect.logError(`${events.length} ${what} events could not be stored`, exit.cause)
              : Effect.void,
            Effect.forEach(
              entries,
              (entry) => entry instanceof Waited ? Deferred.done(entry.stored, exit) : Effect.void,
              { discard: true }
            )
          )
        )
      )
    }

    /** Whether someone waits for an entry among the next batch. */
    const urgent = () => {
      for (let i = 0; i < queued.length && i < BATCH; i++) if (queued[i] instanceof Waited) return true
      return false
    }

    const firstArrival = Effect.suspend(() => {
      if (queued.length > 0) return Effect.void
      arrived = Deferred.unsafeMake<void>(FiberId.none)
      return Deferred.await(arrived)
    })

    // Interruptible only while waiting: a batch taken is always written, even at shutdown.
    yield* Effect.uninterruptibleMask((restore) =>
      Effect.gen(function*() {
        hurry = Deferred.unsafeMake<void>(FiberId.none)
        yield* restore(firstArrival)
        if (!urgent() && queued.length < BATCH) {
          yield* Effect.exit(restore(Effect.raceFirst(Effect.sleep(delay), Deferred.await(hurry))))
        }
        yield* write(take(BATCH))
      })
    ).pipe(Effect.forever, Effect.forkScoped)
    // On shutdown, what is still queued is stored before the store closes.
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => queued.length === 0 ? Effect.void : write(take(queued.length)))
    )

    /** Queues `entry`, waiting for room (first in line again when room it was let in for went to another). */
    const offer = (entry: Entry<A>, again = false): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (queued.length < capacity) return Effect.sync(() => push(entry))
        const room = Deferred.unsafeMake<void>(FiberId.none)
        if (again) waiting.unshift(room)
        else waiting.push(room)
        return Effect.zipRight(
          Effect.onInterrupt(Deferred.await(room), () =>
            Effect.sync(() => {
              const at = waiting.indexOf(room)
              if (at >= 0) waiting.splice(at, 1)
            })),
          offer(entry, true)
        )
      })

    const decideRecord = (event: A): Effect.Effect<void> => {
      if (queued.length >= capacity) return offer(event)
      push(event)
      return Exit.void
    }

    const waitFor = (entry: Waited<A>) =>
      Effect.zipRight(
        offer(entry),
        Effect.zipRight(Effect.sync(() => Deferred.unsafeDone(hurry, Exit.void)), Deferred.await(entry.stored))
      )

    return {
      record: (event, durable) =>
        durable
          ? Effect.flatMap(Deferred.make<void, StorageError>(), (stored) => waitFor(new Waited(event, stored)))
          : Decision.make(() => decideRecord(event)),
      decideRecord,
      pending: () => outstanding > 0,
      flush: Effect.suspend(() =>
        outstanding === 0
          ? Effect.void
          : Effect.flatMap(
            Deferred.make<void, StorageError>(),
            (stored) => Effect.ignore(waitFor(new Waited<A>(undefined, stored)))
          )
      )
    }
  })
