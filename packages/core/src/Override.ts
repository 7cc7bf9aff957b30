/**
 * Rate-limit overrides: the limit for one identifier, or a `*` wildcard pattern, in a namespace.
 */
import * as Schema from "effect/Schema"
import * as Struct from "effect/Struct"
import { MAX_NAME_LENGTH } from "./Namespace.js"
import { MAX_DURATION, MAX_IDENTIFIER_LENGTH, MIN_DURATION, MIN_IDENTIFIER_LENGTH } from "./OverrideBounds.js"
import type { OverrideHits } from "./RatelimitEvent.js"
import { boundedString, expected } from "./Validation.js"

export { MAX_DURATION, MAX_IDENTIFIER_LENGTH, MAX_TIME, MIN_DURATION, MIN_IDENTIFIER_LENGTH } from "./OverrideBounds.js"

/** A limit's window: an integer of milliseconds from {@link MIN_DURATION} to {@link MAX_DURATION}. */
export const Duration = expected(
  Schema.Number.pipe(Schema.int(), Schema.between(MIN_DURATION, MAX_DURATION)),
  `must be an integer of milliseconds from ${MIN_DURATION} to ${MAX_DURATION} (2^53-1)`
)

/** A stored override. */
export class Override extends Schema.Class<Override>("Override")({
  id: Schema.String,
  namespaceId: Schema.String,
  identifier: Schema.String,
  limit: Schema.Number,
  duration: Schema.Number,
  async: Schema.Boolean,
  createdAt: Schema.Number,
  updatedAt: Schema.Number
}) {}

const NamespaceId = boundedString("a namespace id", 1, MAX_NAME_LENGTH).annotations({
  description: "Id of the namespace; or give namespaceName."
})

const NamespaceName = boundedString("a namespace name", 1, MAX_NAME_LENGTH).annotations({
  description: "Name of the namespace; or give namespaceId."
})

/** An identifier, or a wildcard pattern over identifiers. */
export const Identifier = boundedString("a string", MIN_IDENTIFIER_LENGTH, MAX_IDENTIFIER_LENGTH)

/** Answer of `ratelimits.listNamespaces`. */
export const NamespaceList = Schema.Struct({
  namespaces: Schema.Array(Schema.Struct({ namespaceId: Schema.String, name: Schema.String }))
}).annotations({ identifier: "NamespaceList" })

/** Body of `ratelimits.setOverride`. */
export const SetOverrideInput = Schema.Struct({
  namespaceId: Schema.optional(NamespaceId),
  namespaceName: Schema.optional(NamespaceName),
  identifier: Identifier,
  limit: expected(
    Schema.Number.pipe(Schema.int(), Schema.between(0, Number.MAX_SAFE_INTEGER)),
    "must be an integer >= 0"
  ),
  duration: Duration,
  async: Schema.optional(expected(Schema.Boolean, "must be true or false"))
}).annotations({ identifier: "SetOverrideInput" })

/** An override as a caller sets it. */
export type SetOverrideInput = Schema.Schema.Type<typeof SetOverrideInput>

/**
 * An override as the API answers it: the stored one but for its namespace, which the caller named,
 * with how many decisions it made (`getOverride` and `listOverrides` count them).
 */
export const OverrideView = Schema.Struct({
  ...Struct.omit(Override.fields, "namespaceId"),
  hits: Schema.optional(Schema.Number.annotations({
    description: "Rate-limit decisions this override made, over every decision counted (counts are kept for good)"
  })),
  lastHitAt: Schema.optional(Schema.Number.annotations({
    description: "Unix ms of its last decision; absent when it has made none"
  }))
}).annotations({ identifier: "Override" })

/** The API's view of an override. */
export type OverrideView = Schema.Schema.Type<typeof OverrideView>

/** The API's view of an override; with `counted`, its hits (none: 0). */
export const toView = (
  override: Override,
  counted?: { readonly hits: OverrideHits | undefined } | undefined
): OverrideView => {
  const { namespaceId: _, ...view } = override
  if (counted === undefined) return view
  const { hits } = counted
  return hits === undefined ? { ...view, hits: 0 } : { ...view, hits: hits.hits, lastHitAt: hits.lastHitAt }
}

/** An identifier as a lookup key: any string of 1 to 512 characters. */
const LookupIdentifier = boundedString("a string", 1, MAX_IDENTIFIER_LENGTH)

/** Input of `ratelimits.getOverride`. */
export const GetOverrideInput = Schema.Struct({
  namespaceId: Schema.optional(NamespaceId),
  namespaceName: Schema.optional(NamespaceName),
  identifier: LookupIdentifier.annotations({ description: "The identifier (or the pattern) of the override." }),
  resolve: Schema.optional(
    expected(Schema.Boolean, "must be true or false").annotations({
      description: "true: the override that would apply to the identifier, not only its own. Default false."
    })
  )
}).annotations({ identifier: "GetOverrideInput" })

/** Most overrides one page holds. */
export const MAX_PAGE = 100

/** Input of `ratelimits.listOverrides`. */
export const ListOverridesInput = Schema.Struct({
  namespaceId: Schema.optional(NamespaceId),
  namespaceName: Schema.optional(NamespaceName),
  limit: Schema.optional(
    expected(Schema.Number.pipe(Schema.int(), Schema.between(1, MAX_PAGE)), `must be an integer from 1 to ${MAX_PAGE}`)
      .annotations({ description: `Overrides per page, 1 to ${MAX_PAGE} (default ${MAX_PAGE}).` })
  ),
  cursor: Schema.optional(
    expected(Schema.String.pipe(Schema.minLength(1)), "must be a cursor from a previous page").annotations({
      description: "The cursor of the previous page."
    })
  )
}).annotations({ identifier: "ListOverridesInput" })

/** Input of `ratelimits.deleteOverride`. */
export const DeleteOverrideInput = Schema.Struct({
  namespaceId: Schema.optional(NamespaceId),
  namespaceName: Schema.optional(NamespaceName),
  identifier: Identifier
}).annotations({ identifier: "DeleteOverrideInput" })

/** A page of overrides. */
export const OverridePage = Schema.Struct({
  overrides: Schema.Array(OverrideView),
  total: Schema.Number,
  cursor: Schema.optional(Schema.String)
}).annotations({ identifier: "OverridePage" })
