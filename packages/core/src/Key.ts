/**
 * API keys that keymeter issues and verifies: the stored key (its secret's hash, never the secret),
 * its credits and per-key rate limits, the identity it belongs to, and the wire shapes of the
 * `keys.*` routes.
 */
import * as Schema from "effect/Schema"
import { MAX_BYTE_LENGTH, MIN_BYTE_LENGTH } from "./KeySecret.js"
import { MAX_NAME_LENGTH } from "./Namespace.js"
import { Duration } from "./Override.js"
import { MAX_PERMISSION_LENGTH } from "./PermissionQuery.js"
import { MAX_ROLES, Reference } from "./Role.js"
import { boundedString, expected } from "./Validation.js"

/** An end customer of a workspace, shared by the keys created with its `externalId`. */

/** How a key's credits are refilled: set back to `amount` each day, or each month on `refillDay`. */
export const Refill = Schema.Struct({
  interval: Schema.Literal("daily", "monthly"),
  amount: Schema.Number,
  refillDay: Schema.optional(Schema.Number)
})
export type Refill = Schema.Schema.Type<typeof Refill>

/** A key's `meta`: any JSON object (its size is bounded where callers give it). */
export const MetaObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** A rate limit a key carries: `limit` requests per `duration` ms under the name `name`. */
export const KeyRatelimit = Schema.Struct({
  name: Schema.String,
  limit: Schema.Number,
  duration: Schema.Number,
  autoApply: Schema.Boolean,
  /**
   * Unkey's `async` ("fast") flag, kept as given and answered back. keymeter's decisions are exact
   * either way: a window lives in one place (this process, or Redis when shared).
   */
  async: Schema.optional(Schema.Boolean)
})
export type KeyRatelimit = Schema.Schema.Type<typeof KeyRatelimit>

/**
 * An end customer of a workspace, shared by the keys created with its `externalId`: its `meta` is
 * answered with their verifications, and its limits are theirs too (shared by all of them).
 */
export class Identity extends Schema.Class<Identity>("KeyIdentity")({
  id: Schema.String,
  workspaceId: Schema.String,
  externalId: Schema.String,
  /** A disabled identity's keys verify as UNAUTHORIZED. */
  enabled: Schema.Boolean,
  meta: Schema.optional(MetaObject),
  /** Absent: none. */
  ratelimits: Schema.optional(Schema.Array(KeyRatelimit)),
  createdAt: Schema.Number
}) {}

/**
 * A stored key. `remaining` is not here: credits change on every verification and are kept apart
 * (see `Catalog.spendCredits`), so a key's configuration can be remembered while its balance moves.
 */
export class Key extends Schema.Class<Key>("Key")({
  id: Schema.String,
  workspaceId: Schema.String,
  apiId: Schema.String,
  /** SHA-256 of the secret, hex. */
  hash: Schema.String,
  /** The first characters of the secret, for people to recognise it. */
  start: Schema.String,
  name: Schema.optional(Schema.String),
  meta: Schema.optional(MetaObject),
  /** Slugs of the workspace's permissions the key holds itself. */
  permissions: Schema.Array(Schema.String),
  /** Ids of the workspace's roles the key holds (absent: none). */
  roles: Schema.optional(Schema.Array(Schema.String)),
  enabled: Schema.Boolean,
  expires: Schema.optional(Schema.Number),
  /** Whether the key has credits at all (its balance is read with them). */
  credited: Schema.Boolean,
  refill: Schema.optional(Refill),
  ratelimits: Schema.Array(KeyRatelimit),
  identityId: Schema.optional(Schema.String),
  /** A label such as `live` or `test`, answered when the key verifies. */
  environment: Schema.optional(Schema.String),
  createdAt: Schema.Number,
  updatedAt: Schema.Number
}) {}

/** The name of the limit Unkey v1 gives a key with its `ratelimit` field: applied on every verification. */
export const DEFAULT_RATELIMIT = "default"

/** The id of a key's or identity's limit: its owner and its name (a name is its owner's once). */
export const ratelimitId = (ownerId: string, name: string) => `${ownerId}:${name}`

