/**
 * Reading rate-limit decision counts: `getRatelimits`, and each override's hits. Counts come from
 * the `RatelimitStore` through `RatelimitEvent`'s projection, read exactly as verification counts
 * are (`internal/CountReader`): one rule for windows, groupings, ordering, zero fill and limits.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import { countReader } from "./Analytics.js"
import { Auth } from "./Auth.js"
import * as Checker from "./Checker.js"
import * as Decision from "./Decision.js"
import type { Busy, InsufficientPermissions, NotFound, QueryTooLarge, StorageError } from "./Errors.js"
import { ValidationError } from "./Errors.js"
import { Overrides } from "./Overrides.js"
import type { Principal } from "./Permission.js"
import * as Permission from "./Permission.js"
import * as RatelimitQuery from "./RatelimitQuery.js"
import type { RatelimitDatapoint } from "./RatelimitQuery.js"
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
    const clock = yield* Effect.clock
    // Dashboards' queries are well formed: the compiled check answers them (see `Checker.decode`).
    const decode = Checker.decode(RatelimitQuery.RatelimitQueryInput)
    const reader = yield* countReader(store, recorder, "rate-limit analytics reads")

    /**
     * The datapoints of a query (see `RatelimitQuery`): validated, the namespace found (by id or
     * name) once the caller holds `ratelimit.*.read_analytics` or
     * `ratelimit.<namespaceId>.read_analytics`, then counted. A decision (see `Decision`), as
     * `getVerifications` is: decided at once when memory holds the namespace and the answer (a
     * remembered one, or the store's from memory).
     */
    const getRatelimits = (
      principal: Principal,
      input: unknown
    ): Effect.Effect<ReadonlyArray<RatelimitQuery.RatelimitDatapoint>, QueryError> =>
      Decision.make(() =>
        Decision.andThen(decode(input), (decoded): Decision.Turn<ReadonlyArray<RatelimitDatapoint>, QueryError> => {
          if ((decoded.namespaceId === undefined) === (decoded.namespaceName === undefined)) {
            return Exit.fail(
              new ValidationError({
                message: decoded.namespaceId === undefined
                  ? "namespaceId: either namespaceId or namespaceName is required"
                  : "namespaceName: give namespaceId or namespaceName, not both"
              })
            )
          }
          const now = clock.unsafeCurrentTimeMillis()
          const required = Permission.required.readRatelimitAnalytics
          return Decision.andThen(overrides.namespaceTurn(principal, decoded, required, false), (
            namespace
          ): Decision.Turn<ReadonlyArray<RatelimitDatapoint>, QueryError> => {
            // Checked by id too: a namespace found by name is read only with its own permission.
            const anyOf = required(namespace.id)
            const denied = Decision.failed(auth.authorize(principal, anyOf))
            if (denied !== undefined) return denied
            const normalized = VerificationQuery.normalize(
              RatelimitQuery.toVerificationQuery(decoded, namespace.id),
              now
            )
            if (Either.isLeft(normalized)) return Exit.fail(normalized.left)
            const key = reader.keyOf(principal.workspaceId, [namespace.id, decoded])
            const remembered = key === undefined ? undefined : reader.recall(principal, key, now)
            if (remembered !== undefined) return Exit.succeed(remembered.map(RatelimitQuery.fromDatapoint))
            return Decision.andThen(
              reader.count(
                principal,
                normalized.right,
                key === undefined
                  ? undefined
                  : { key, anyOf, openEnded: decoded.end === undefined || decoded.end === null, now }
              ),
              (points) => Exit.succeed(points.map(RatelimitQuery.fromDatapoint))
            )
          })
        })
      )

    return { getRatelimits } as const
  })
}) {}
