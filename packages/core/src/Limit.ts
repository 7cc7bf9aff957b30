/**
 * The bodies and answers of `ratelimits.limit` and `multiLimit` (see `RateLimiter`, which decides
 * them): Unkey v1's body with v2's `namespaceId`, bounded field by field.
 */
import * as Schema from "effect/Schema"
import { Meta } from "./Key.js"
import { MAX_NAME_LENGTH } from "./Namespace.js"
import { Duration, MAX_IDENTIFIER_LENGTH } from "./Override.js"
import * as Validation from "./Validation.js"

const Integer = (min: number, expectation: string) =>
  Validation.expected(Schema.Number.pipe(Schema.int(), Schema.between(min, Number.MAX_SAFE_INTEGER)), expectation)

/** The namespace of a `ratelimits.limit` that names none, as Unkey's v1 has it. */
export const DEFAULT_NAMESPACE = "default"

/** Most resources one `ratelimits.limit` names. */
export const MAX_RESOURCES = 100

/** Most limits one `multiLimit` takes (Unkey v2's bound). */
export const MAX_LIMITS = 100

/** A resource a limited request is about to access (Unkey v1's `resources[]`). */
const Resource = Schema.Struct({
  type: Validation.boundedString("a string", 1, 255),
  id: Validation.boundedString("a string", 1, 255),
  name: Schema.optional(Validation.boundedString("a string", 1, 255)),
  meta: Schema.optional(Meta)
})

/**
 * Body of `ratelimits.limit`: Unkey v1's, with v2's `namespaceId`. `async`, `meta` and `resources`
 * are accepted and bounded; `meta` and `resources` are kept with the decision's event (cut down to
 * `RatelimitEvent.MAX_DETAIL_BYTES`), `async` decides from this server's view of a shared window
 * (see the README).
 */
export const LimitInput = Schema.Struct({
  namespace: Schema.optional(Validation.boundedString("a namespace name", 1, MAX_NAME_LENGTH)).annotations({
    description: `The namespace, by name; "${DEFAULT_NAMESPACE}" when neither it nor namespaceId is given.`
  }),
  namespaceId: Schema.optional(Validation.boundedString("a namespace id", 1, 255)).annotations({
    description: "The namespace, by id (Unkey v2): it must exist, and excludes namespace."
  }),
  identifier: Validation.boundedString("a string", 1, MAX_IDENTIFIER_LENGTH),
  limit: Integer(1, "must be an integer >= 1"),
  duration: Duration,
  cost: Schema.optional(Integer(0, "must be an integer >= 0")),
  async: Schema.optional(Validation.expected(Schema.Boolean, "must be true or false")),
  meta: Schema.optional(Meta),
  resources: Schema.optional(
    Schema.Array(Resource).pipe(
      Schema.filter((all) => all.length <= MAX_RESOURCES || `must hold at most ${MAX_RESOURCES} resources`)
    )
  )
}).annotations({ identifier: "LimitInput" })

/** Answer of `ratelimits.limit`. */
export const LimitResponse = Schema.Struct({
  success: Schema.Boolean,
  limit: Schema.Number.annotations({ description: "the limit applied: the override's when one applies" }),
  remaining: Schema.Number,
  reset: Schema.Number.annotations({ description: "unix ms when the oldest counted request leaves the window" }),
  overrideId: Schema.optional(Schema.String)
}).annotations({ identifier: "LimitResponse" })

/** Body of `multiLimit`: 1 to {@link MAX_LIMITS} bodies of `limit`. */
export const MultiLimitInput = Schema.Array(
  // Its fields' own messages still name what is wrong inside an object.
  LimitInput.annotations({ message: (issue) => `must be a JSON object, got ${Validation.describeValue(issue.actual)}` })
).pipe(Schema.minItems(1), Schema.maxItems(MAX_LIMITS)).annotations({ identifier: "MultiLimitInput" })

/** One limit of a `multiLimit` answer (Unkey v2's). */
export const MultiLimitResult = Schema.Struct({
  namespace: Schema.String.annotations({
    description: `what the limit named: its namespace, its namespaceId, or "${DEFAULT_NAMESPACE}"`
  }),
  identifier: Schema.String,
  limit: Schema.Number.annotations({ description: "the limit applied: the override's when one applies" }),
  remaining: Schema.Number,
  reset: Schema.Number.annotations({ description: "unix ms when the oldest counted request leaves the window" }),
  passed: Schema.Boolean,
  overrideId: Schema.optional(Schema.String)
}).annotations({ identifier: "MultiLimitResult" })

/** Answer of `multiLimit`: `passed` when every limit passed. */
export const MultiLimitResponse = Schema.Struct({
  passed: Schema.Boolean,
  limits: Schema.Array(MultiLimitResult)
}).annotations({ identifier: "MultiLimitResponse" })

/** An answer of `multiLimit`. */
export type MultiLimitResponse = Schema.Schema.Type<typeof MultiLimitResponse>

/** A decoded body of `ratelimits.limit`. */
export type LimitRequest = Schema.Schema.Type<typeof LimitInput>

/** An answer of `ratelimits.limit`. */
export type LimitResponse = Schema.Schema.Type<typeof LimitResponse>