/** A key's credits: its balance and when it was last refilled (unix ms; its creation before any). */
export interface Credits {
  readonly remaining: number
  readonly refilledAt: number
}

/**
 * A spend of `cost` from `balance`, the rule every adapter applies in one atomic step: a refill due
 * (last one before `refill.since`) first sets the balance to `refill.amount`, refilled at `now`;
 * then `cost` is taken if the balance holds it. `changed`: whether anything is to be written.
 */
export const spend = (
  balance: Credits,
  cost: number,
  refill: { readonly since: number; readonly amount: number } | undefined,
  now: number
): { readonly balance: Credits; readonly spent: boolean; readonly changed: boolean } => {
  const due = refill !== undefined && balance.refilledAt < refill.since
  const base = due ? { remaining: refill.amount, refilledAt: now } : balance
  const spent = base.remaining >= cost
  return {
    balance: spent ? { ...base, remaining: base.remaining - cost } : base,
    spent,
    changed: due || (spent && cost > 0)
  }
}

/** A balance set, incremented (up to 2^53 - 1) or decremented (not below 0). */
export const changeBalance = (balance: Credits, op: "set" | "increment" | "decrement", value: number): Credits => ({
  ...balance,
  remaining: op === "set"
    ? value
    : op === "increment"
    ? Math.min(Number.MAX_SAFE_INTEGER, balance.remaining + value)
    : Math.max(0, balance.remaining - value)
})

// ---------------------------------------------------------------------------------------------
// Wire shapes

/** Longest `meta`, as JSON text. */
export const MAX_META_BYTES = 16 * 1024
/** Most permissions and rate limits one key holds. */
export const MAX_PERMISSIONS = 1000
export const MAX_RATELIMITS = 50

export const Integer = (min: number, max: number, expectation: string) =>
  expected(Schema.Number.pipe(Schema.int(), Schema.between(min, max)), expectation)

/** A whole number from 0 (credits, costs, counts). */
export const Count = Integer(0, Number.MAX_SAFE_INTEGER, "must be an integer >= 0")

/** A whole number from 1 (limits, amounts). */
export const Positive = Integer(1, Number.MAX_SAFE_INTEGER, "must be an integer >= 1")

/** A `meta` object: any JSON object of at most {@link MAX_META_BYTES} bytes. */
export const Meta = MetaObject.pipe(
  Schema.filter((meta) =>
    Buffer.byteLength(JSON.stringify(meta)) <= MAX_META_BYTES ||
    `must be at most ${MAX_META_BYTES} bytes of JSON`
  )
)

/** A limit name: a rate-limit namespace's name, so no `*` (that names patterns of overrides). */
export const RatelimitName = boundedString("a rate limit name", 1, MAX_NAME_LENGTH).pipe(
  Schema.filter((name) => !name.includes("*") || "must not contain *")
)

export const Flag = expected(Schema.Boolean, "must be true or false")

const RatelimitInput = Schema.Struct({
  name: RatelimitName,
  limit: Positive,
  duration: Duration,
  autoApply: Schema.optional(Flag),
  async: Schema.optional(Flag)
})

/** The limit named {@link DEFAULT_RATELIMIT} as `keys.updateKey` sets it alone (Unkey v1's `ratelimit`). */
const DefaultRatelimitInput = Schema.Struct({
  limit: Positive,
  duration: Duration,
  async: Schema.optional(Flag)
})

export const RefillInput = Schema.Struct({
  interval: expected(Schema.Literal("daily", "monthly"), "must be \"daily\" or \"monthly\""),
  amount: Positive,
  refillDay: Schema.optional(Integer(1, 31, "must be a day of the month from 1 to 31"))
}).pipe(
  Schema.filter((refill) =>
    refill.refillDay === undefined || refill.interval === "monthly" ||
    "refillDay: applies only to a monthly refill"
  )
)

const CreditsInput = Schema.Struct({
  remaining: Count,
  refill: Schema.optional(RefillInput)
})

