/**
 * Keys keymeter issues: create, read, list, update, delete, and change their credits. Their
 * verification is `KeyVerifier`'s; their identities are `Identities`'; the permissions and roles
 * a key holds itself change in `internal/KeyGrants`.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Auth } from "./Auth.js"
import * as Checker from "./Checker.js"
import * as Cursor from "./Cursor.js"
import type { NotFound, StorageError } from "./Errors.js"
import { Conflict, ValidationError } from "./Errors.js"
import { IdempotencyKeys, type KeyOptions } from "./IdempotencyKeys.js"
import { Identities } from "./Identities.js"
import * as Ids from "./Ids.js"
import * as KeyAccess from "./internal/KeyAccess.js"
import { KeyCache } from "./internal/KeyCache.js"
import * as KeyGrants from "./internal/KeyGrants.js"
import * as Span from "./internal/Span.js"
import type { Credits, KeyView } from "./Key.js"
import * as KeyModel from "./Key.js"
import { Key } from "./Key.js"
import * as KeySecret from "./KeySecret.js"
import type { Principal } from "./Permission.js"
import * as Permission from "./Permission.js"
import * as RootKey from "./RootKey.js"
import { Catalog } from "./Storage.js"
import * as Validation from "./Validation.js"

export {
  /** How many keys verification keeps in memory. */
  KeyCacheCapacity
} from "./internal/KeyCache.js"

