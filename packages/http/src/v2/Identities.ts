/**
 * Unkey v2's identities on the wire (`/v2/identities.*`), as `@unkey/api@2.5.1` types them, and
 * their mappers onto core's: an identity is named by one string, its id or its externalId.
 */
import * as IdentityInput from "@keymeter/core/IdentityInput"
import * as KeyModel from "@keymeter/core/Key"
import * as Validation from "@keymeter/core/Validation"
import * as Schema from "effect/Schema"
import { fromRatelimits } from "./Keys.js"

const IdentityName = Validation.boundedString("an identity id or external id", 1, 255).annotations({
  description: "The identity's id or its externalId (an id is looked up first)."
})

/** Body of `identities.createIdentity`. */
export const CreateIdentityRequest = Schema.Struct({
  externalId: KeyModel.ExternalId,
  meta: Schema.optional(KeyModel.Meta),
  ratelimits: Schema.optional(IdentityInput.IdentityRatelimits)
}).annotations({ identifier: "V2CreateIdentityRequest" })

/** Body of `identities.getIdentity` and `identities.deleteIdentity`. */
export const IdentityRequest = Schema.Struct({ identity: IdentityName }).annotations({
  identifier: "V2IdentityRequest"
})

/** Body of `identities.updateIdentity`: `meta` replaces (`{}` clears), `ratelimits` replaces (`[]` removes). */
export const UpdateIdentityRequest = Schema.Struct({
  identity: IdentityName,
  meta: Schema.optional(KeyModel.Meta),
  ratelimits: Schema.optional(IdentityInput.IdentityRatelimits)
}).annotations({ identifier: "V2UpdateIdentityRequest" })

/** Body of `identities.listIdentities`. */
export const ListIdentitiesRequest = Schema.Struct({
  limit: Schema.optional(
    KeyModel.Integer(
      1,
      IdentityInput.MAX_IDENTITY_PAGE,
      `must be an integer from 1 to ${IdentityInput.MAX_IDENTITY_PAGE}`
    )
  ),
  cursor: Schema.optional(Validation.boundedString("a cursor", 1, 1024)),
  search: Schema.optional(Validation.boundedString("a search", 1, 255)).annotations({
    description: "Identities whose id or externalId holds this, in any case."
  })
}).annotations({ identifier: "V2ListIdentitiesRequest" })

/** A core identity as v2 answers it. */
export const fromIdentity = (identity: IdentityInput.IdentityView) => ({
  id: identity.id,
  externalId: identity.externalId,
  meta: identity.meta,
  ratelimits: fromRatelimits(identity.id, identity.ratelimits)
})