export const Permissions = Schema.Array(boundedString("a permission", 1, MAX_PERMISSION_LENGTH)).pipe(
  Schema.maxItems(MAX_PERMISSIONS, { message: () => `must hold at most ${MAX_PERMISSIONS} permissions` })
)

/** Names of roles a key is given (each must exist). */
export const RoleNames = Schema.Array(boundedString("a role name", 1, MAX_PERMISSION_LENGTH)).pipe(
  Schema.maxItems(MAX_ROLES, { message: () => `must hold at most ${MAX_ROLES} roles` })
)

/** Permissions a change names: by name (a string), or by reference (id, slug or name; create). */
export const PermissionsNamed = Schema.Array(
  Schema.Union(boundedString("a permission", 1, MAX_PERMISSION_LENGTH), Reference)
).pipe(Schema.maxItems(MAX_PERMISSIONS, { message: () => `must hold at most ${MAX_PERMISSIONS} permissions` }))

/** Roles a change names: by name (a string), or by reference (id or name; create). */
export const RolesNamed = Schema.Array(Schema.Union(boundedString("a role name", 1, MAX_PERMISSION_LENGTH), Reference))
  .pipe(Schema.maxItems(MAX_ROLES, { message: () => `must hold at most ${MAX_ROLES} roles` }))

/** Body of `keys.addPermissions` (and set, remove): the permissions named. */
export const KeyPermissionsInput = Schema.Struct({
  keyId: boundedString("a key id", 1, 255),
  permissions: Schema.Array(Reference).pipe(
    Schema.maxItems(MAX_PERMISSIONS, { message: () => `must hold at most ${MAX_PERMISSIONS} permissions` })
  )
}).annotations({ identifier: "KeyPermissionsInput" })
export type KeyPermissionsInput = Schema.Schema.Type<typeof KeyPermissionsInput>

/** Body of `keys.addRoles` (and set, remove): the roles named. */
export const KeyRolesInput = Schema.Struct({
  keyId: boundedString("a key id", 1, 255),
  roles: Schema.Array(Reference).pipe(
    Schema.maxItems(MAX_ROLES, { message: () => `must hold at most ${MAX_ROLES} roles` })
  )
}).annotations({ identifier: "KeyRolesInput" })
export type KeyRolesInput = Schema.Schema.Type<typeof KeyRolesInput>

export const Ratelimits = Schema.Array(RatelimitInput).pipe(
  Schema.maxItems(MAX_RATELIMITS, { message: () => `must hold at most ${MAX_RATELIMITS} rate limits` }),
  Schema.filter((limits) =>
    new Set(limits.map((l) => l.name)).size === limits.length || "must not name one rate limit twice"
  )
)

export const ApiId = boundedString("an api id", 1, 255)
export const KeyId = boundedString("a key id", 1, 255)
export const ExternalId = boundedString("an external id", 1, 255)
export const Environment = boundedString("an environment", 1, 255)
export const KeyName = boundedString("a name", 1, 255)
/** Latest `expires`: the year 2100, so any time it is compared with stays exact. */
export const Expires = Integer(0, 4_102_444_800_000, "must be a time in unix milliseconds up to the year 2100")

/** Body of `keys.createKey`. */
export const Prefix = expected(
  Schema.String.pipe(Schema.pattern(/^[a-zA-Z0-9]{1,16}$/)),
  "must be 1 to 16 letters or digits"
)
export const ByteLength = Integer(
  MIN_BYTE_LENGTH,
  MAX_BYTE_LENGTH,
  `must be an integer from ${MIN_BYTE_LENGTH} to ${MAX_BYTE_LENGTH}`
)

export const CreateKeyInput = Schema.Struct({
  apiId: ApiId,
  name: Schema.optional(KeyName),
  prefix: Schema.optional(Prefix),
  byteLength: Schema.optional(ByteLength),
  externalId: Schema.optional(ExternalId),
  meta: Schema.optional(Meta),
  permissions: Schema.optional(Permissions),
  roles: Schema.optional(RoleNames),
  enabled: Schema.optional(expected(Schema.Boolean, "must be true or false")),
  expires: Schema.optional(Expires),
  credits: Schema.optional(CreditsInput),
  ratelimits: Schema.optional(Ratelimits),
  environment: Schema.optional(Environment)
}).annotations({ identifier: "CreateKeyInput" })
export type CreateKeyInput = Schema.Schema.Type<typeof CreateKeyInput>

