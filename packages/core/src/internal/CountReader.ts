/**
 * Reading counts from a store of events, as `Analytics` (verifications) and `RatelimitAnalytics`
 * (rate-limit decisions) both do: events recorded before a read are flushed first; a workspace
 * has a bounded number of reads at work; answers are finalized by `Aggregation` (zero fill, order,
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

  /** Runs `read` as one of the workspace's reads at work, or fails with Busy when it has its fill. */
  const oneRead = <A, E>(workspaceId: string, read: Effect.Effect<A, E>): Effect.Effect<A, E | Busy> =>
    Effect.suspend((): Effect.Effect<A, E | Busy> => {
      const now = reading.get(workspaceId) ?? 0
      if (now >= maxReads) return Effect.fail(busy())
      reading.set(workspaceId, now + 1)
      return Effect.ensuring(
        read,
        Effect.sync(() => {
          const left = reading.get(workspaceId)! - 1
          if (left === 0) reading.delete(workspaceId)
          else reading.set(workspaceId, left)
        })
      )
    })

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
        if ((reading.get(workspaceId) ?? 0) >= maxReads) return Exit.fail(busy())
        // Events recorded before this read are counted by it: while some wait, it waits for them.
        const turn = recorder.pending()
          ? Effect.zipRight(recorder.flush, read(workspaceId, query))
          : Decision.now(read(workspaceId, query))
        // A read decided now is over already; one that waits is at work until it ends.
        return Decision.andThen(
          Decision.isDecided(turn) ? turn : oneRead(workspaceId, turn),
          ([before, answer]) => Exit.succeed(kept(answer, before, remember))
        )
      })
  }
}
