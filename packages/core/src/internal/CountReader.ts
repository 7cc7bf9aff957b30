/**
 * Reading counts from a store of events, as `Analytics` (verifications) and `RatelimitAnalytics`
 * (rate-limit decisions) both do: events recorded before a read are flushed first; a workspace
 * has a bounded number of reads at work, and a bounded number waiting briefly for one of them;
 * answers are finalized by `Aggregation` (zero fill, order,
 * limit, cap); and an answer asked twice is remembered while the store holds what it held.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Aggregation from "../Aggregation.js"
import type { Datapoint } from "../Datapoint.js"
import * as Decision from "../Decision.js"
import { Busy } from "../Errors.js"
import type { QueryTooLarge, StorageError } from "../Errors.js"
import type { Principal } from "../Permission.js"
import * as Permission from "../Permission.js"
import * as Time from "../Time.js"
import type { VerificationQuery } from "../VerificationQuery.js"
import * as CompositeKey from "./CompositeKey.js"

/** Reads that may wait for a slot of their workspace's, per slot (see `slot`). */
export const WAITING_PER_SLOT = 4

/** How long a read waits for a slot at most, before it is refused Busy. */
export const WAIT_MS = 2_000

/** The largest answer remembered, in datapoints. */
const REMEMBERED_DATAPOINTS = 2_000

/** An answer kept for the same query: valid while the store's revision holds. */
interface Remembered {
  readonly revision: number
  /** Unix ms from which it no longer holds (the hour ends, for a query whose `end` is now). */
  readonly until: number
  /** The permissions of which a caller must hold one to be given it. */
  readonly anyOf: ReadonlyArray<string>
  readonly answer: ReadonlyArray<Datapoint>
}

/** `value` and everything in it, frozen. */
const freeze = <A>(value: A): A => {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) freeze(inner)
    Object.freeze(value)
  }
  return value
}

/** JSON of the inputs made {@link stable}: frozen all through, so their text cannot change. */
const stableTexts = new WeakMap<object, string>()

/** `input` frozen all through and known by identity from now on (see `Analytics.stable`). */
export const stable = <A extends object>(input: A): A => {
  if (!stableTexts.has(input)) stableTexts.set(freeze(input), JSON.stringify(input))
  return input
}

/** Where counts come from, and the reader's bounds. */
export interface Options {
  readonly aggregate: (query: Aggregation.AggregationQuery) => Effect.Effect<
    Aggregation.AggregationResult,
    StorageError | QueryTooLarge
  >
  /** The store's revision; none: nothing is remembered. */
  readonly revision: (() => number) | undefined
  /** The recorder feeding the store. */
  readonly recorder: { readonly flush: Effect.Effect<void>; readonly pending: () => boolean }
  readonly maxDatapoints: number
  readonly maxReadsAtOnce: number
  /** Answers remembered at most (0: none). */
  readonly remembered: number
  /** What the reads count, for `Busy`'s message ("analytics reads", …). */
  readonly what: string
}

/** What one read remembers its answer by, if anything. */
export interface Remember {
  /** The query's key (see `keyOf`). */
  readonly key: string
  /** Permissions of which a later caller must hold one to be given the answer. */
  readonly anyOf: ReadonlyArray<string>
  /** Whether the query's end was now (its answer then holds only until the hour ends). */
  readonly openEnded: boolean
  /** The time the query was normalized at. */
  readonly now: number
}

