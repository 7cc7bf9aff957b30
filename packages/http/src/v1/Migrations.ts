/**
 * Unkey v1's `migrations.createKeys` on the wire, as `@unkey/api@0.38.0` types it
 * (docs/unkey-v1-contract.md): keys imported with their plaintext or its SHA-256, their
 * `ratelimit` in v1's token-bucket shape, mapped onto core's key input.
 */
import * as KeyModel from "@keymeter/core/Key"
import { MAX_SECRET_LENGTH } from "@keymeter/core/KeyVerifier"
import { Duration } from "@keymeter/core/Override"
import * as Validation from "@keymeter/core/Validation"
import * as Schema from "effect/Schema"

/** A key's hash as v1 imports it: the SHA-256 of the secret, in base64. */
const ImportedHash = Schema.Struct({
  value: Validation.expected(
    Schema.String.pipe(
      Schema.filter((value) => /^[A-Za-z0-9+/]{43}=$/.test(value) && Buffer.from(value, "base64").length === 32)
    ),
    "must be a SHA-256 digest in base64 (44 characters)"
  ).annotations({
    arbitrary: () => (fc) =>
      fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString("base64"))
  }),
  variant: Validation.expected(Schema.Literal("sha256_base64"), "must be \"sha256_base64\"")
})

/** One key of `migrations.createKeys`: its `ratelimit` is v1's token-bucket shape. */
export const MigrateKeyRequest = Schema.Struct({
  apiId: KeyModel.ApiId,
  prefix: Schema.optional(KeyModel.Prefix),
  name: Schema.optional(KeyModel.KeyName),
  plaintext: Schema.optional(Validation.boundedString("a key", 1, MAX_SECRET_LENGTH)),
  hash: Schema.optional(ImportedHash),
  start: Schema.optional(Validation.boundedString("a start", 1, 64)),
  ownerId: Schema.optional(KeyModel.ExternalId).annotations({ description: "Deprecated: use externalId" }),
  externalId: Schema.optional(KeyModel.ExternalId),
  meta: Schema.optional(KeyModel.Meta),
  roles: Schema.optional(KeyModel.RoleNames),
  permissions: Schema.optional(KeyModel.Permissions),
  expires: Schema.optional(KeyModel.Expires),
  remaining: Schema.optional(KeyModel.Count),
  refill: Schema.optional(KeyModel.RefillInput),
  ratelimit: Schema.optional(
    Schema.Struct({
      async: Schema.optional(KeyModel.Flag),
      type: Schema.optional(
        Validation.expected(Schema.Literal("fast", "consistent"), "must be \"fast\" or \"consistent\"")
      ),
      limit: KeyModel.Positive,
      refillRate: KeyModel.Positive,
      refillInterval: Duration
    }).annotations({ description: "limit requests per refillInterval ms (refillRate is accepted, not used)" })
  ),
  enabled: Schema.optional(KeyModel.Flag),
  environment: Schema.optional(KeyModel.Environment)
}).pipe(
  Schema.filter((item) =>
    [
      (item.plaintext === undefined) === (item.hash === undefined) && {
        path: ["plaintext"],
        message: "give the key's plaintext or its hash, one of them"
      },
      item.refill !== undefined && item.remaining === undefined &&
      { path: ["refill"], message: "needs remaining: a refill sets the credits a key has" }
    ].filter((issue) => issue !== false)
  )
).annotations({ identifier: "V1MigrateKeyRequest" })

/** Body of `migrations.createKeys`: an array of keys. */
export const MigrateKeysRequest = Schema.Array(MigrateKeyRequest).pipe(
  Schema.minItems(1, { message: () => "must hold at least 1 key" }),
  Schema.maxItems(KeyModel.MAX_MIGRATE_BATCH, { message: () => `must hold at most ${KeyModel.MAX_MIGRATE_BATCH} keys` })
)

/** The core input of a v1 `migrations.createKeys`. */
export const toMigrateKeys = (items: typeof MigrateKeysRequest.Type) =>
  items.map((item) => {
    const externalId = item.externalId ?? item.ownerId
    return {
      apiId: item.apiId,
      ...(item.prefix !== undefined ? { prefix: item.prefix } : {}),
      ...(item.name !== undefined ? { name: item.name } : {}),
      ...(item.plaintext !== undefined ? { secret: item.plaintext } : {}),
      ...(item.hash !== undefined ? { hash: Buffer.from(item.hash.value, "base64").toString("hex") } : {}),
      ...(item.start !== undefined ? { start: item.start } : {}),
      ...(externalId !== undefined ? { externalId } : {}),
      ...(item.meta !== undefined ? { meta: item.meta } : {}),
      ...(item.roles !== undefined ? { roles: item.roles } : {}),
      ...(item.permissions !== undefined ? { permissions: item.permissions } : {}),
      ...(item.expires !== undefined ? { expires: item.expires } : {}),
      ...(item.enabled !== undefined ? { enabled: item.enabled } : {}),
      ...(item.remaining !== undefined
        ? { credits: { remaining: item.remaining, ...(item.refill !== undefined ? { refill: item.refill } : {}) } }
        : {}),
      ...(item.ratelimit !== undefined
        ? {
          ratelimits: [{
            name: KeyModel.DEFAULT_RATELIMIT,
            limit: item.ratelimit.limit,
            duration: item.ratelimit.refillInterval,
            async: item.ratelimit.async ?? (item.ratelimit.type === undefined ? false : item.ratelimit.type === "fast"),
            autoApply: true
          }]
        }
        : {}),
      ...(item.environment !== undefined ? { environment: item.environment } : {})
    }
  })
