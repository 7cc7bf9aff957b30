/**
 * Unkey v2's keys on the wire (`/v2/keys.*`, `apis.listKeys`), as `@unkey/api@2.5.1` types them
 * (docs/unkey-v2-contract.md), and their mappers onto core's keys. Core's shapes are close to v2's:
 * the mapping is credits `remaining: null` (unlimited: no credits), the permission query as text,
 * and the answers' shapes (a rate limit's id, a verification's credits as a number). Validation
 * words its errors in v2's field names.
 */
import * as IdentityInput from "@keymeter/core/IdentityInput"
import type { KeyView } from "@keymeter/core/Key"
import * as KeyModel from "@keymeter/core/Key"
import { ratelimitId } from "@keymeter/core/Key"
import type { VerifyKeyInput, VerifyKeyResponse } from "@keymeter/core/KeyVerifier"
import { VerifyKeyInput as CoreVerifyKeyInput } from "@keymeter/core/KeyVerifier"
import * as PermissionQuery from "@keymeter/core/PermissionQuery"
import type { Reference } from "@keymeter/core/Role"
import * as Validation from "@keymeter/core/Validation"
import * as Schema from "effect/Schema"

const MigrationId = Validation.boundedString("a migration id", 1, 255)

/** A key's credits as v2 gives them: `remaining: null` is unlimited (no credits at all). */
const CreditsRequest = Schema.Struct({
  remaining: Schema.NullOr(KeyModel.Count),
  refill: Schema.optional(KeyModel.RefillInput)
}).pipe(
  Schema.filter((credits) =>
    credits.remaining !== null || credits.refill === undefined ||
    { path: ["refill"], message: "needs a remaining number: a refill sets the credits of a key that has some" }
  )
)

/** The core credits of v2's: none when unlimited. */
const creditsOf = (credits: typeof CreditsRequest.Type | undefined) =>
  credits === undefined || credits.remaining === null
    ? undefined
    : { remaining: credits.remaining, ...(credits.refill !== undefined ? { refill: credits.refill } : {}) }

const keyFields = {
  name: Schema.optional(KeyModel.KeyName),
  externalId: Schema.optional(KeyModel.ExternalId),
  meta: Schema.optional(KeyModel.Meta),
  roles: Schema.optional(KeyModel.RoleNames).annotations({ description: "Names or ids of existing roles." }),
  permissions: Schema.optional(KeyModel.Permissions).annotations({
    description: "Permission slugs; one that does not exist is created if the root key holds rbac.*.create_permission."
  }),
  expires: Schema.optional(KeyModel.Expires),
  credits: Schema.optional(CreditsRequest),
  ratelimits: Schema.optional(IdentityInput.IdentityRatelimits),
  enabled: Schema.optional(KeyModel.Flag)
}

/** The core fields of a key v2 describes (createKey's, migrateKeys'). */
const keyOf = (request: Schema.Struct.Type<typeof keyFields>) => ({
  ...(request.name !== undefined ? { name: request.name } : {}),
  ...(request.externalId !== undefined ? { externalId: request.externalId } : {}),
  ...(request.meta !== undefined ? { meta: request.meta } : {}),
  ...(request.roles !== undefined ? { roles: request.roles } : {}),
  ...(request.permissions !== undefined ? { permissions: request.permissions } : {}),
  ...(request.expires !== undefined ? { expires: request.expires } : {}),
  ...(creditsOf(request.credits) !== undefined ? { credits: creditsOf(request.credits)! } : {}),
  ...(request.ratelimits !== undefined ? { ratelimits: request.ratelimits } : {}),
  ...(request.enabled !== undefined ? { enabled: request.enabled } : {})
})

/** Body of `keys.createKey`. */
export const CreateKeyRequest = Schema.Struct({
  apiId: KeyModel.ApiId,
  prefix: Schema.optional(KeyModel.Prefix),
  byteLength: Schema.optional(KeyModel.ByteLength),
  ...keyFields,
  recoverable: Schema.optional(KeyModel.Flag)
}).pipe(
  Schema.filter((request) =>
    request.recoverable !== true || {
      path: ["recoverable"],
      message: "keymeter keeps only a hash of each key, so no key can be recovered; leave it false"
    }
  )
).annotations({ identifier: "V2CreateKeyRequest" })