/** A reader of counts over one store. */
export const make = (options: Options) => {
  const { maxDatapoints: cap, maxReadsAtOnce: maxReads, recorder } = options
  const capacity = options.remembered
  const revision = capacity > 0 ? options.revision : undefined
  /** Reads at work per workspace. */
  const reading = new Map<string, number>()
  const remembered = new Map<string, Remembered>()
  /** Keys of queries asked once and not remembered yet. */
  const asked = new Set<string>()

  const busy = () =>
    new Busy({ message: `This workspace has ${maxReads} ${options.what} at work already; retry in a moment` })

  /**
   * Reads waiting for one of their workspace's slots, oldest first: each a function that hands it
   * the slot a read at work gives up (see `release`).
   */
  const waiting = new Map<string, Array<() => void>>()

  /** Gives up a slot of `workspaceId`: to the oldest read waiting for one, else back to the pool. */
  const release = (workspaceId: string): void => {
    const queue = waiting.get(workspaceId)
    const next = queue?.shift()
    if (queue !== undefined && queue.length === 0) waiting.delete(workspaceId)
    if (next !== undefined) return next()
    const left = reading.get(workspaceId)! - 1
    if (left === 0) reading.delete(workspaceId)
    else reading.set(workspaceId, left)
  }

  /**
   * A slot of `workspaceId`'s reads at work: at once while it has one free; else, while fewer than
   * {@link WAITING_PER_SLOT} times its slots already wait, the first one given up within
   * {@link WAIT_MS}; else Busy. A dashboard's panels asked together wait their turn; a workspace
   * that asks more than it is answered is told to slow down.
   */
  const slot = (workspaceId: string): Effect.Effect<void, Busy> =>
    Effect.suspend((): Effect.Effect<void, Busy> => {
      const now = reading.get(workspaceId) ?? 0
      if (now < maxReads) {
        reading.set(workspaceId, now + 1)
        return Effect.void
      }
      const queue = waiting.get(workspaceId) ?? []
      if (queue.length >= maxReads * WAITING_PER_SLOT) return Effect.fail(busy())
      waiting.set(workspaceId, queue)
      let handed = false
      return Effect.async<void>((resume) => {
        const take = () => {
          handed = true
          resume(Effect.void)
        }
        queue.push(take)
        // Given up waiting (its time is up, or its caller left): out of the queue, or, when the slot
        // was handed over meanwhile, that slot given up in turn.
        return Effect.sync(() => {
          if (handed) return release(workspaceId)
          const at = queue.indexOf(take)
          if (at >= 0) queue.splice(at, 1)
          if (queue.length === 0 && waiting.get(workspaceId) === queue) waiting.delete(workspaceId)
        })
      }).pipe(Effect.timeoutFail({ duration: WAIT_MS, onTimeout: busy }))
    })

  /** Runs `read` in one of the workspace's slots of reads at work (see {@link slot}). */
  const oneRead = <A, E>(workspaceId: string, read: Effect.Effect<A, E>): Effect.Effect<A, E | Busy> =>
    // Waiting and reading may be interrupted; between the slot taken and its release set, nothing.
    Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(
        restore(slot(workspaceId)),
        () => Effect.ensuring(restore(read), Effect.sync(() => release(workspaceId)))
      )
    )

  /** The store's answer to `query` and its revision before it (a decision: decided when the store answers now). */
  const read = (workspaceId: string, query: VerificationQuery) =>
    Decision.make(() => {
      const before = revision?.()
      // One object for the store and the answer: the engine's warm-up asks both with its kind.
      const asked = Aggregation.aggregationQuery(query, workspaceId, cap)
      return Decision.andThen(
        options.aggregate(asked),
        (result) => {
          const answer = Aggregation.answer(asked, result, cap)
          return Either.isRight(answer) ? Exit.succeed([before, answer.right] as const) : Exit.fail(answer.left)
        }
      )
    })

  /** Events recorded before a read are counted by it: while some wait to be stored, it waits for them. */
  const turnOf = (workspaceId: string, query: VerificationQuery) =>
    recorder.pending()
      ? Effect.zipRight(recorder.flush, read(workspaceId, query))
      : Decision.now(read(workspaceId, query))

  /** `answer`, remembered when `remember` asks it (see {@link make}'s `recall`). */
  const kept = (
    answer: ReadonlyArray<Datapoint>,
    before: number | undefined,
    remember: Remember | undefined
  ): ReadonlyArray<Datapoint> => {
    if (remember === undefined || before === undefined || answer.length > REMEMBERED_DATAPOINTS) return answer
    // Remembered from its second asking: freezing and keeping an answer asked once (a dashboard
    // nobody shares, a window that moves) costs that request a third of its time.
    const { key } = remember
    if (!asked.has(key)) {
      if (asked.size >= capacity * 4) asked.clear()
      asked.add(key)
      return answer
    }
    // Given to every caller of the same query from now on: frozen, so no caller can change it.
    const shared = freeze(answer)
    if (remembered.size >= capacity) remembered.delete(remembered.keys().next().value!)
    remembered.set(key, {
      revision: before,
      until: remember.openEnded ? Time.truncateToHour(remember.now) + Time.HOUR : Infinity,
      anyOf: remember.anyOf,
      answer: shared
    })
    return shared
  }

  return {
    /** Whether answers may be remembered at all (the store has a revision). */
    remembers: revision !== undefined,
    /** The key an input is remembered under in `scope` (a workspace, …); undefined when it has no JSON form. */
    keyOf: (scope: string, input: unknown): string | undefined => {
      if (revision === undefined) return undefined
      try {
        const text = (typeof input === "object" && input !== null ? stableTexts.get(input) : undefined) ??
          JSON.stringify(input)
        return text === undefined ? undefined : CompositeKey.make(scope, text)
      } catch {
        return undefined
      }
    },
    /** The remembered answer of `key` for this principal at `now`, if it still holds. */
    recall: (principal: Principal, key: string, now: number): ReadonlyArray<Datapoint> | undefined => {
      const hit = remembered.get(key)
      return hit !== undefined && hit.revision === revision!() && !recorder.pending() && now < hit.until &&
          Permission.allows(principal.permissions, hit.anyOf)
        ? hit.answer
        : undefined
    },
    /**
     * The datapoints of `query` in the principal's workspace (checked already), remembered per
     * `remember`. A decision (see `Decision`): decided at once when the store answers from memory
     * and no event waits to be stored; otherwise a read at work until it ends.
     */
    count: (
      principal: Principal,
      query: VerificationQuery,
      remember: Remember | undefined
    ): Effect.Effect<ReadonlyArray<Datapoint>, StorageError | QueryTooLarge | Busy> =>
      Decision.make(() => {
        const workspaceId = principal.workspaceId
        const answered = ([before, answer]: readonly [number | undefined, Array<Datapoint>]) =>
          kept(answer, before, remember)
        // Every slot at work: this read waits for one (see `slot`), then reads in it.
        if ((reading.get(workspaceId) ?? 0) >= maxReads) {
          return Effect.map(oneRead(workspaceId, Effect.suspend(() => turnOf(workspaceId, query))), answered)
        }
        const turn = turnOf(workspaceId, query)
        // A read decided now is over already; one that waits is at work until it ends.
        return Decision.andThen(
          Decision.isDecided(turn) ? turn : oneRead(workspaceId, turn),
          (result) => Exit.succeed(answered(result))
        )
      })
  }
}
