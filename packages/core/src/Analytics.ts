/**
 * Reading verification counts: `getVerifications`.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Aggregation from "./Aggregation.js"
import { Auth } from "./Auth.js"
import * as KnownApis from "./internal/KnownApis.js"
import type { Principal } from "./Permission.js"
import * as Permission from "./Permission.js"
import { Recorder } from "./Recorder.js"
import { Catalog, VerificationStore } from "./Storage.js"
import * as Validation from "./Validation.js"
import * as VerificationQuery from "./VerificationQuery.js"

/** Largest answer, in datapoints before `limit`, that a query may produce. */
export class MaxDatapoints extends Context.Reference<MaxDatapoints>()("@keymeter/core/Analytics/MaxDatapoints", {
  defaultValue: () => 100_000
}) {}

/** Answers analytics queries, pushing the aggregation down to the {@link VerificationStore}. */
export class Analytics extends Effect.Service<Analytics>()("@keymeter/core/Analytics", {
  effect: Effect.gen(function*() {
    const store = yield* VerificationStore
    const recorder = yield* Recorder
    const catalog = yield* Catalog
    const auth = yield* Auth
    const cap = yield* MaxDatapoints
    const decode = Validation.decode(VerificationQuery.VerificationQueryInput)
    const apis = KnownApis.make(catalog)

    /**
     * Validates the query, checks `api.*.read_api` or `api.<apiId>.read_api`, checks the api is in
     * the caller's workspace, then aggregates.
     */
    const getVerifications = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const decoded = yield* decode(input)
        const query = yield* VerificationQuery.normalize(decoded, yield* Clock.currentTimeMillis)
        yield* auth.authorize(principal, Permission.required.readApi(query.apiId))
        yield* apis.require(principal.workspaceId, query.apiId)
        // Verifications made before this read are counted by it.
        yield* recorder.flush
        const result = yield* store.aggregate({ ...query, workspaceId: principal.workspaceId, maxRows: cap })
        const rows = query.groupByTag === "tag" && result.tags !== undefined
          ? Aggregation.expandTags(query, result)
          : result
        return yield* Aggregation.finalize(query, rows, cap)
      })

    return { getVerifications } as const
  })
}) {}