/** The core input of a v2 `keys.createKey`. */
export const toCreateKey = (request: typeof CreateKeyRequest.Type): KeyModel.CreateKeyInput => ({
  apiId: request.apiId,
  ...(request.prefix !== undefined ? { prefix: request.prefix } : {}),
  ...(request.byteLength !== undefined ? { byteLength: request.byteLength } : {}),
  ...keyOf(request)
})

/** Answer of `keys.createKey` and `keys.rerollKey`. */
export const CreatedKey = Schema.Struct({
  keyId: Schema.String,
  key: Schema.String.annotations({
    description: "The new key, shown this once. A repeat under the same Idempotency-Key (a keymeter extension) " +
      "answers an empty string: the key is never kept."
  })
}).annotations({ identifier: "V2CreatedKey" })

/** Body of `keys.verifyKey`: no apiId (the key's api, which the root key must be allowed to verify). */
export const VerifyKeyRequest = Schema.Struct({
  key: CoreVerifyKeyInput.fields.key,
  tags: CoreVerifyKeyInput.fields.tags,
  permissions: Schema.optional(Validation.boundedString("a permission query", 1, 8192)).annotations({
    description: "A permission, or permissions joined by AND and OR with parentheses: \"a AND (b OR c)\"."
  }),
  credits: CoreVerifyKeyInput.fields.credits,
  ratelimits: CoreVerifyKeyInput.fields.ratelimits,
  migrationId: Schema.optional(MigrationId).annotations({ description: "Accepted and ignored." })
}).annotations({ identifier: "V2VerifyKeyRequest" })
export type VerifyKeyRequest = typeof VerifyKeyRequest.Type

/** The core input of a v2 verification, or the message of its permission query's mistake. */
export const toVerifyKey = (request: VerifyKeyRequest): VerifyKeyInput | string => {
  let permissions: PermissionQuery.PermissionQuery | undefined
  if (request.permissions !== undefined) {
    const parsed = PermissionQuery.parse(request.permissions)
    if ("error" in parsed) return `permissions: ${parsed.error}`
    permissions = parsed.query
  }
  // One shape for every call (this runs on every verification): absent fields are undefined.
  return {
    key: request.key,
    tags: request.tags,
    permissions,
    credits: request.credits,
    ratelimits: request.ratelimits
  } as VerifyKeyInput
}

/** A key's or identity's limit as v2 answers it. */
const RatelimitResponse = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  limit: Schema.Number,
  duration: Schema.Number,
  autoApply: Schema.Boolean
}).annotations({ identifier: "V2Ratelimit" })

/** An identity as v2 answers it (with a key, or alone). */
export const Identity = Schema.Struct({
  id: Schema.String,
  externalId: Schema.String,
  meta: Schema.optional(KeyModel.MetaObject),
  ratelimits: Schema.optional(Schema.Array(RatelimitResponse))
}).annotations({ identifier: "V2Identity" })

/** Answer of `keys.verifyKey`: always 200 for a well-formed request, `valid` and `code` telling. */
export const VerifyKeyResponseData = Schema.Struct({
  valid: Schema.Boolean,
  code: Schema.Literal(
    "VALID",
    "NOT_FOUND",
    "FORBIDDEN",
    "INSUFFICIENT_PERMISSIONS",
    "USAGE_EXCEEDED",
    "RATE_LIMITED",
    "DISABLED",
    "EXPIRED"
  ).annotations({ description: "A key whose identity is disabled (a keymeter extension) answers DISABLED." }),
  keyId: Schema.optional(Schema.String),
  name: Schema.optional(Schema.String),
  meta: Schema.optional(KeyModel.MetaObject),
  expires: Schema.optional(Schema.Number),
  credits: Schema.optional(Schema.Number.annotations({ description: "Credits left; absent: unlimited." })),
  enabled: Schema.optional(Schema.Boolean),
  permissions: Schema.optional(Schema.Array(Schema.String)),
  roles: Schema.optional(Schema.Array(Schema.String)),
  identity: Schema.optional(Identity),
  ratelimits: Schema.optional(Schema.Array(Schema.Struct({
    exceeded: Schema.Boolean,
    id: Schema.String,
    name: Schema.String,
    limit: Schema.Number,
    duration: Schema.Number,
    reset: Schema.Number.annotations({ description: "Unix ms when the window frees again." }),
    remaining: Schema.Number,
    autoApply: Schema.Boolean
  })))
}).annotations({ identifier: "V2VerifyKeyResponseData" })

