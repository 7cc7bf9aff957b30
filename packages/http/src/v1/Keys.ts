/**
 * Unkey v1's key management on the wire (`keys.createKey`, `getKey`, `updateKey`,
 * `updateRemaining`, `deleteKey`, `whoami`, `apis.listKeys`, `apis.deleteKeys`; verification,
 * migrations and per-key usage have modules of their own), as `@unkey/api@0.38.0` types them
 * (docs/unkey-v1-contract.md), and their mappers onto core's keys: credits as `remaining` and
 * `refill`, the one per-key `ratelimit` as the limit named `default`, `ownerId` as the identity's
 * external id. Validation words its errors in v1's field names; core then gets input it accepts.
 */
import type { KeyView } from "@keymeter/core/Key"
import * as KeyModel from "@keymeter/core/Key"
import { MAX_SECRET_LENGTH } from "@keymeter/core/KeyVerifier"
import { Duration } from "@keymeter/core/Override"
import { References } from "@keymeter/core/Role"
import * as Validation from "@keymeter/core/Validation"
import * as Schema from "effect/Schema"

/** A key's `ratelimit` as v1 sets it: `limit` per `duration` ms (`refillInterval`, deprecated, stands in for it). */
const RatelimitRequest = (asyncDefault: boolean) =>
  Schema.Struct({
    async: Schema.optional(KeyModel.Flag).annotations({ description: `default ${asyncDefault}` }),
    type: Schema.optional(
      Validation.expected(Schema.Literal("fast", "consistent"), "must be \"fast\" or \"consistent\"")
    ),
    limit: KeyModel.Positive,
    duration: Schema.optional(Duration),
    refillRate: Schema.optional(KeyModel.Positive),
    refillInterval: Schema.optional(Duration)
  }).pipe(
    Schema.filter((limit) =>
      limit.duration !== undefined || limit.refillInterval !== undefined || {
        path: ["duration"],
        message: "is required (the window in milliseconds)"
      }
    )
  )

/** The core limit of a v1 `ratelimit`: named `default`, applied on every verification. */
const defaultLimit = (limit: Schema.Schema.Type<ReturnType<typeof RatelimitRequest>>, asyncDefault: boolean) => ({
  limit: limit.limit,
  duration: (limit.duration ?? limit.refillInterval)!,
  async: limit.async ?? (limit.type === undefined ? asyncDefault : limit.type === "fast")
})

/** Body of `keys.createKey`. */
export const CreateKeyRequest = Schema.Struct({
  apiId: KeyModel.ApiId,
  prefix: Schema.optional(KeyModel.Prefix),
  name: Schema.optional(KeyModel.KeyName),
  byteLength: Schema.optional(KeyModel.ByteLength),
  ownerId: Schema.optional(KeyModel.ExternalId).annotations({ description: "Deprecated: use externalId" }),
  externalId: Schema.optional(KeyModel.ExternalId),
  meta: Schema.optional(KeyModel.Meta),
  roles: Schema.optional(KeyModel.RoleNames).annotations({ description: "Names of existing roles." }),
  permissions: Schema.optional(KeyModel.Permissions).annotations({
    description: "Permission names; one that does not exist is created if the root key holds " +
      "rbac.*.create_permission."
  }),
  expires: Schema.optional(KeyModel.Expires),
  remaining: Schema.optional(KeyModel.Count),
  refill: Schema.optional(KeyModel.RefillInput),
  ratelimit: Schema.optional(RatelimitRequest(true)),
  enabled: Schema.optional(KeyModel.Flag),
  recoverable: Schema.optional(KeyModel.Flag),
  environment: Schema.optional(KeyModel.Environment)
}).pipe(
  Schema.filter((request) =>
    [
      request.refill !== undefined && request.remaining === undefined &&
      { path: ["refill"], message: "needs remaining: a refill sets the credits a key has" },
      request.recoverable === true && {
        path: ["recoverable"],
        message: "keymeter keeps only a hash of each key, so no key can be recovered; leave it false"
      },
      request.externalId !== undefined && request.ownerId !== undefined && request.externalId !== request.ownerId && {
        path: ["ownerId"],
        message: "differs from externalId; give one of them (ownerId is the deprecated name of externalId)"
      }
    ].filter((issue) => issue !== false)
  )
).annotations({ identifier: "V1CreateKeyRequest" })