/** The fields a new key is made of (`createKey`'s, and an imported key's). */
export type KeyFields = Omit<CreateKeyInput, "prefix" | "byteLength">

/** Most keys one import takes. */
export const MAX_MIGRATE_BATCH = 1000

const Sha256Hex = expected(
  Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/)),
  "must be a SHA-256 digest in 64 lowercase hex digits"
)

/**
 * A key made elsewhere, imported by its secret or the secret's SHA-256 (one of them), with the
 * fields `createKey` takes; `start`, its first characters, is the secret's start when not given.
 */
export const MigrateKeyInput = Schema.Struct({
  ...CreateKeyInput.fields,
  secret: Schema.optional(boundedString("a key", 1, 1024)),
  hash: Schema.optional(Sha256Hex),
  start: Schema.optional(boundedString("a start", 1, 64))
}).pipe(
  Schema.omit("byteLength"),
  Schema.filter((item) =>
    (item.secret === undefined) !== (item.hash === undefined) ||
    { path: ["secret"], message: "give the key's secret or its hash, one of them" }
  )
).annotations({ identifier: "MigrateKeyInput" })

/** Body of `migrations.createKeys`: 1 to {@link MAX_MIGRATE_BATCH} keys, imported all or none. */
export const MigrateKeysInput = Schema.Array(MigrateKeyInput).pipe(
  Schema.minItems(1, { message: () => "must hold at least 1 key" }),
  Schema.maxItems(MAX_MIGRATE_BATCH, { message: () => `must hold at most ${MAX_MIGRATE_BATCH} keys` })
).annotations({ identifier: "MigrateKeysInput" })

/**
 * A change of a key's credits: `remaining` and `refill` given change, the other is kept (`refill`
 * null removes it). A key without credits gets them only with a `remaining`.
 */
const CreditsChange = Schema.Struct({
  remaining: Schema.optional(Count),
  refill: Schema.optional(Schema.NullOr(RefillInput))
})

/**
 * Body of `keys.updateKey`: the fields given change; `null` clears an optional one (`credits` null:
 * no credits, unlimited). `ratelimits` replaces all the key's limits; `ratelimit` sets or removes
 * the one named {@link DEFAULT_RATELIMIT} alone (auto-applied), the others kept.
 */
export const UpdateKeyInput = Schema.Struct({
  keyId: KeyId,
  name: Schema.optional(Schema.NullOr(KeyName)),
  externalId: Schema.optional(Schema.NullOr(ExternalId)),
  meta: Schema.optional(Schema.NullOr(Meta)),
  permissions: Schema.optional(PermissionsNamed),
  roles: Schema.optional(RolesNamed),
  enabled: Schema.optional(Flag),
  expires: Schema.optional(Schema.NullOr(Expires)),
  credits: Schema.optional(Schema.NullOr(CreditsChange)),
  ratelimits: Schema.optional(Ratelimits),
  ratelimit: Schema.optional(Schema.NullOr(DefaultRatelimitInput))
}).pipe(
  Schema.filter((input) =>
    input.ratelimits === undefined || input.ratelimit === undefined ||
    "ratelimit: give ratelimits or ratelimit, not both"
  )
).annotations({ identifier: "UpdateKeyInput" })
export type UpdateKeyInput = Schema.Schema.Type<typeof UpdateKeyInput>

/** Query of `keys.getKey`, body of `keys.deleteKey`. */
export const KeyIdInput = Schema.Struct({ keyId: KeyId }).annotations({ identifier: "KeyIdInput" })

/** Body of `keys.whoami`: a key's secret. */
export const SecretInput = Schema.Struct({ key: boundedString("a key", 1, 1024) }).annotations({
  identifier: "SecretInput"
})