/** A core verification as v2 answers it. */
export const fromVerification = (answer: VerifyKeyResponse, requestId: string) => ({
  meta: { requestId },
  // One object of one shape for every answer (this runs on every verification): the fields a
  // verification does not have are undefined, which JSON leaves out.
  data: {
    valid: answer.valid,
    code: answer.code === "UNAUTHORIZED" ? "DISABLED" : answer.code,
    keyId: answer.keyId,
    name: answer.name,
    meta: answer.meta,
    expires: answer.expires,
    credits: answer.credits?.remaining,
    enabled: answer.enabled,
    permissions: answer.permissions,
    roles: answer.roles,
    identity: answer.identity,
    ratelimits: answer.ratelimits
  }
})

/** A key's or identity's limits as v2 answers them. */
export const fromRatelimits = (ownerId: string, limits: ReadonlyArray<KeyModel.KeyRatelimit>) =>
  limits.map((limit) => ({
    id: ratelimitId(ownerId, limit.name),
    name: limit.name,
    limit: limit.limit,
    duration: limit.duration,
    autoApply: limit.autoApply
  }))

/** A key as v2 answers it (`getKey`, `whoami`, `listKeys`). */
export const KeyResponseData = Schema.Struct({
  keyId: Schema.String,
  start: Schema.String,
  enabled: Schema.Boolean,
  name: Schema.optional(Schema.String),
  meta: Schema.optional(KeyModel.MetaObject),
  createdAt: Schema.Number,
  updatedAt: Schema.optional(Schema.Number),
  expires: Schema.optional(Schema.Number),
  permissions: Schema.optional(Schema.Array(Schema.String)),
  roles: Schema.optional(Schema.Array(Schema.String)),
  credits: Schema.optional(Schema.Struct({
    remaining: Schema.NullOr(Schema.Number),
    refill: Schema.optional(KeyModel.Refill)
  })),
  identity: Schema.optional(Identity),
  ratelimits: Schema.optional(Schema.Array(RatelimitResponse))
}).annotations({ identifier: "V2Key" })

/** A core key as v2 answers it. */
export const fromKey = (key: KeyView) => ({
  keyId: key.keyId,
  start: key.start,
  enabled: key.enabled,
  name: key.name,
  meta: key.meta,
  createdAt: key.createdAt,
  updatedAt: key.updatedAt,
  expires: key.expires,
  permissions: key.permissions,
  roles: key.roles,
  credits: key.credits === undefined
    ? undefined
    : { remaining: key.credits.remaining, refill: key.credits.refill },
  identity: key.identity,
  ratelimits: fromRatelimits(key.keyId, key.ratelimits)
})

/** Body of `keys.getKey`. `decrypt` is accepted: no key is recoverable, so no plaintext is answered. */
export const GetKeyRequest = Schema.Struct({
  keyId: KeyModel.KeyId,
  decrypt: Schema.optional(KeyModel.Flag)
}).annotations({ identifier: "V2GetKeyRequest" })

/** Body of `keys.whoami`. */
export const WhoamiRequest = KeyModel.SecretInput

/** Body of `keys.deleteKey`: keymeter deletes for good either way. */
export const DeleteKeyRequest = Schema.Struct({
  keyId: KeyModel.KeyId,
  permanent: Schema.optional(KeyModel.Flag)
}).annotations({ identifier: "V2DeleteKeyRequest" })