/** The core input of a v1 `keys.createKey`. */
export const toCreateKey = (request: typeof CreateKeyRequest.Type): KeyModel.CreateKeyInput => {
  const externalId = request.externalId ?? request.ownerId
  return {
    apiId: request.apiId,
    ...(request.name !== undefined ? { name: request.name } : {}),
    ...(request.prefix !== undefined ? { prefix: request.prefix } : {}),
    ...(request.byteLength !== undefined ? { byteLength: request.byteLength } : {}),
    ...(externalId !== undefined ? { externalId } : {}),
    ...(request.meta !== undefined ? { meta: request.meta } : {}),
    ...(request.permissions !== undefined ? { permissions: request.permissions } : {}),
    ...(request.roles !== undefined ? { roles: request.roles } : {}),
    ...(request.enabled !== undefined ? { enabled: request.enabled } : {}),
    ...(request.expires !== undefined ? { expires: request.expires } : {}),
    ...(request.remaining !== undefined
      ? {
        credits: { remaining: request.remaining, ...(request.refill !== undefined ? { refill: request.refill } : {}) }
      }
      : {}),
    ...(request.ratelimit !== undefined
      ? {
        ratelimits: [{
          name: KeyModel.DEFAULT_RATELIMIT,
          ...defaultLimit(request.ratelimit, true),
          autoApply: true
        }]
      }
      : {}),
    ...(request.environment !== undefined ? { environment: request.environment } : {})
  }
}

/** Answer of `keys.createKey`. */
export const CreateKeyResponse = Schema.Struct({
  keyId: Schema.String,
  key: Schema.optional(Schema.String).annotations({
    description: "The new key, shown this once: a repeat under the same Idempotency-Key answers without it (it is " +
      "never kept)."
  })
}).annotations({ identifier: "V1CreateKeyResponse" })

/** Body of `keys.updateKey`: the fields given change, `null` clears (`remaining: null`: unlimited). */
export const UpdateKeyRequest = Schema.Struct({
  keyId: KeyModel.KeyId,
  name: Schema.optional(Schema.NullOr(KeyModel.KeyName)),
  ownerId: Schema.optional(Schema.NullOr(KeyModel.ExternalId)).annotations({
    description: "Deprecated: use externalId"
  }),
  externalId: Schema.optional(Schema.NullOr(KeyModel.ExternalId)),
  meta: Schema.optional(Schema.NullOr(KeyModel.Meta)),
  expires: Schema.optional(Schema.NullOr(KeyModel.Expires)),
  ratelimit: Schema.optional(Schema.NullOr(RatelimitRequest(false))),
  remaining: Schema.optional(Schema.NullOr(KeyModel.Count)),
  refill: Schema.optional(Schema.NullOr(KeyModel.RefillInput)),
  enabled: Schema.optional(KeyModel.Flag),
  roles: Schema.optional(References(KeyModel.MAX_PERMISSIONS, "roles")).annotations({
    description: "Replaces all the key's roles: each {id} or {name}, create: true makes a missing one."
  }),
  permissions: Schema.optional(References(KeyModel.MAX_PERMISSIONS, "permissions")).annotations({
    description: "Replaces all the key's permissions: each {id} or {name}, create: true makes a missing one."
  })
}).pipe(
  Schema.filter((request) =>
    [
      request.remaining === null && request.refill !== undefined && request.refill !== null && {
        path: ["refill"],
        message: "cannot refill a key whose remaining is set to null (unlimited)"
      },
      request.externalId !== undefined && request.ownerId !== undefined && request.externalId !== request.ownerId && {
        path: ["ownerId"],
        message: "differs from externalId; give one of them (ownerId is the deprecated name of externalId)"
      }
    ].filter((issue) => issue !== false)
  )
).annotations({ identifier: "V1UpdateKeyRequest" })

/** The core input of a v1 `keys.updateKey`. */
export const toUpdateKey = (request: typeof UpdateKeyRequest.Type): KeyModel.UpdateKeyInput => {
  const externalId = request.externalId !== undefined ? request.externalId : request.ownerId
  const credits = request.remaining === null
    ? null
    : request.remaining !== undefined || request.refill !== undefined
    ? {
      ...(request.remaining !== undefined ? { remaining: request.remaining } : {}),
      ...(request.refill !== undefined ? { refill: request.refill } : {})
    }
    : undefined
  return {
    keyId: request.keyId,
    ...(request.name !== undefined ? { name: request.name } : {}),
    ...(externalId !== undefined ? { externalId } : {}),
    ...(request.meta !== undefined ? { meta: request.meta } : {}),
    ...(request.expires !== undefined ? { expires: request.expires } : {}),
    ...(request.enabled !== undefined ? { enabled: request.enabled } : {}),
    ...(request.roles !== undefined ? { roles: request.roles } : {}),
    ...(request.permissions !== undefined ? { permissions: request.permissions } : {}),
    ...(credits !== undefined ? { credits } : {}),
    ...(request.ratelimit !== undefined
      ? { ratelimit: request.ratelimit === null ? null : defaultLimit(request.ratelimit, false) }
      : {})
  }
}

