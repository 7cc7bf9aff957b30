/**
 * The shapes of the identities routes: their inputs (create, name, update, list) and answers (an
 * identity's view, a page of them). The identity itself is `Key`'s `Identity`.
 */
import * as Schema from "effect/Schema"
import type { Identity } from "./Key.js"
import { ExternalId, Flag, Integer, KeyRatelimit, Meta, MetaObject, Ratelimits } from "./Key.js"
import { boundedString } from "./Validation.js"

/** An identity's limits: as a key's, at most {@link MAX_RATELIMITS}, names unique. */
export const IdentityRatelimits = Ratelimits

const IdentityId = boundedString("an identity id", 1, 255)

/** Body of `identities.createIdentity`. */
export const CreateIdentityInput = Schema.Struct({
  externalId: ExternalId,
  meta: Schema.optional(Meta),
  ratelimits: Schema.optional(IdentityRatelimits),
  enabled: Schema.optional(Flag)
}).annotations({ identifier: "CreateIdentityInput" })
export type CreateIdentityInput = Schema.Schema.Type<typeof CreateIdentityInput>

/**
 * Names an identity: by `identityId`, by `externalId`, or by `identity`, either of them (Unkey
 * v2's one field: an id first, else an external id). When several are given, `identityId` wins,
 * then `externalId`.
 */
const identityRef = <Fields extends Schema.Struct.Fields>(fields: Fields, identifier: string) =>
  Schema.Struct({
    identityId: Schema.optional(IdentityId),
    externalId: Schema.optional(ExternalId),
    identity: Schema.optional(
      boundedString("an identityId or an externalId", 1, 255).annotations({
        description: "an identityId or an externalId: the identity with that id, else the one with that externalId"
      })
    ),
    ...fields
  }).pipe(
    Schema.filter((input: { readonly identityId?: string; readonly externalId?: string; readonly identity?: string }) =>
      input.identityId !== undefined || input.externalId !== undefined || input.identity !== undefined ||
      { path: ["identityId"], message: "give identityId, externalId or identity" }
    )
  ).annotations({ identifier })

/** Query of `identities.getIdentity`; body of `identities.deleteIdentity`. */
export const IdentityRefInput = identityRef({}, "IdentityRefInput")
export type IdentityRefInput = Schema.Schema.Type<typeof IdentityRefInput>

/**
 * Body of `identities.updateIdentity`: the fields given change (`meta` null or `{}` clears it;
 * `ratelimits` replaces all, `[]` removes them).
 */
export const UpdateIdentityInput = identityRef({
  meta: Schema.optional(Schema.NullOr(Meta)),
  ratelimits: Schema.optional(IdentityRatelimits),
  enabled: Schema.optional(Flag)
}, "UpdateIdentityInput")
export type UpdateIdentityInput = Schema.Schema.Type<typeof UpdateIdentityInput>

/** Largest page of `identities.listIdentities`. */
export const MAX_IDENTITY_PAGE = 100

/** Query of `identities.listIdentities`: `search` keeps those whose id or externalId holds it (any case). */
export const ListIdentitiesInput = Schema.Struct({
  limit: Schema.optional(Integer(1, MAX_IDENTITY_PAGE, `must be an integer from 1 to ${MAX_IDENTITY_PAGE}`)),
  cursor: Schema.optional(boundedString("a cursor", 1, 1024)),
  search: Schema.optional(
    boundedString("a search text", 1, 255).annotations({
      description: "only identities whose id or externalId contains it, ignoring case"
    })
  )
}).annotations({ identifier: "ListIdentitiesInput" })
export type ListIdentitiesInput = Schema.Schema.Type<typeof ListIdentitiesInput>

/** An identity as answered. */
export const IdentityView = Schema.Struct({
  id: Schema.String,
  externalId: Schema.String,
  meta: MetaObject,
  ratelimits: Schema.Array(KeyRatelimit),
  enabled: Schema.Boolean.annotations({ description: "false: its keys verify as UNAUTHORIZED" }),
  createdAt: Schema.Number
}).annotations({ identifier: "IdentityView" })
export type IdentityView = Schema.Schema.Type<typeof IdentityView>

/** An identity's answer. */
export const toIdentityView = (identity: Identity): IdentityView => ({
  id: identity.id,
  externalId: identity.externalId,
  meta: identity.meta ?? {},
  ratelimits: identity.ratelimits ?? [],
  enabled: identity.enabled,
  createdAt: identity.createdAt
})

/** Answer of `identities.listIdentities`. */
export const IdentityPage = Schema.Struct({
  identities: Schema.Array(IdentityView),
  /** How many identities the workspace has, also when a `search` keeps fewer. */
  total: Schema.Number.annotations({ description: "how many identities the workspace has (not only the matches)" }),
  cursor: Schema.optional(Schema.String)
}).annotations({ identifier: "IdentityPage" })