/** Body of `keys.updateKey`: the fields given change, `null` clears. */
export const UpdateKeyRequest = Schema.Struct({
  keyId: KeyModel.KeyId,
  name: Schema.optional(Schema.NullOr(KeyModel.KeyName)),
  externalId: Schema.optional(Schema.NullOr(KeyModel.ExternalId)),
  meta: Schema.optional(Schema.NullOr(KeyModel.Meta)),
  expires: Schema.optional(Schema.NullOr(KeyModel.Expires)),
  credits: Schema.optional(Schema.NullOr(Schema.Struct({
    remaining: Schema.optional(Schema.NullOr(KeyModel.Count)).annotations({
      description: "null: unlimited, which also removes the refill."
    }),
    refill: Schema.optional(Schema.NullOr(KeyModel.RefillInput))
  }))),
  ratelimits: Schema.optional(Schema.NullOr(IdentityInput.IdentityRatelimits)).annotations({
    description: "Replaces all the key's limits; null or [] removes them."
  }),
  enabled: Schema.optional(KeyModel.Flag),
  roles: Schema.optional(KeyModel.RoleNames),
  permissions: Schema.optional(KeyModel.Permissions)
}).annotations({ identifier: "V2UpdateKeyRequest" })

/** The core input of a v2 `keys.updateKey`. */
export const toUpdateKey = (request: typeof UpdateKeyRequest.Type) => {
  const { credits, ratelimits, roles, ...same } = request
  return {
    ...same,
    ...(credits === null || credits?.remaining === null
      ? { credits: null }
      : credits !== undefined
      ? {
        credits: {
          ...(credits.remaining !== undefined ? { remaining: credits.remaining } : {}),
          ...(credits.refill !== undefined ? { refill: credits.refill } : {})
        }
      }
      : {}),
    ...(ratelimits !== undefined ? { ratelimits: ratelimits ?? [] } : {}),
    ...(roles !== undefined ? { roles: roles.map(roleNamed) } : {})
  }
}

/** Body of `keys.updateCredits`. */
export const UpdateCreditsRequest = Schema.Struct({
  keyId: KeyModel.KeyId,
  operation: Validation.expected(
    Schema.Literal("set", "increment", "decrement"),
    "must be \"set\", \"increment\" or \"decrement\""
  ),
  value: Schema.optional(Schema.NullOr(KeyModel.Count))
}).annotations({ identifier: "V2UpdateCreditsRequest" })

/** The core input of a v2 `keys.updateCredits`. */
export const toUpdateCredits = (request: typeof UpdateCreditsRequest.Type) => ({
  keyId: request.keyId,
  op: request.operation,
  value: request.value ?? null
})

/** Body of `keys.rerollKey`. */
export const RerollKeyRequest = Schema.Struct({
  keyId: KeyModel.KeyId,
  expiration: KeyModel.Integer(0, 4_102_444_800_000, "must be an integer number of milliseconds >= 0")
}).annotations({ identifier: "V2RerollKeyRequest" })

const ROLE_ID = /^role_[0-9A-Z]{26}$/
const PERMISSION_ID = /^perm_[0-9A-Z]{26}$/

/** A role v2 names: by its id when the string is one, else by its name. */
const roleNamed = (role: string): Reference => ROLE_ID.test(role) ? { id: role } : { name: role }

/** Body of `keys.addPermissions`, `removePermissions` and `setPermissions`. */
export const KeyPermissionsRequest = Schema.Struct({
  keyId: KeyModel.KeyId,
  permissions: KeyModel.Permissions
}).annotations({ identifier: "V2KeyPermissionsRequest" })

/** The core input of a change of a key's permissions: slugs (made when missing), or ids to remove. */
export const toKeyPermissions = (op: "add" | "set" | "remove", request: typeof KeyPermissionsRequest.Type) => ({
  keyId: request.keyId,
  permissions: request.permissions.map((permission): Reference =>
    op === "remove"
      ? PERMISSION_ID.test(permission) ? { id: permission } : { slug: permission }
      : { slug: permission, create: true }
  )
})

/** Body of `keys.addRoles`, `removeRoles` and `setRoles`. */
export const KeyRolesRequest = Schema.Struct({
  keyId: KeyModel.KeyId,
  roles: KeyModel.RoleNames
}).annotations({ identifier: "V2KeyRolesRequest" })

