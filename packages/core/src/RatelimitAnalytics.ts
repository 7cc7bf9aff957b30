/**
 * Reading rate-limit decision counts: `getRatelimits`, and each override's hits. Counts come from
 * the `RatelimitStore` through `RatelimitEvent`'s projection, read exactly as verification counts
 * are (`internal/CountReader`): one rule for windows, groupings, ordering, zero fill and limits.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { countReader } from "./Analytics.js"
import { Auth } from "./Auth.js"
import * as Checker from "./Checker.js"
import type { Busy, InsufficientPermissions, NotFound, QueryTooLarge, StorageError } from "./Errors.js"
import { ValidationError } from "./Errors.js"
import * as Span from "./internal/Span.js"
import { Overrides } from "./Overrides.js"
import type { Principal } from "./Permission.js"
import * as Permission from "./Permission.js"
import * as RatelimitQuery from "./RatelimitQuery.js"
import { RatelimitRecorder } from "./RatelimitRecorder.js"
import { RatelimitStore } from "./Storage.js"
import * as VerificationQuery from "./VerificationQuery.js"

/** How a query fails. */
type QueryError = ValidationError | InsufficientPermissions | NotFound | QueryTooLarge | StorageError | Busy

/** Answers rate-limit analytics queries, pushing the counting down to the {@link RatelimitStore}. */
export class RatelimitAnalytics extends Effect.Service<RatelimitAnalytics>()("@keymeter/core/RatelimitAnalytics", {
  effect: Effect.gen(function*() {
    const store = yield* RatelimitStore
    const recorder = yield* RatelimitRecorder
    const overrides = yield* Overrides
    const auth = yield* Auth
    // Dashboards' queries are well formed: the compiled check answers them (see `Checker.decode`).
    const decode = Checker.decode(RatelimitQuery.RatelimitQueryInput)
    const reader = yield* countReader(store, recorder, "rate-limit analytics reads")

    /**
     * The datapoints of a query (see `RatelimitQuery`): validated, the namespace found (by id or
     * name) once the caller holds `ratelimit.*.read_analytics` or
     * `ratelimit.<namespaceId>.read_analytics`, then counted.
     */
    const getRatelimits = (
      principal: Principal,
      input: unknown
    ): Effect.Effect<ReadonlyArray<RatelimitQuery.RatelimitDatapoint>, QueryError> =>
      Effect.gen(function*() {
        const decoded = yield* decode(input)
        if ((decoded.namespaceId === undefined) === (decoded.namespaceName === undefined)) {
          return yield* new ValidationError({
            message: decoded.namespaceId === undefined
              ? "namespaceId: either namespaceId or namespaceName is required"
              : "namespaceName: give namespaceId or namespaceName, not both"
          })
        }
        const now = yield* Clock.currentTimeMillis
        const required = Permission.required.readRatelimitAnalytics
        const namespace = yield* overrides.namespaceFor(principal, decoded, required, false)
        // Checked by id too: a namespace found by name is read only with its own permission.
        const anyOf = required(namespace.id)
        yield* auth.authorize(principal, anyOf)
        const query = yield* VerificationQuery.normalize(
          RatelimitQuery.toVerificationQuery(decoded, namespace.id),
          now
        )
        const key = reader.keyOf(principal.workspaceId, [namespace.id, decoded])
        const remembered = key === undefined ? undefined : reader.recall(principal, key, now)
        const points = remembered ?? (yield* reader.count(
          principal,
          query,
          key === undefined
            ? undefined
            : { key, anyOf, openEnded: decoded.end === undefined || decoded.end === null, now }
        ))
        return points.map(RatelimitQuery.fromDatapoint)
      }).pipe(Span.span("RatelimitAnalytics.getRatelimits"))

    return { getRatelimits } as const
  })
}) {}