/** Body of `keys.updateRemaining`. */
export const UpdateRemainingRequest = Schema.Struct({
  keyId: KeyModel.KeyId,
  op: Validation.expected(
    Schema.Literal("increment", "decrement", "set"),
    "must be \"increment\", \"decrement\" or \"set\""
  ),
  value: Schema.NullOr(KeyModel.Count).annotations({ description: "null with op set: unlimited" })
}).annotations({ identifier: "V1UpdateRemainingRequest" })

/** Answer of `keys.updateRemaining`: the remaining verifications, null for unlimited. */
export const UpdateRemainingResponse = Schema.Struct({ remaining: Schema.NullOr(Schema.Number) })

/** Body of `keys.deleteKey`. */
export const DeleteKeyRequest = Schema.Struct({
  keyId: KeyModel.KeyId,
  permanent: Schema.optional(KeyModel.Flag).annotations({
    description: "Accepted; keymeter always deletes a key for good (its verifications stay counted)."
  })
}).annotations({ identifier: "V1DeleteKeyRequest" })

/** Body of `apis.deleteKeys`. */
export const DeleteKeysRequest = Schema.Struct({
  apiId: KeyModel.ApiId,
  permanent: Schema.optional(KeyModel.Flag).annotations({
    description: "Accepted; keymeter always deletes keys for good (their verifications stay counted)."
  })
}).annotations({ identifier: "V1DeleteKeysRequest" })

/** Body of `keys.whoami`. */
export const WhoamiRequest = Schema.Struct({
  key: Validation.boundedString("a key", 1, MAX_SECRET_LENGTH)
}).annotations({ identifier: "V1WhoamiRequest" })

/** Query of `keys.getKey`. */
export const GetKeyQuery = Schema.Struct({
  keyId: KeyModel.KeyId,
  decrypt: Schema.optional(KeyModel.Flag).annotations({
    description: "Accepted; keymeter keeps no key in a form it could decrypt, so no plaintext is answered."
  })
}).annotations({ identifier: "V1GetKeyQuery" })

/** Query of `apis.listKeys`. */
export const ListKeysQuery = Schema.Struct({
  apiId: KeyModel.ApiId,
  limit: Schema.optional(
    KeyModel.Integer(1, KeyModel.MAX_KEY_PAGE, `must be an integer from 1 to ${KeyModel.MAX_KEY_PAGE}`)
  ),
  cursor: Schema.optional(Validation.boundedString("a cursor", 1, 1024)),
  ownerId: Schema.optional(KeyModel.ExternalId).annotations({ description: "Deprecated: use externalId" }),
  externalId: Schema.optional(KeyModel.ExternalId),
  decrypt: Schema.optional(KeyModel.Flag),
  revalidateKeysCache: Schema.optional(KeyModel.Flag).annotations({
    description: "Accepted; keymeter's answers are never stale."
  })
}).annotations({ identifier: "V1ListKeysQuery" })

/** The core input of a v1 `apis.listKeys`. */
export const toListKeys = (query: typeof ListKeysQuery.Type): KeyModel.ListKeysInput => {
  const externalId = query.externalId ?? query.ownerId
  return {
    apiId: query.apiId,
    ...(query.limit !== undefined ? { limit: query.limit } : {}),
    ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
    ...(externalId !== undefined ? { externalId } : {})
  }
}

const Meta = KeyModel.MetaObject