/** The core input of a change of a key's roles: names or ids, which must exist. */
export const toKeyRoles = (request: typeof KeyRolesRequest.Type) => ({
  keyId: request.keyId,
  roles: request.roles.map(roleNamed)
})

/** A key's hash as v2 imports it: the SHA-256 of the secret, in hex or base64. */
const MigratedHash = Validation.expected(
  Schema.String.pipe(
    Schema.filter((value) =>
      /^[0-9a-fA-F]{64}$/.test(value) ||
      (/^[A-Za-z0-9+/]{43}=$/.test(value) && Buffer.from(value, "base64").length === 32)
    )
  ),
  "must be a SHA-256 digest in 64 hex digits or 44 base64 characters"
).annotations({
  arbitrary: () => (fc) => fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString("hex"))
})

/** Body of `keys.migrateKeys`. */
export const MigrateKeysRequest = Schema.Struct({
  migrationId: MigrationId.annotations({ description: "Accepted and not used: hashes are SHA-256." }),
  apiId: KeyModel.ApiId,
  keys: Schema.Array(Schema.Struct({ hash: MigratedHash, ...keyFields })).pipe(
    Schema.minItems(1, { message: () => "must hold at least 1 key" }),
    Schema.maxItems(KeyModel.MAX_MIGRATE_BATCH, {
      message: () => `must hold at most ${KeyModel.MAX_MIGRATE_BATCH} keys`
    })
  )
}).annotations({ identifier: "V2MigrateKeysRequest" })

/** The hex SHA-256 of an imported hash. */
const hexOf = (hash: string) => hash.length === 64 ? hash.toLowerCase() : Buffer.from(hash, "base64").toString("hex")

/** The core input of a v2 `keys.migrateKeys`. */
export const toMigrateKeys = (request: typeof MigrateKeysRequest.Type) =>
  request.keys.map(({ hash, ...key }) => ({ apiId: request.apiId, hash: hexOf(hash), ...keyOf(key) }))

/** Answer of `keys.migrateKeys`: what was imported, and the hashes a key had already. */
export const MigrateKeysResponseData = Schema.Struct({
  migrated: Schema.Array(Schema.Struct({ hash: Schema.String, keyId: Schema.String })),
  failed: Schema.Array(Schema.String)
}).annotations({ identifier: "V2MigrateKeysResponseData" })

/** The answer of a v2 migration from core's: its keys by the hashes the body gave. */
export const fromMigrated = (
  request: typeof MigrateKeysRequest.Type,
  migrated: { readonly keyIds: ReadonlyArray<string>; readonly skipped: ReadonlyArray<number> }
) => {
  const skipped = new Set(migrated.skipped)
  const kept = request.keys.filter((_, i) => !skipped.has(i))
  return {
    migrated: kept.map((key, i) => ({ hash: key.hash, keyId: migrated.keyIds[i]! })),
    failed: migrated.skipped.map((i) => request.keys[i]!.hash)
  }
}

/** Body of `apis.listKeys`. */
export const ListKeysRequest = Schema.Struct({
  apiId: KeyModel.ApiId,
  limit: Schema.optional(
    KeyModel.Integer(1, KeyModel.MAX_KEY_PAGE, `must be an integer from 1 to ${KeyModel.MAX_KEY_PAGE}`)
  ),
  cursor: Schema.optional(Validation.boundedString("a cursor", 1, 1024)),
  externalId: Schema.optional(KeyModel.ExternalId),
  decrypt: Schema.optional(KeyModel.Flag),
  revalidateKeysCache: Schema.optional(KeyModel.Flag)
}).annotations({ identifier: "V2ListKeysRequest" })

/** The core input of a v2 `apis.listKeys`. */
export const toListKeys = (request: typeof ListKeysRequest.Type): KeyModel.ListKeysInput => ({
  apiId: request.apiId,
  ...(request.limit !== undefined ? { limit: request.limit } : {}),
  ...(request.cursor !== undefined ? { cursor: request.cursor } : {}),
  ...(request.externalId !== undefined ? { externalId: request.externalId } : {})
})
