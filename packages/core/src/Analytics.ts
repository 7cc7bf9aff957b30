/**
 * Reading verification counts: `getVerifications`.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Aggregation from "./Aggregation.js"
import { Auth } from "./Auth.js"
import type { Datapoint } from "./Datapoint.js"
import * as Decision from "./Decision.js"
import type { InsufficientPermissions, NotFound, QueryTooLarge, StorageError, ValidationError } from "./Errors.js"
import { Busy } from "./Errors.js"
import * as CompositeKey from "./internal/CompositeKey.js"
import * as KnownApis from "./internal/KnownApis.js"
import type { Principal } from "./Permission.js"
import * as Permission from "./Permission.js"
import { Recorder } from "./Recorder.js"
import { Catalog, VerificationStore } from "./Storage.js"
import * as Time from "./Time.js"
import * as Validation from "./Validation.js"
import * as VerificationQuery from "./VerificationQuery.js"

/** Largest answer, in datapoints before `limit`, that a query may produce. */
export class MaxDatapoints extends Context.Reference<MaxDatapoints>()("@keymeter/core/Analytics/MaxDatapoints", {
  defaultValue: () => 100_000
}) {}

/**
 * Analytics reads a workspace may have at work at once (computing, not remembered answers); more
 * fail with `Busy` at once. One workspace's large reads then cannot take the whole server.
 */
export class MaxReadsAtOnce extends Context.Reference<MaxReadsAtOnce>()("@keymeter/core/Analytics/MaxReadsAtOnce", {
  defaultValue: () => 8
}) {}

/**
 * Answers remembered at most (0: none; a benchmark of the stores themselves wants none). An
 * answer is given again for the same query while the store holds what it held.
 */
export class RememberedAnswers extends Context.Reference<RememberedAnswers>()(
  "@keymeter/core/Analytics/RememberedAnswers",
  { defaultValue: () => 1_024 }
) {}

/** The largest answer remembered, in datapoints. */
const REMEMBERED_DATAPOINTS = 2_000

/** An answer kept for the same query: valid while the store's revision holds. */
interface Remembered {
  readonly revision: number
  /** Unix ms from which it no longer holds (the hour ends, for a query whose `end` is now). */
  readonly until: number
  readonly apiId: string
  readonly answer: ReadonlyArray<Datapoint>
}

/** How a query fails. */
type QueryError = ValidationError | InsufficientPermissions | NotFound | QueryTooLarge | StorageError | Busy

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

/**
 * `input` frozen all through and known by identity from now on: a caller that asks the same
 * query object again and again (the HTTP lane keeps one per query string) saves writing it out as
 * the remembered answer's key on each asking.
 */
export const stable = <A extends object>(input: A): A => {
  if (!stableTexts.has(input)) stableTexts.set(freeze(input), JSON.stringify(input))
  return input
}

/** Answers analytics queries, pushing the aggregation down to the {@link VerificationStore}. */
export class Analytics extends Effect.Service<Analytics>()("@keymeter/core/Analytics", {
  effect: Effect.gen(function*() {
    const store = yield* VerificationStore
    const recorder = yield* Recorder
    const catalog = yield* Catalog
    const auth = yield* Auth
    const cap = yield* MaxDatapoints
    const maxReads = yield* MaxReadsAtOnce
    /** Reads at work per workspace. */
    const reading = new Map<string, number>()
    /** Runs `read` as one of the workspace's reads at work, or fails with Busy when it has its fill. */
    const oneRead = <A, E>(workspaceId: string, read: Effect.Effect<A, E>): Effect.Effect<A, E | Busy> =>
      Effect.suspend((): Effect.Effect<A, E | Busy> => {
        const now = reading.get(workspaceId) ?? 0
        if (now >= maxReads) {
          return Effect.fail(
            new Busy({
              message: `This workspace has ${maxReads} analytics reads at work already; retry in a moment`
            })
          )
        }
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
    const clock = yield* Effect.clock
    const decode = Validation.decode(VerificationQuery.VerificationQueryInput)
    const apis = KnownApis.make(catalog)
    // Dashboards ask the same queries again and again: the answer of the same query in the same
    // workspace is given again while the store has stored nothing since (its revision) and no
    // verification waits to be stored, after the same permission check. Stores others write to
    // (ClickHouse) have no revision, so nothing is remembered for them.
    const capacity = yield* RememberedAnswers
    const revision = capacity > 0 ? store.revision : undefined
    const remembered = new Map<string, Remembered>()
    /** Keys of queries asked once and not remembered yet. */
    const asked = new Set<string>()

    /** The key an input is remembered under; undefined when it has no JSON form. */
    const keyOf = (principal: Principal, input: unknown): string | undefined => {
      try {
        const text = (typeof input === "object" && input !== null ? stableTexts.get(input) : undefined) ??
          JSON.stringify(input)
        return text === undefined ? undefined : CompositeKey.make(principal.workspaceId, text)
      } catch {
        return undefined
      }
    }

    /** The remembered answer of `key` for this principal, if it still holds. */
    const recall = (principal: Principal, key: string) => {
      const hit = remembered.get(key)
      return hit !== undefined && hit.revision === revision!() && !recorder.pending() &&
          clock.unsafeCurrentTimeMillis() < hit.until &&
          Permission.allows(principal.permissions, Permission.required.readApi(hit.apiId))
        ? hit.answer
        : undefined
    }

    /**
     * Validates the query, checks `api.*.read_api` or `api.<apiId>.read_api`, checks the api is in
     * the caller's workspace, then aggregates.
     */
    const query = (principal: Principal, input: unknown, key: string | undefined) =>
      Effect.gen(function*(): Effect.fn.Return<ReadonlyArray<Datapoint>, QueryError> {
        const decoded = yield* decode(input)
        const now = yield* Clock.currentTimeMillis
        const query = yield* VerificationQuery.normalize(decoded, now)
        yield* auth.authorize(principal, Permission.required.readApi(query.apiId))
        yield* apis.require(principal.workspaceId, query.apiId)
        const [before, answer] = yield* oneRead(
          principal.workspaceId,
          Effect.gen(function*() {
            // Verifications made before this read are counted by it.
            yield* recorder.flush
            const before = revision?.()
            const result = yield* store.aggregate({ ...query, workspaceId: principal.workspaceId, maxRows: cap })
            const rows = query.groupByTag === "tag" && result.tags !== undefined
              ? Aggregation.expandTags(query, result)
              : result
            return [before, yield* Aggregation.finalize(query, rows, cap)] as const
          })
        )
        if (key === undefined || before === undefined || answer.length > REMEMBERED_DATAPOINTS) return answer
        // Remembered from its second asking: freezing and keeping an answer asked once (a dashboard
        // nobody shares, a window that moves) costs that request a third of its time.
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
          until: decoded.end === undefined || decoded.end === null ? Time.truncateToHour(now) + Time.HOUR : Infinity,
          apiId: query.apiId,
          answer: shared
        })
        return shared
      })

    /**
     * The datapoints of a query (see `VerificationQuery`). A decision (see `Decision`): an answer
     * remembered for the same query is given at once.
     */
    const getVerifications = (
      principal: Principal,
      input: unknown
    ): Effect.Effect<ReadonlyArray<Datapoint>, QueryError> =>
      Decision.make<ReadonlyArray<Datapoint>, QueryError, never>(() => {
        const key = revision === undefined ? undefined : keyOf(principal, input)
        const answer = key === undefined ? undefined : recall(principal, key)
        return answer !== undefined ? Exit.succeed(answer) : query(principal, input, key)
      })

    return { getVerifications } as const
  })
}) {}