/** A key as v1 answers it (`keys.getKey`, `apis.listKeys`). */
export const Key = Schema.Struct({
  id: Schema.String,
  start: Schema.String,
  workspaceId: Schema.String,
  apiId: Schema.optional(Schema.String),
  name: Schema.optional(Schema.String),
  ownerId: Schema.optional(Schema.String),
  meta: Schema.optional(Meta),
  createdAt: Schema.Number,
  updatedAt: Schema.optional(Schema.Number),
  expires: Schema.optional(Schema.Number),
  remaining: Schema.optional(Schema.Number),
  refill: Schema.optional(Schema.Struct({
    interval: Schema.Literal("daily", "monthly"),
    amount: Schema.Number,
    refillDay: Schema.optional(Schema.NullOr(Schema.Number)),
    lastRefillAt: Schema.optional(Schema.Number)
  })),
  ratelimit: Schema.optional(Schema.Struct({
    async: Schema.Boolean,
    type: Schema.optional(Schema.Literal("fast", "consistent")),
    limit: Schema.Number,
    duration: Schema.Number
  })),
  roles: Schema.optional(Schema.Array(Schema.String)),
  permissions: Schema.optional(Schema.Array(Schema.String)),
  enabled: Schema.optional(Schema.Boolean),
  environment: Schema.optional(Schema.String),
  identity: Schema.optional(Schema.Struct({
    id: Schema.String,
    externalId: Schema.String,
    meta: Schema.optional(Meta)
  }))
}).annotations({ identifier: "V1Key" })
export type Key = typeof Key.Type

/** The v1 form of the key's `default` limit, if it has one. */
const ratelimitOf = (view: KeyView) => {
  const limit = view.ratelimits.find((limit) => limit.name === KeyModel.DEFAULT_RATELIMIT)
  if (limit === undefined) return undefined
  const async = limit.async ?? false
  return { async, type: async ? "fast" as const : "consistent" as const, limit: limit.limit, duration: limit.duration }
}

/** A core key as v1 answers it. */
export const fromKey = (view: KeyView): Key => {
  const ratelimit = ratelimitOf(view)
  const refill = view.credits?.refill
  return {
    id: view.keyId,
    start: view.start,
    workspaceId: view.workspaceId,
    apiId: view.apiId,
    ...(view.name !== undefined ? { name: view.name } : {}),
    ...(view.identity !== undefined ? { ownerId: view.identity.externalId } : {}),
    ...(view.meta !== undefined ? { meta: view.meta } : {}),
    createdAt: view.createdAt,
    updatedAt: view.updatedAt,
    ...(view.expires !== undefined ? { expires: view.expires } : {}),
    ...(view.credits !== undefined ? { remaining: view.credits.remaining } : {}),
    ...(refill !== undefined
      ? {
        refill: {
          interval: refill.interval,
          amount: refill.amount,
          refillDay: refill.interval === "monthly" ? refill.refillDay ?? 1 : null,
          ...(view.credits?.lastRefillAt !== undefined ? { lastRefillAt: view.credits.lastRefillAt } : {})
        }
      }
      : {}),
    ...(ratelimit !== undefined ? { ratelimit } : {}),
    roles: view.roles,
    permissions: view.permissions,
    enabled: view.enabled,
    ...(view.environment !== undefined ? { environment: view.environment } : {}),
    ...(view.identity !== undefined
      ? { identity: { id: view.identity.id, externalId: view.identity.externalId, meta: view.identity.meta } }
      : {})
  }
}

/** Answer of `apis.listKeys`. */
export const KeyPage = Schema.Struct({
  keys: Schema.Array(Key),
  cursor: Schema.optional(Schema.String),
  total: Schema.Number
}).annotations({ identifier: "V1KeyPage" })

/** Answer of `keys.whoami`. */
export const WhoamiResponse = Schema.Struct({
  id: Schema.String,
  name: Schema.optional(Schema.String),
  remaining: Schema.optional(Schema.Number),
  identity: Schema.optional(Schema.Struct({ id: Schema.String, externalId: Schema.String })),
  meta: Schema.optional(Meta),
  createdAt: Schema.Number,
  enabled: Schema.Boolean,
  environment: Schema.optional(Schema.String)
}).annotations({ identifier: "V1WhoamiResponse" })

/** A core key as `keys.whoami` answers it. */
export const toWhoami = (view: KeyView): typeof WhoamiResponse.Type => ({
  id: view.keyId,
  ...(view.name !== undefined ? { name: view.name } : {}),
  ...(view.credits !== undefined ? { remaining: view.credits.remaining } : {}),
  ...(view.identity !== undefined ? { identity: { id: view.identity.id, externalId: view.identity.externalId } } : {}),
  ...(view.meta !== undefined ? { meta: view.meta } : {}),
  createdAt: view.createdAt,
  enabled: view.enabled,
  ...(view.environment !== undefined ? { environment: view.environment } : {})
})