/** Body of `keys.updateCredits`. */
export const UpdateCreditsInput = Schema.Struct({
  keyId: KeyId,
  op: expected(Schema.Literal("set", "increment", "decrement"), "must be \"set\", \"increment\" or \"decrement\""),
  value: Schema.NullOr(Integer(0, Number.MAX_SAFE_INTEGER, "must be an integer >= 0 (or null: unlimited)"))
}).annotations({ identifier: "UpdateCreditsInput" })
export type UpdateCreditsInput = Schema.Schema.Type<typeof UpdateCreditsInput>

/** Largest page of `keys.listKeys`. */
export const MAX_KEY_PAGE = 100

/** Query of `keys.listKeys`. */
export const ListKeysInput = Schema.Struct({
  apiId: ApiId,
  externalId: Schema.optional(ExternalId),
  limit: Schema.optional(Integer(1, MAX_KEY_PAGE, `must be an integer from 1 to ${MAX_KEY_PAGE}`)),
  cursor: Schema.optional(boundedString("a cursor", 1, 1024))
}).annotations({ identifier: "ListKeysInput" })
export type ListKeysInput = Schema.Schema.Type<typeof ListKeysInput>

/** A key as the API answers it: never its secret or hash. */
export const KeyView = Schema.Struct({
  keyId: Schema.String,
  workspaceId: Schema.String,
  apiId: Schema.String,
  start: Schema.String,
  name: Schema.optional(Schema.String),
  meta: Schema.optional(MetaObject),
  permissions: Schema.Array(Schema.String),
  roles: Schema.Array(Schema.String).annotations({ description: "the names of the roles the key holds" }),
  enabled: Schema.Boolean,
  expires: Schema.optional(Schema.Number),
  credits: Schema.optional(Schema.Struct({
    remaining: Schema.Number,
    refill: Schema.optional(Refill),
    lastRefillAt: Schema.optional(Schema.Number.annotations({ description: "unix ms of the last refill" }))
  })),
  ratelimits: Schema.Array(KeyRatelimit),
  identity: Schema.optional(Schema.Struct({ id: Schema.String, externalId: Schema.String, meta: MetaObject })),
  environment: Schema.optional(Schema.String),
  createdAt: Schema.Number,
  updatedAt: Schema.Number
}).annotations({ identifier: "Key" })
export type KeyView = Schema.Schema.Type<typeof KeyView>

/** Answer of `keys.createKey`: the secret, shown this once (absent on a repeat of an idempotency key). */
export const CreatedKey = Schema.Struct({
  keyId: Schema.String,
  key: Schema.optional(Schema.String)
}).annotations({ identifier: "CreatedKey" })

/** Answer of `keys.listKeys`. */
export const KeyPage = Schema.Struct({
  keys: Schema.Array(KeyView),
  total: Schema.Number,
  cursor: Schema.optional(Schema.String)
}).annotations({ identifier: "KeyPage" })

/** The API's view of a key, with its identity and balance. */
export const toView = (
  key: Key,
  identity: Identity | undefined,
  credits: Credits | undefined,
  roles: ReadonlyArray<string>
): KeyView => ({
  keyId: key.id,
  workspaceId: key.workspaceId,
  apiId: key.apiId,
  start: key.start,
  ...(key.name !== undefined ? { name: key.name } : {}),
  ...(key.meta !== undefined ? { meta: key.meta } : {}),
  permissions: key.permissions,
  roles,
  enabled: key.enabled,
  ...(key.expires !== undefined ? { expires: key.expires } : {}),
  ...(key.credited
    ? {
      credits: {
        remaining: credits?.remaining ?? 0,
        ...(key.refill !== undefined
          ? { refill: key.refill, ...(credits !== undefined ? { lastRefillAt: credits.refilledAt } : {}) }
          : {})
      }
    }
    : {}),
  ratelimits: key.ratelimits,
  ...(identity !== undefined
    ? { identity: { id: identity.id, externalId: identity.externalId, meta: identity.meta ?? {} } }
    : {}),
  ...(key.environment !== undefined ? { environment: key.environment } : {}),
  createdAt: key.createdAt,
  updatedAt: key.updatedAt
})
