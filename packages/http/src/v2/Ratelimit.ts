/**
 * Unkey v2's rate limits on the wire (`/v2/ratelimit.*`), as `@unkey/api@2.5.1` types them, and
 * their mappers onto core's: a namespace is named by one string, its name or its id.
 */
import { LimitInput } from "@keymeter/core/Limit"
import { MAX_NAME_LENGTH } from "@keymeter/core/Namespace"
import type { OverrideView } from "@keymeter/core/Override"
import { Duration, Identifier } from "@keymeter/core/Override"
import * as Validation from "@keymeter/core/Validation"
import * as Schema from "effect/Schema"

const Namespace = Validation.boundedString("a namespace id or name", 1, MAX_NAME_LENGTH).annotations({
  description: "The namespace's id (rlns_...) or its name."
})

/**
 * The core fields naming the namespace v2 names: core looks a name up as a name, then (when it has
 * an id's prefix) as an id.
 */
const namespaceOf = (namespace: string) => ({ namespaceName: namespace })

/** Body of `ratelimit.limit`, and each item of `ratelimit.multiLimit`. */
export const LimitRequest = Schema.Struct({
  namespace: Namespace,
  identifier: LimitInput.fields.identifier,
  limit: LimitInput.fields.limit,
  duration: LimitInput.fields.duration,
  cost: LimitInput.fields.cost
}).annotations({ identifier: "V2LimitRequest" })
export type LimitRequest = typeof LimitRequest.Type

/** The core input of a v2 limit. */
export const toLimit = (request: LimitRequest) => ({
  namespace: request.namespace,
  identifier: request.identifier,
  limit: request.limit,
  duration: request.duration,
  cost: request.cost
})

/** Answer of `ratelimit.limit`. */
export const LimitResponseData = Schema.Struct({
  limit: Schema.Number,
  remaining: Schema.Number,
  reset: Schema.Number.annotations({ description: "Unix ms when the window frees again." }),
  success: Schema.Boolean,
  overrideId: Schema.optional(Schema.String)
}).annotations({ identifier: "V2LimitResponseData" })

/** Most checks one `ratelimit.multiLimit` takes. */
export const MAX_MULTI_LIMIT = 100

/** Body of `ratelimit.multiLimit`: an array of limits. */
export const MultiLimitRequest = Schema.Array(LimitRequest).pipe(
  Schema.minItems(1, { message: () => "must hold at least 1 limit" }),
  Schema.maxItems(MAX_MULTI_LIMIT, { message: () => `must hold at most ${MAX_MULTI_LIMIT} limits` })
).annotations({ identifier: "V2MultiLimitRequest" })

/** Answer of `ratelimit.multiLimit`. */
export const MultiLimitResponseData = Schema.Struct({
  passed: Schema.Boolean,
  limits: Schema.Array(Schema.Struct({
    namespace: Schema.String,
    identifier: Schema.String,
    limit: Schema.Number,
    remaining: Schema.Number,
    reset: Schema.Number,
    passed: Schema.Boolean,
    overrideId: Schema.optional(Schema.String)
  }))
}).annotations({ identifier: "V2MultiLimitResponseData" })

/** Body of `ratelimit.setOverride`. */
export const SetOverrideRequest = Schema.Struct({
  namespace: Namespace,
  identifier: Identifier,
  limit: Validation.expected(
    Schema.Number.pipe(Schema.int(), Schema.between(0, Number.MAX_SAFE_INTEGER)),
    "must be an integer >= 0"
  ),
  duration: Duration
}).annotations({ identifier: "V2SetOverrideRequest" })

/** The core input of a v2 `setOverride`. */
export const toSetOverride = ({ namespace, ...rest }: typeof SetOverrideRequest.Type) => ({
  ...namespaceOf(namespace),
  ...rest
})

/** Body of `ratelimit.getOverride` and `ratelimit.deleteOverride`. */
export const OverrideRequest = Schema.Struct({
  namespace: Namespace,
  identifier: Validation.boundedString("an identifier", 1, 512)
}).annotations({ identifier: "V2OverrideRequest" })

/** The core input of a v2 `getOverride` or `deleteOverride`. */
export const toOverride = ({ identifier, namespace }: typeof OverrideRequest.Type) => ({
  ...namespaceOf(namespace),
  identifier
})

/** Body of `ratelimit.listOverrides`. */
export const ListOverridesRequest = Schema.Struct({
  namespace: Namespace,
  cursor: Schema.optional(Validation.boundedString("a cursor", 1, 1024)),
  limit: Schema.optional(
    Validation.expected(Schema.Number.pipe(Schema.int(), Schema.between(1, 100)), "must be an integer from 1 to 100")
  )
}).annotations({ identifier: "V2ListOverridesRequest" })

/** The core input of a v2 `listOverrides`. */
export const toListOverrides = ({ namespace, ...rest }: typeof ListOverridesRequest.Type) => ({
  ...namespaceOf(namespace),
  ...rest
})

/** An override as v2 answers it. */
export const RatelimitOverride = Schema.Struct({
  overrideId: Schema.String,
  identifier: Schema.String,
  limit: Schema.Number,
  duration: Schema.Number
}).annotations({ identifier: "V2RatelimitOverride" })

/** A core override as v2 answers it. */
export const fromOverride = (override: typeof OverrideView.Type) => ({
  overrideId: override.id,
  identifier: override.identifier,
  limit: override.limit,
  duration: override.duration
})
