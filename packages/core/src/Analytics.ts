/**
 * Reading verification counts: `getVerifications`.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import { Auth } from "./Auth.js"
import * as Checker from "./Checker.js"
import type { Datapoint } from "./Datapoint.js"
import * as Decision from "./Decision.js"
import type { Busy, InsufficientPermissions, NotFound, QueryTooLarge, StorageError, ValidationError } from "./Errors.js"
import * as CountReader from "./internal/CountReader.js"
import * as KnownApis from "./internal/KnownApis.js"
import type { Principal } from "./Permission.js"
import * as Permission from "./Permission.js"
import { Recorder } from "./Recorder.js"
import { Catalog, VerificationStore } from "./Storage.js"
import * as VerificationQuery from "./VerificationQuery.js"

/** Largest answer, in datapoints before `limit`, that a query may produce. */
export class MaxDatapoints extends Context.Reference<MaxDatapoints>()("@keymeter/core/Analytics/MaxDatapoints", {
  defaultValue: () => 100_000
}) {}

/**
 * Analytics reads a workspace may have at work at once (computing, not remembered answers); four
 * times as many more wait up to 2 s for a turn, the rest fail with `Busy` at once. One workspace's
 * large reads then cannot take the whole server, and a dashboard's panels asked together are not
 * refused for it.
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

/** How a query fails. */
type QueryError = ValidationError | InsufficientPermissions | NotFound | QueryTooLarge | StorageError | Busy

/**
 * `input` frozen all through and known by identity from now on: a caller that asks the same
 * query object again and again (the HTTP lane keeps one per query string) saves writing it out as
 * the remembered answer's key on each asking.
 */
export const stable = CountReader.stable

/**
 * A reader of the counts of `store`, fed by `recorder`, under this module's bounds
 * ({@link MaxDatapoints}, {@link MaxReadsAtOnce}, {@link RememberedAnswers}); `what` names its reads
 * in `Busy`'s message.
 */
export const countReader = (
  store: {
    readonly aggregate: CountReader.Options["aggregate"]
    readonly revision?: (() => number) | undefined
  },
  recorder: CountReader.Options["recorder"],
  what: string
) =>
  Effect.gen(function*() {
    return CountReader.make({
      aggregate: store.aggregate,
      revision: store.revision,
      recorder,
      maxDatapoints: yield* MaxDatapoints,
      maxReadsAtOnce: yield* MaxReadsAtOnce,
      remembered: yield* RememberedAnswers,
      what
    })
  })

/** Answers analytics queries, pushing the aggregation down to the {@link VerificationStore}. */
export class Analytics extends Effect.Service<Analytics>()("@keymeter/core/Analytics", {
  effect: Effect.gen(function*() {
    const store = yield* VerificationStore
    const recorder = yield* Recorder
    const catalog = yield* Catalog
    const auth = yield* Auth
    const clock = yield* Effect.clock
    // Dashboards' queries are well formed: the compiled check answers them (see `Checker.decode`).
    const decode = Checker.decode(VerificationQuery.VerificationQueryInput)
    const apis = KnownApis.make(catalog)
    // Dashboards ask the same queries again and again: the answer of the same query in the same
    // workspace is given again while the store has stored nothing since (its revision) and no
    // verification waits to be stored, after the same permission check. Stores others write to
    // (ClickHouse) have no revision, so nothing is remembered for them.
    const reader = yield* countReader(store, recorder, "analytics reads")

    /**
     * Validates the query, checks `api.*.read_api` or `api.<apiId>.read_api`, checks the api is in
     * the caller's workspace, then aggregates: a turn of the decision below, decided at once when
     * memory holds the api and the store answers from memory.
     */
    const query = (
      principal: Principal,
      input: unknown,
      key: string | undefined
    ): Decision.Turn<ReadonlyArray<Datapoint>, QueryError> =>
      Decision.andThen(decode(input), (decoded): Decision.Turn<ReadonlyArray<Datapoint>, QueryError> => {
        const now = clock.unsafeCurrentTimeMillis()
        const normalized = VerificationQuery.normalize(decoded, now)
        if (Either.isLeft(normalized)) return Exit.fail(normalized.left)
        const query = normalized.right
        const anyOf = Permission.required.readApi(query.apiId)
        const refused = Decision.failed(auth.authorize(principal, anyOf)) ??
          apis.decideKnown(principal.workspaceId, query.apiId)
        if (refused !== undefined) return refused
        return Decision.now(reader.count(
          principal,
          query,
          key === undefined
            ? undefined
            : { key, anyOf, openEnded: decoded.end === undefined || decoded.end === null, now }
        ))
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
        const key = reader.keyOf(principal.workspaceId, input)
        const answer = key === undefined ? undefined : reader.recall(principal, key, clock.unsafeCurrentTimeMillis())
        return answer !== undefined ? Exit.succeed(answer) : query(principal, input, key)
      })

    return { getVerifications } as const
  })
}) {}