/** Issues and manages keys in the caller's workspace. */
export class Keys extends Effect.Service<Keys>()("@keymeter/core/Keys", {
  effect: Effect.gen(function*() {
    const catalog = yield* Catalog
    const auth = yield* Auth
    const receipts = yield* IdempotencyKeys
    // The hot writes' inputs: checked by their compiled checks first (see `Checker.decode`).
    const decodeCreate = Checker.decode(KeyModel.CreateKeyInput)
    const decodeUpdate = Validation.decode(KeyModel.UpdateKeyInput)
    const decodeKeyId = Validation.decode(KeyModel.KeyIdInput)
    const decodeList = Validation.decode(KeyModel.ListKeysInput)
    const decodeCredits = Checker.decode(KeyModel.UpdateCreditsInput)
    const decodeWhoami = Validation.decode(KeyModel.SecretInput)
    const decodeMigrate = Validation.decode(KeyModel.MigrateKeysInput)
    const decodeReroll = Validation.decode(RerollKeyInput)
    const cache = yield* KeyCache
    const identities = yield* Identities

    const access = yield* KeyAccess.make
    const { grants, keyFor, replace, requireApi, view } = access
    const grantChanges = yield* KeyGrants.make(access)
    const authorizeLimits = identities.authorizeLimits

    /**
     * Creates a key; its secret is in the answer and nowhere else, ever. A repeat under the same
     * idempotency key answers the key's id without its secret (never kept, not even in the receipt).
     */
    const create = (principal: Principal, input: unknown, options?: KeyOptions) =>
      Effect.gen(function*() {
        const request = yield* decodeCreate(input)
        yield* auth.authorize(principal, Permission.required.createKey(request.apiId))
        yield* requireApi(principal, request.apiId)
        yield* authorizeLimits(principal, (request.ratelimits ?? []).map((limit) => limit.name))
        const granted = yield* grants(principal, request.apiId, "create_key", request.permissions, request.roles)
        return yield* receipts.once<{ readonly keyId: string; readonly key?: string }, StorageError, never>(
          {
            workspaceId: principal.workspaceId,
            key: options?.idempotencyKey,
            name: options?.idempotencyKeyName ?? "idempotencyKey",
            operation: "createKey",
            canonical: () => request
          },
          () => createNow(principal, request, granted.slugs ?? [], granted.roleIds ?? []),
          { storeAfter: true, kept: (answer) => ({ keyId: answer.keyId }) }
        )
      }).pipe(Span.span("Keys.create"))

    /**
     * A new key of `request`'s fields, its secret known by its hash and `start`, with its first
     * balance; its identity made now when it names a new external id.
     */
    const newKey = (
      principal: Principal,
      request: KeyModel.KeyFields,
      secret: { readonly hash: string; readonly start: string },
      granted: { readonly permissions: ReadonlyArray<string>; readonly roles: ReadonlyArray<string> },
      now: number
    ) =>
      Effect.gen(function*() {
        const identity = request.externalId === undefined
          ? undefined
          : yield* identities.ensure(principal.workspaceId, request.externalId, now)
        const key = new Key({
          id: Ids.make(Ids.Prefix.key, now),
          workspaceId: principal.workspaceId,
          apiId: request.apiId,
          hash: secret.hash,
          start: secret.start,
          ...(request.name !== undefined ? { name: request.name } : {}),
          ...(request.meta !== undefined ? { meta: request.meta } : {}),
          permissions: granted.permissions,
          ...(granted.roles.length > 0 ? { roles: granted.roles } : {}),
          enabled: request.enabled ?? true,
          ...(request.expires !== undefined ? { expires: request.expires } : {}),
          credited: request.credits !== undefined,
          ...(request.credits?.refill !== undefined ? { refill: request.credits.refill } : {}),
          ratelimits: (request.ratelimits ?? []).map((limit) => ({ ...limit, autoApply: limit.autoApply ?? false })),
          ...(identity !== undefined ? { identityId: identity.id } : {}),
          ...(request.environment !== undefined ? { environment: request.environment } : {}),
          createdAt: now,
          updatedAt: now
          // Its fields are the decoded request's and values made here: checked already.
        }, { disableValidation: true })
        const credits: Credits | undefined = request.credits === undefined
          ? undefined
          : { remaining: request.credits.remaining, refilledAt: now }
        return { key, credits }
      })

    const createNow = (
      principal: Principal,
      request: KeyModel.CreateKeyInput,
      permissions: ReadonlyArray<string>,
      roles: ReadonlyArray<string>
    ) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const secret = KeySecret.generateSecret(request.prefix, request.byteLength ?? KeySecret.DEFAULT_BYTE_LENGTH)
        const { credits, key } = yield* newKey(
          principal,
          request,
          { hash: RootKey.hash(secret), start: KeySecret.startOf(secret, request.prefix) },
          { permissions, roles },
          now
        )
        const created = yield* cache.write({ hashes: [key.hash] }, catalog.insertKey(key, credits))
        // A collision of 128 random bits or more: astronomically unlikely, and refused rather than overwritten.
        if (created === "conflict") return yield* Effect.die(new Error("a new key collided with an existing one"))
        return { keyId: key.id, key: secret }
      })

    /**
     * Imports keys made elsewhere, by their secret or its SHA-256, all or none: a key whose secret
     * a key of the workspace has already, or two of the batch alike, is a conflict and nothing is
     * imported. With `skipExisting` (Unkey v2's migrateKeys), such keys are skipped instead (their
     * indexes answered in `skipped`) and the others imported. Each is created as `createKey` would
     * create it (its permissions and limits checked alike).
     */
    const migrate = (principal: Principal, input: unknown, options?: { readonly skipExisting?: boolean }) =>
      Effect.gen(function*() {
        const items = yield* decodeMigrate(input)
        for (const apiId of new Set(items.map((item) => item.apiId))) {
          yield* auth.authorize(principal, Permission.required.createKey(apiId))
          yield* requireApi(principal, apiId)
        }
        yield* authorizeLimits(principal, items.flatMap((item) => (item.ratelimits ?? []).map((limit) => limit.name)))
        const now = yield* Clock.currentTimeMillis
        const entries = yield* Effect.forEach(items, (item) =>
          Effect.gen(function*() {
            const granted = yield* grants(principal, item.apiId, "create_key", item.permissions, item.roles)
            const hash = item.hash ?? RootKey.hash(item.secret!)
            const start = item.start ??
              (item.secret !== undefined ? KeySecret.startOf(item.secret, item.prefix) : item.prefix ?? "")
            return yield* newKey(
              principal,
              item,
              { hash, start },
              { permissions: granted.slugs ?? [], roles: granted.roleIds ?? [] },
              now
            )
          }))
        const insert = (indexes: ReadonlyArray<number>) => {
          const batch = indexes.map((i) => entries[i]!)
          return cache.write({ hashes: batch.map(({ key }) => key.hash) }, catalog.insertKeys(batch))
        }
        let kept = entries.map((_, i) => i)
        // Skipping: what exists is left out, and the batch inserted; a key made meanwhile with one of
        // its secrets makes it look again, once.
        for (let attempt = 0; options?.skipExisting === true && attempt < 2; attempt++) {
          kept = yield* absent(entries.map(({ key }) => key.hash))
          if (kept.length === 0 || (yield* insert(kept)) !== "conflict") {
            return {
              keyIds: kept.map((i) => entries[i]!.key.id),
              skipped: entries.flatMap((_, i) => kept.includes(i) ? [] : [i])
            }
          }
        }
        if ((yield* insert(kept)) === "conflict") {
          return yield* new Conflict({
            message: "keys: a key of this batch has the secret of a key of the workspace, or of another key of " +
              "the batch; nothing was imported"
          })
        }
        return { keyIds: kept.map((i) => entries[i]!.key.id), skipped: [] as Array<number> }
      }).pipe(Span.span("Keys.migrate"))

    /** The indexes of `hashes` no key has yet, each hash's first only. */
    const absent = (hashes: ReadonlyArray<string>) =>
      Effect.map(
        Effect.forEach(hashes, (hash) => catalog.findKeyByHash(hash), { concurrency: 8 }),
        (found) => hashes.flatMap((hash, i) => Option.isNone(found[i]!) && hashes.indexOf(hash) === i ? [i] : [])
      )

    const get = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const { keyId } = yield* decodeKeyId(input)
        return yield* view(yield* keyFor(principal, keyId, Permission.required.readKey))
      }).pipe(Span.span("Keys.get"))

    const list = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const request = yield* decodeList(input)
        yield* auth.authorize(principal, Permission.required.readKey(request.apiId))
        yield* requireApi(principal, request.apiId)
        const cursor = request.cursor === undefined ? undefined : Cursor.decode(request.cursor, KEY_ID)
        if (cursor === null || (cursor !== undefined && cursor.scope !== request.apiId)) {
          return yield* new ValidationError({ message: "cursor: is not a cursor this api's listKeys returned" })
        }
        const limit = request.limit ?? KeyModel.MAX_KEY_PAGE
        let identityId: string | undefined
        if (request.externalId !== undefined) {
          const identity = yield* catalog.findIdentityByExternalId(principal.workspaceId, request.externalId)
          if (Option.isNone(identity)) return { keys: [] as Array<KeyView>, total: 0 }
          identityId = identity.value.id
        }
        const page = yield* catalog.listKeys(principal.workspaceId, request.apiId, {
          after: cursor?.after,
          limit: limit + 1,
          identityId
        })
        const keys = page.keys.slice(0, limit)
        return {
          keys: yield* Effect.forEach(keys, view),
          total: page.total,
          ...(page.keys.length > limit ? { cursor: Cursor.encode(request.apiId, keys[keys.length - 1]!.id) } : {})
        }
      }).pipe(Span.span("Keys.list"))

    const update = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const request = yield* decodeUpdate(input)
        const key = yield* keyFor(principal, request.keyId, Permission.required.updateKey)
        const attaching = typeof request.externalId === "string"
        if (request.ratelimits !== undefined || attaching) {
          yield* authorizeLimits(principal, (request.ratelimits ?? key.ratelimits).map((limit) => limit.name))
        }
        if (request.ratelimit) yield* authorizeLimits(principal, [KeyModel.DEFAULT_RATELIMIT])
        const now = yield* Clock.currentTimeMillis
        let identityId = key.identityId
        if (request.externalId === null) identityId = undefined
        else if (request.externalId !== undefined) {
          identityId = (yield* identities.ensure(principal.workspaceId, request.externalId, now)).id
        }
        const fields: Record<string, unknown> = { ...key, updatedAt: now }
        const set = (name: string, value: unknown) => {
          if (value === null) delete fields[name]
          else if (value !== undefined) fields[name] = value
        }
        set("name", request.name)
        set("meta", request.meta)
        const granted = yield* grants(principal, key.apiId, "update_key", request.permissions, request.roles)
        if (granted.slugs !== undefined) fields.permissions = granted.slugs
        if (granted.roleIds !== undefined) {
          if (granted.roleIds.length === 0) delete fields.roles
          else fields.roles = granted.roleIds
        }
        set("enabled", request.enabled)
        set("expires", request.expires)
        if (request.ratelimits !== undefined) {
          fields.ratelimits = request.ratelimits.map((limit) => ({ ...limit, autoApply: limit.autoApply ?? false }))
        } else if (request.ratelimit !== undefined) {
          const others = key.ratelimits.filter((limit) => limit.name !== KeyModel.DEFAULT_RATELIMIT)
          fields.ratelimits = request.ratelimit === null
            ? others
            : [...others, { name: KeyModel.DEFAULT_RATELIMIT, ...request.ratelimit, autoApply: true }]
        }
        if (identityId === undefined) delete fields.identityId
        else fields.identityId = identityId
        let credits: "keep" | "clear" | Credits = "keep"
        if (request.credits === null) {
          fields.credited = false
          delete fields.refill
          credits = "clear"
        } else if (request.credits !== undefined) {
          const change = request.credits
          if (change.remaining === undefined && !key.credited) {
            return yield* new ValidationError({
              message: "credits.remaining: is required to give credits to a key that has none"
            })
          }
          fields.credited = true
          if (change.refill === null) delete fields.refill
          else if (change.refill !== undefined) fields.refill = change.refill
          if (change.remaining !== undefined) credits = { remaining: change.remaining, refilledAt: now }
        }
        const updated = new Key(fields as ConstructorParameters<typeof Key>[0])
        if (!(yield* cache.write({ hashes: [key.hash] }, catalog.replaceKey(updated, credits)))) {
          return yield* KeyAccess.noKey(request.keyId)
        }
        return yield* view(updated)
      }).pipe(Span.span("Keys.update"))

    const remove = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const { keyId } = yield* decodeKeyId(input)
        const key = yield* keyFor(principal, keyId, Permission.required.deleteKey)
        if (!(yield* cache.write({ hashes: [key.hash] }, catalog.deleteKey(principal.workspaceId, keyId)))) {
          return yield* KeyAccess.noKey(keyId)
        }
        return {}
      }).pipe(Span.span("Keys.delete"))

    /** Sets, increments or decrements a key's credits; a repeat under the same idempotency key changes nothing. */
    const updateCredits = (principal: Principal, input: unknown, options?: KeyOptions) =>
      Effect.gen(function*() {
        const request = yield* decodeCredits(input)
        const key = yield* keyFor(principal, request.keyId, Permission.required.updateKey)
        if (request.value === null && request.op !== "set") {
          return yield* new ValidationError({ message: `value: must be a number to ${request.op} by` })
        }
        return yield* receipts.once<
          { readonly remaining: number | null },
          StorageError | ValidationError | NotFound,
          never
        >(
          {
            workspaceId: principal.workspaceId,
            key: options?.idempotencyKey,
            name: options?.idempotencyKeyName ?? "idempotencyKey",
            operation: "updateCredits",
            canonical: () => [request.keyId, request.op, request.value]
          },
          () =>
            Effect.gen(function*() {
              // Setting gives credits to a key without (null takes them away: unlimited).
              if (request.op === "set" && (request.value === null || !key.credited)) {
                const now = yield* Clock.currentTimeMillis
                const credited = request.value !== null
                const fields: Record<string, unknown> = { ...key, credited, updatedAt: now }
                if (!credited) delete fields.refill
                const updated = new Key(fields as ConstructorParameters<typeof Key>[0])
                const written = yield* cache.write(
                  { hashes: [key.hash] },
                  catalog.replaceKey(
                    updated,
                    request.value === null ? "clear" : { remaining: request.value, refilledAt: now }
                  )
                )
                if (!written) return yield* KeyAccess.noKey(request.keyId)
                return { remaining: request.value }
              }
              const changed = yield* catalog.changeCredits(request.keyId, request.op, request.value ?? 0)
              if (Option.isNone(changed)) {
                return yield* new ValidationError({
                  message: `keyId: key ${JSON.stringify(request.keyId)} has no credits (it is unlimited); ` +
                    "set them first"
                })
              }
              return { remaining: changed.value.remaining }
            }),
          { storeAfter: true }
        )
      }).pipe(Span.span("Keys.updateCredits"))

    /** The key of a secret, as `keys.getKey` reads it (`read_key` on its api). */
    const whoami = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const { key: secret } = yield* decodeWhoami(input)
        const found = yield* catalog.findKeyByHash(RootKey.hash(secret))
        const keyId = Option.isSome(found) && found.value.workspaceId === principal.workspaceId
          ? found.value.id
          : undefined
        return yield* view(
          yield* keyFor(principal, keyId, Permission.required.readKey, "key: no such key in this workspace")
        )
      }).pipe(Span.span("Keys.whoami"))

    /**
     * A new key in place of `keyId`: a new secret (the old one's prefix, 16 random bytes) with the
     * old key's configuration, identity and current balance; the old key expires `expiration` ms
     * from now (0: at once), or when it already would if that is sooner. Needs `create_key` on the
     * key's api.
     */
    const reroll = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const request = yield* decodeReroll(input)
        const old = yield* keyFor(principal, request.keyId, Permission.required.createKey)
        const now = yield* Clock.currentTimeMillis
        const credits = old.credited ? Option.getOrUndefined(yield* catalog.getCredits(old.id)) : undefined
        const separator = old.start.indexOf("_")
        const prefix = separator > 0 && PREFIX.test(old.start.slice(0, separator))
          ? old.start.slice(0, separator)
          : undefined
        const secret = KeySecret.generateSecret(prefix, KeySecret.DEFAULT_BYTE_LENGTH)
        const key = new Key({
          ...old,
          id: Ids.make(Ids.Prefix.key, now),
          hash: RootKey.hash(secret),
          start: KeySecret.startOf(secret, prefix),
          createdAt: now,
          updatedAt: now
        })
        const balance = old.credited
          ? { remaining: credits?.remaining ?? 0, refilledAt: credits?.refilledAt ?? now }
          : undefined
        const created = yield* cache.write({ hashes: [key.hash] }, catalog.insertKey(key, balance))
        if (created === "conflict") return yield* Effect.die(new Error("a new key collided with an existing one"))
        const expires = Math.min(old.expires ?? Infinity, now + request.expiration)
        if (old.expires !== expires) yield* replace(old, { expires }, now)
        return { keyId: key.id, key: secret }
      }).pipe(Span.span("Keys.reroll"))

    return {
      migrate,
      reroll,
      ...grantChanges,
      whoami,
      create,
      get,
      list,
      update,
      delete: remove,
      updateCredits
    } as const
  })
}) {}

/** Body of `keys.rerollKey`: the key, and how long its old secret stays valid (ms). */
export const RerollKeyInput = Schema.Struct({
  keyId: KeyModel.KeyId,
  expiration: KeyModel.Integer(0, 4_102_444_800_000, "must be an integer number of milliseconds >= 0")
}).annotations({ identifier: "RerollKeyInput" })

/** What a key's `start` may begin with as its prefix (see `Key.Prefix`). */
const PREFIX = /^[a-zA-Z0-9]{1,16}$/

/** The ids of keys, as listKeys cursors hold them. */
const KEY_ID = /^key_[0-9A-Z]{26}$/
