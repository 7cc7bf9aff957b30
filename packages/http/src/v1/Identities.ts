/**
 * Unkey v1's identities on the wire (`/v1/identities.*`), as `@unkey/api@0.38.0` types them
 * (docs/unkey-v1-contract.md), and their mappers onto core's identities. v1's identity limits are
 * `{name, limit, duration}`: they apply when a verification names them (core's `autoApply: false`).
 * `enabled` is a keymeter extension: a disabled identity's keys verify as UNAUTHORIZED.
 */
import * as IdentityInput from "@keymeter/core/IdentityInput"
import * as KeyModel from "@keymeter/core/Key"
import { Duration } from "@keymeter/core/Override"
import * as Validation from "@keymeter/core/Validation"
import * as Schema from "effect/Schema"

const Flag = Validation.expected(Schema.Boolean, "must be true or false")

/** An identity's limit as v1 gives it: shared by all its keys, applied when a verification names it. */
const Ratelimit = Schema.Struct({
  name: KeyModel.RatelimitName,
  limit: KeyModel.Positive,
  duration: Duration
})

const Ratelimits = Schema.Array(Ratelimit).pipe(
  Schema.maxItems(KeyModel.MAX_RATELIMITS, {
    message: () => `must hold at most ${KeyModel.MAX_RATELIMITS} rate limits`
  }),
  Schema.filter((limits) =>
    new Set(limits.map((l) => l.name)).size === limits.length || "must not name one rate limit twice"
  )
)

const IdentityId = Validation.boundedString("an identity id", 1, 255)

/** v1 has environments on identities "for future compatibility": all of them are `default`. */
const Environment = Validation.boundedString("an environment", 1, 255).annotations({
  description: "Accepted; every identity is in the environment \"default\"."
})

const Enabled = Schema.optional(Flag).annotations({
  description: "A keymeter extension: false makes every key of the identity verify as UNAUTHORIZED."
})

/** Body of `identities.createIdentity`. */
export const CreateIdentityRequest = Schema.Struct({
  externalId: KeyModel.ExternalId,
  meta: Schema.optional(KeyModel.Meta),
  ratelimits: Schema.optional(Ratelimits),
  enabled: Enabled
}).annotations({ identifier: "V1CreateIdentityRequest" })

/** Query of `identities.getIdentity`. */
export const GetIdentityQuery = Schema.Struct({
  identityId: Schema.optional(IdentityId),
  externalId: Schema.optional(KeyModel.ExternalId)
}).annotations({ identifier: "V1GetIdentityQuery" })

/** Query of `identities.listIdentities`. */
export const ListIdentitiesQuery = Schema.Struct({
  environment: Schema.optional(Environment),
  limit: Schema.optional(
    KeyModel.Integer(
      1,
      IdentityInput.MAX_IDENTITY_PAGE,
      `must be an integer from 1 to ${IdentityInput.MAX_IDENTITY_PAGE}`
    )
  ),
  cursor: Schema.optional(Validation.boundedString("a cursor", 1, 1024))
}).annotations({ identifier: "V1ListIdentitiesQuery" })

/** Body of `identities.updateIdentity`: `identityId` wins over `externalId`; `meta: {}` clears. */
export const UpdateIdentityRequest = Schema.Struct({
  identityId: Schema.optional(IdentityId),
  externalId: Schema.optional(KeyModel.ExternalId),
  environment: Schema.optional(Environment),
  meta: Schema.optional(KeyModel.Meta),
  ratelimits: Schema.optional(Ratelimits),
  enabled: Enabled
}).annotations({ identifier: "V1UpdateIdentityRequest" })

/** Body of `identities.deleteIdentity`. */
export const DeleteIdentityRequest = Schema.Struct({
  identityId: IdentityId
}).annotations({ identifier: "V1DeleteIdentityRequest" })

/** The core form of a v1 identity's limits: applied when named. */
const toLimits = (limits: ReadonlyArray<typeof Ratelimit.Type> | undefined) =>
  limits === undefined ? {} : { ratelimits: limits.map((limit) => ({ ...limit, autoApply: false })) }

/** The core input of a v1 `identities.createIdentity`. */
export const toCreateIdentity = (request: typeof CreateIdentityRequest.Type): IdentityInput.CreateIdentityInput => ({
  externalId: request.externalId,
  ...(request.meta !== undefined ? { meta: request.meta } : {}),
  ...toLimits(request.ratelimits),
  ...(request.enabled !== undefined ? { enabled: request.enabled } : {})
})

/** The core input of a v1 `identities.updateIdentity` (its `environment` names the only one). */
export const toUpdateIdentity = (request: typeof UpdateIdentityRequest.Type) => ({
  ...(request.identityId !== undefined ? { identityId: request.identityId } : {}),
  ...(request.identityId === undefined && request.externalId !== undefined ? { externalId: request.externalId } : {}),
  ...(request.meta !== undefined ? { meta: request.meta } : {}),
  ...toLimits(request.ratelimits),
  ...(request.enabled !== undefined ? { enabled: request.enabled } : {})
})

const RatelimitView = Schema.Struct({ name: Schema.String, limit: Schema.Number, duration: Schema.Number })

/** An identity as v1 answers it (`getIdentity`, `updateIdentity`). */
export const Identity = Schema.Struct({
  id: Schema.String,
  externalId: Schema.String,
  meta: KeyModel.MetaObject,
  ratelimits: Schema.Array(RatelimitView),
  enabled: Schema.Boolean.annotations({ description: "A keymeter extension (see updateIdentity)." })
}).annotations({ identifier: "V1Identity" })

const limitsView = (view: IdentityInput.IdentityView) =>
  view.ratelimits.map((limit) => ({ name: limit.name, limit: limit.limit, duration: limit.duration }))

/** A core identity as v1 answers it. */
export const fromIdentity = (view: IdentityInput.IdentityView): typeof Identity.Type => ({
  id: view.id,
  externalId: view.externalId,
  meta: view.meta,
  ratelimits: limitsView(view),
  enabled: view.enabled
})

/** Answer of `identities.listIdentities`: its items carry no `meta`, as v1's do not. */
export const IdentityPage = Schema.Struct({
  identities: Schema.Array(Schema.Struct({
    id: Schema.String,
    externalId: Schema.String,
    ratelimits: Schema.Array(RatelimitView)
  })),
  cursor: Schema.optional(Schema.String),
  total: Schema.Number
}).annotations({ identifier: "V1IdentityPage" })

/** A core page of identities as v1 answers it. */
export const fromIdentityPage = (
  page: {
    readonly identities: ReadonlyArray<IdentityInput.IdentityView>
    readonly total: number
    readonly cursor?: string
  }
): typeof IdentityPage.Type => ({
  identities: page.identities.map((view) => ({
    id: view.id,
    externalId: view.externalId,
    ratelimits: limitsView(view)
  })),
  ...(page.cursor !== undefined ? { cursor: page.cursor } : {}),
  total: page.total
})
