/**
 * Keys keymeter issues and verifies: create, read, list, update, delete, change credits, and
 * verify — which decides one of the nine outcomes, takes the key's rate limits (which overrides
 * govern) and credits together or not at all, and records the verification.
 *
 * The order of checks of `verify`, first failure wins:
 *   1. NOT_FOUND: no key has this secret (never created, or deleted);
 *   2. FORBIDDEN: the key is another workspace's, or another api's than the `apiId` asked;
 *   3. UNAUTHORIZED: the key's identity is disabled (`updateIdentity`);
 *   4. DISABLED: the key is disabled;
 *   5. EXPIRED: its `expires` is not after now;
 *   6. INSUFFICIENT_PERMISSIONS: its permissions do not satisfy the request's query;
 *   7. RATE_LIMITED: one of its auto-applied or requested limits is exceeded (nothing is taken);
 *   8. USAGE_EXCEEDED: its credits are below the cost (nothing is spent, the limits are given back);
 *   9. VALID.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Auth } from "./Auth.js"
import type { StorageError } from "./Errors.js"
import { NotFound, ValidationError } from "./Errors.js"
import { IdempotencyKeys, type KeyOptions } from "./IdempotencyKeys.js"
import * as Ids from "./Ids.js"
import { KeyCache, KeyCacheCapacity } from "./internal/KeyCache.js"

export {
  /** How many keys verification keeps in memory. */
  KeyCacheCapacity
} from "./internal/KeyCache.js"
import * as KnownApis from "./internal/KnownApis.js"
import type { Credits, KeyView, Refill } from "./Key.js"
import * as KeyModel from "./Key.js"
import { Identity, Key } from "./Key.js"
import { MAX_NAME_LENGTH } from "./Namespace.js"
import type { Principal } from "./Permission.js"
import * as Permission from "./Permission.js"
import { MAX_PERMISSION_LENGTH, PermissionQuery, satisfies } from "./PermissionQuery.js"
import type { Taken, TakenLimit, TakeRequest } from "./RateLimiter.js"
import { RateLimiter } from "./RateLimiter.js"
import { Recorder } from "./Recorder.js"
import * as RootKey from "./RootKey.js"
import { Catalog } from "./Storage.js"
import * as Time from "./Time.js"
import * as Validation from "./Validation.js"
import type { Outcome } from "./Verification.js"
import * as Verification from "./Verification.js"

/** The codes of a verification, in the order they are checked (VALID last). */
export const Codes = [
  "NOT_FOUND",
  "FORBIDDEN",
  "UNAUTHORIZED",
  "DISABLED",
  "EXPIRED",
  "INSUFFICIENT_PERMISSIONS",
  "RATE_LIMITED",
  "USAGE_EXCEEDED",
  "VALID"
] as const
export type Code = typeof Codes[number]

/** The analytics outcome each code is recorded as. */
export const outcomeOf: Record<Code, Outcome> = {
  NOT_FOUND: "notFound",
  FORBIDDEN: "forbidden",
  UNAUTHORIZED: "unauthorized",
  DISABLED: "disabled",
  EXPIRED: "expired",
  INSUFFICIENT_PERMISSIONS: "insufficientPermissions",
  RATE_LIMITED: "rateLimited",
  USAGE_EXCEEDED: "usageExceeded",
  VALID: "valid"
}

/** The key id a verification of an unknown secret is recorded under (with the api it named). */
export const UNKNOWN_KEY_ID = "unknown"

/** Longest secret a verification accepts. */
export const MAX_SECRET_LENGTH = 1024

/** Body of `keys.verifyKey`. */
export const VerifyKeyInput = Schema.Struct({
  key: Validation.boundedString("a key", 1, MAX_SECRET_LENGTH),
  apiId: Schema.optional(Verification.Id),
  permissions: Schema.optional(PermissionQuery),
  credits: Schema.optional(Schema.Struct({
    cost: Validation.expected(
      Schema.Number.pipe(Schema.int(), Schema.between(0, Number.MAX_SAFE_INTEGER)),
      "must be an integer >= 0"
    )
  })),
  ratelimits: Schema.optional(
    Schema.Array(Schema.Struct({
      name: Validation.boundedString("a rate limit name", 1, MAX_NAME_LENGTH),
      cost: Schema.optional(Validation.expected(
        Schema.Number.pipe(Schema.int(), Schema.between(0, Number.MAX_SAFE_INTEGER)),
        "must be an integer >= 0"
      ))
    })).pipe(Schema.maxItems(KeyModel.MAX_RATELIMITS))
  ),
  tags: Schema.optional(Schema.Array(Verification.Tag).pipe(Schema.maxItems(Verification.MAX_TAGS)))
}).annotations({ identifier: "VerifyKeyInput" })

/** Answer of `keys.verifyKey`: always 200, `valid` and `code` saying how it went. */
export const VerifyKeyResponse = Schema.Struct({
  valid: Schema.Boolean,
  code: Schema.Literal(...Codes),
  keyId: Schema.optional(Schema.String),
  name: Schema.optional(Schema.String),
  meta: Schema.optional(KeyModel.MetaObject),
  expires: Schema.optional(Schema.Number),
  credits: Schema.optional(Schema.Struct({ remaining: Schema.Number })),
  ratelimits: Schema.optional(Schema.Array(Schema.Struct({
    name: Schema.String,
    limit: Schema.Number.annotations({ description: "the limit applied: the override's when one applies" }),
    remaining: Schema.Number,
    reset: Schema.Number,
    exceeded: Schema.Boolean,
    overrideId: Schema.optional(Schema.String)
  }))),
  permissions: Schema.optional(Schema.Array(Schema.String)),
  enabled: Schema.optional(Schema.Boolean),
  identity: Schema.optional(Schema.Struct({ id: Schema.String, externalId: Schema.String }))
}).annotations({ identifier: "VerifyKeyResponse" })
export type VerifyKeyResponse = Schema.Schema.Type<typeof VerifyKeyResponse>

/** How a verification is recorded. */
export interface VerifyOptions {
  /** Answer only once the verification's event is stored (default: it is stored in the background). */
  readonly durable?: boolean | undefined
}

/** The time from which a refill is due: the start of the current day, or of the month's refill day. */
export const refillSince = (refill: Refill, now: number): number => {
  if (refill.interval === "daily") return Time.truncateToDay(now)
  const day = refill.refillDay ?? 1
  const date = new Date(now)
  const at = (year: number, month: number) => {
    const days = new Date(Date.UTC(year, month + 1, 0)).getUTCDate()
    return Date.UTC(year, month, Math.min(day, days))
  }
  const thisMonth = at(date.getUTCFullYear(), date.getUTCMonth())
  return now >= thisMonth ? thisMonth : at(date.getUTCFullYear(), date.getUTCMonth() - 1)
}

/** A body of `keys.verifyKey`, decoded. */
export type VerifyKeyInput = Schema.Schema.Type<typeof VerifyKeyInput>

const VERIFY_FIELDS = { key: 1, apiId: 1, permissions: 1, credits: 1, ratelimits: 1, tags: 1 }
const isString = (value: unknown, max: number): value is string =>
  typeof value === "string" && value.length >= 1 && value.length <= max && Validation.isWellFormed(value)
const isCost = (value: unknown) => Number.isSafeInteger(value) && (value as number) >= 0
const hasOnly = (value: object, fields: object) => {
  for (const name in value) if (!Object.hasOwn(fields, name)) return false
  return true
}

/**
 * `input` as {@link VerifyKeyInput} decodes it, when it is a plain valid body (a permission query
 * of one string, if any); undefined for anything else, valid or not, which the schema then judges.
 * A hand check costs a tenth of the schema's, on the hottest path there is.
 */
const plainVerifyInput = (input: unknown): VerifyKeyInput | undefined => {
  if (typeof input !== "object" || input === null || Array.isArray(input) || !hasOnly(input, VERIFY_FIELDS)) {
    return undefined
  }
  const { apiId, credits, key, permissions, ratelimits, tags } = input as Record<string, unknown>
  if (!isString(key, MAX_SECRET_LENGTH)) return undefined
  if (apiId !== undefined && !isString(apiId, Verification.MAX_ID_LENGTH)) return undefined
  if (permissions !== undefined && !isString(permissions, MAX_PERMISSION_LENGTH)) return undefined
  if (credits !== undefined) {
    if (typeof credits !== "object" || credits === null || !hasOnly(credits, COST)) return undefined
    if (!isCost((credits as { cost?: unknown }).cost)) return undefined
  }
  if (ratelimits !== undefined) {
    if (!Array.isArray(ratelimits) || ratelimits.length > KeyModel.MAX_RATELIMITS) return undefined
    for (const limit of ratelimits as Array<unknown>) {
      if (typeof limit !== "object" || limit === null || !hasOnly(limit, RATELIMIT_FIELDS)) return undefined
      const { cost, name } = limit as Record<string, unknown>
      if (!isString(name, MAX_NAME_LENGTH) || (cost !== undefined && !isCost(cost))) return undefined
    }
  }
  if (tags !== undefined) {
    if (!Array.isArray(tags) || tags.length > Verification.MAX_TAGS) return undefined
    for (const tag of tags as Array<unknown>) if (!isString(tag, Verification.MAX_TAG_LENGTH)) return undefined
  }
  return input as VerifyKeyInput
}
const COST = { cost: 1 }
const RATELIMIT_FIELDS = { name: 1, cost: 1 }

/** Issues, manages and verifies keys in the caller's workspace. */
export class Keys extends Effect.Service<Keys>()("@keymeter/core/Keys", {
  effect: Effect.gen(function*() {
    const catalog = yield* Catalog
    const auth = yield* Auth
    const limiter = yield* RateLimiter
    const recorder = yield* Recorder
    const receipts = yield* IdempotencyKeys
    const decodeCreate = Validation.decode(KeyModel.CreateKeyInput)
    const decodeUpdate = Validation.decode(KeyModel.UpdateKeyInput)
    const decodeKeyId = Validation.decode(KeyModel.KeyIdInput)
    const decodeList = Validation.decode(KeyModel.ListKeysInput)
    const decodeCredits = Validation.decode(KeyModel.UpdateCreditsInput)
    const decodeVerify = Validation.decode(VerifyKeyInput)
    const decodeExternalId = Validation.decode(KeyModel.ExternalIdInput)
    const decodeUpdateIdentity = Validation.decode(KeyModel.UpdateIdentityInput)
    // Keys by hash (unknown hashes too) and identities, remembered while the catalog holds.
    const cache = new KeyCache(catalog.revision, yield* KeyCacheCapacity)

    const apis = KnownApis.make(catalog)
    const requireApi = (principal: Principal, apiId: string) => apis.require(principal.workspaceId, apiId)

    const identityFor = (workspaceId: string, externalId: string, now: number) =>
      cache.write(
        {},
        catalog.ensureIdentity(
          new Identity({
            id: Ids.make(Ids.Prefix.identity, now),
            workspaceId,
            externalId,
            enabled: true,
            createdAt: now
          })
        )
      )

    const identityOf = (key: Key) =>
      key.identityId === undefined
        ? Effect.succeed(undefined)
        : Effect.map(
          cache.identity(key.identityId, catalog.getIdentity(key.workspaceId, key.identityId)),
          Option.getOrUndefined
        )

    /** The key `keyId` of the caller's workspace, after checking `permission` on its api. */
    const keyFor = (principal: Principal, keyId: string, permission: (apiId: string) => ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const key = yield* catalog.getKey(principal.workspaceId, keyId)
        if (Option.isNone(key)) {
          return yield* new NotFound({ message: `keyId: no key ${JSON.stringify(keyId)} in this workspace` })
        }
        yield* auth.authorize(principal, permission(key.value.apiId))
        return key.value
      })

    const view = (key: Key) =>
      Effect.gen(function*() {
        const identity = yield* identityOf(key)
        const credits = key.credited ? Option.getOrUndefined(yield* catalog.getCredits(key.id)) : undefined
        return KeyModel.toView(key, identity, credits)
      })

    /**
     * Creates a key; its secret is in the answer and nowhere else, ever. A repeat under the same
     * idempotency key answers the key's id without its secret (never kept, not even in the receipt).
     */
    const create = (principal: Principal, input: unknown, options?: KeyOptions) =>
      Effect.gen(function*() {
        const request = yield* decodeCreate(input)
        yield* auth.authorize(principal, Permission.required.createKey(request.apiId))
        yield* requireApi(principal, request.apiId)
        return yield* receipts.once<{ readonly keyId: string; readonly key?: string }, StorageError, never>(
          {
            workspaceId: principal.workspaceId,
            key: options?.idempotencyKey,
            name: options?.idempotencyKeyName ?? "idempotencyKey",
            operation: "createKey",
            canonical: () => request
          },
          () => createNow(principal, request),
          { storeAfter: true, kept: (answer) => ({ keyId: answer.keyId }) }
        )
      }).pipe(Effect.withSpan("Keys.create"))

    const createNow = (principal: Principal, request: KeyModel.CreateKeyInput) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const identity = request.externalId === undefined
          ? undefined
          : yield* identityFor(principal.workspaceId, request.externalId, now)
        const secret = KeyModel.generateSecret(request.prefix, request.byteLength ?? KeyModel.DEFAULT_BYTE_LENGTH)
        const key = new Key({
          id: Ids.make(Ids.Prefix.key, now),
          workspaceId: principal.workspaceId,
          apiId: request.apiId,
          hash: RootKey.hash(secret),
          start: KeyModel.startOf(secret, request.prefix),
          ...(request.name !== undefined ? { name: request.name } : {}),
          ...(request.meta !== undefined ? { meta: request.meta } : {}),
          permissions: request.permissions ?? [],
          enabled: request.enabled ?? true,
          ...(request.expires !== undefined ? { expires: request.expires } : {}),
          credited: request.credits !== undefined,
          ...(request.credits?.refill !== undefined ? { refill: request.credits.refill } : {}),
          ratelimits: (request.ratelimits ?? []).map((limit) => ({ ...limit, autoApply: limit.autoApply ?? false })),
          ...(identity !== undefined ? { identityId: identity.id } : {}),
          createdAt: now,
          updatedAt: now
        })
        const credits: Credits | undefined = request.credits === undefined
          ? undefined
          : { remaining: request.credits.remaining, refilledAt: now }
        const created = yield* cache.write({ hashes: [key.hash] }, catalog.insertKey(key, credits))
        // A collision of 128 random bits or more: astronomically unlikely, and refused rather than overwritten.
        if (created === "conflict") return yield* Effect.die(new Error("a new key collided with an existing one"))
        return { keyId: key.id, key: secret }
      })

    const get = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const { keyId } = yield* decodeKeyId(input)
        return yield* view(yield* keyFor(principal, keyId, Permission.required.readKey))
      }).pipe(Effect.withSpan("Keys.get"))

    const list = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const request = yield* decodeList(input)
        yield* auth.authorize(principal, Permission.required.readKey(request.apiId))
        yield* requireApi(principal, request.apiId)
        const after = request.cursor === undefined ? undefined : Cursor.decode(request.cursor, request.apiId)
        if (after === null) {
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
          after,
          limit: limit + 1,
          identityId
        })
        const keys = page.keys.slice(0, limit)
        return {
          keys: yield* Effect.forEach(keys, view),
          total: page.total,
          ...(page.keys.length > limit ? { cursor: Cursor.encode(request.apiId, keys[keys.length - 1]!.id) } : {})
        }
      }).pipe(Effect.withSpan("Keys.list"))

    const update = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const request = yield* decodeUpdate(input)
        const key = yield* keyFor(principal, request.keyId, Permission.required.updateKey)
        const now = yield* Clock.currentTimeMillis
        let identityId = key.identityId
        if (request.externalId === null) identityId = undefined
        else if (request.externalId !== undefined) {
          identityId = (yield* identityFor(principal.workspaceId, request.externalId, now)).id
        }
        const fields: Record<string, unknown> = { ...key, updatedAt: now }
        const set = (name: string, value: unknown) => {
          if (value === null) delete fields[name]
          else if (value !== undefined) fields[name] = value
        }
        set("name", request.name)
        set("meta", request.meta)
        set("permissions", request.permissions)
        set("enabled", request.enabled)
        set("expires", request.expires)
        if (request.ratelimits !== undefined) {
          fields.ratelimits = request.ratelimits.map((limit) => ({ ...limit, autoApply: limit.autoApply ?? false }))
        }
        if (identityId === undefined) delete fields.identityId
        else fields.identityId = identityId
        let credits: "keep" | "clear" | Credits = "keep"
        if (request.credits === null) {
          fields.credited = false
          delete fields.refill
          credits = "clear"
        } else if (request.credits !== undefined) {
          fields.credited = true
          if (request.credits.refill === undefined) delete fields.refill
          else fields.refill = request.credits.refill
          credits = { remaining: request.credits.remaining, refilledAt: now }
        }
        const updated = new Key(fields as ConstructorParameters<typeof Key>[0])
        if (!(yield* cache.write({ hashes: [key.hash] }, catalog.replaceKey(updated, credits)))) {
          return yield* new NotFound({ message: `keyId: no key ${JSON.stringify(request.keyId)} in this workspace` })
        }
        return yield* view(updated)
      }).pipe(Effect.withSpan("Keys.update"))

    const remove = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const { keyId } = yield* decodeKeyId(input)
        const key = yield* keyFor(principal, keyId, Permission.required.deleteKey)
        if (!(yield* cache.write({ hashes: [key.hash] }, catalog.deleteKey(principal.workspaceId, keyId)))) {
          return yield* new NotFound({ message: `keyId: no key ${JSON.stringify(keyId)} in this workspace` })
        }
        return {}
      }).pipe(Effect.withSpan("Keys.delete"))

    /** Sets, increments or decrements a key's credits; a repeat under the same idempotency key changes nothing. */
    const updateCredits = (principal: Principal, input: unknown, options?: KeyOptions) =>
      Effect.gen(function*() {
        const request = yield* decodeCredits(input)
        yield* keyFor(principal, request.keyId, Permission.required.updateKey)
        return yield* receipts.once(
          {
            workspaceId: principal.workspaceId,
            key: options?.idempotencyKey,
            name: options?.idempotencyKeyName ?? "idempotencyKey",
            operation: "updateCredits",
            canonical: () => [request.keyId, request.op, request.value]
          },
          () =>
            Effect.gen(function*() {
              const changed = yield* catalog.changeCredits(request.keyId, request.op, request.value)
              if (Option.isNone(changed)) {
                return yield* new ValidationError({
                  message: `keyId: key ${JSON.stringify(request.keyId)} has no credits; give it some with updateKey`
                })
              }
              return { remaining: changed.value.remaining }
            }),
          { storeAfter: true }
        )
      }).pipe(Effect.withSpan("Keys.updateCredits"))

    /** The verification event of a call. */
    const eventOf = (
      principal: Principal,
      request: VerifyKeyInput,
      now: number,
      apiId: string,
      keyId: string,
      code: Code,
      identity: Identity | undefined
    ) =>
      Verification.make({
        time: now,
        workspaceId: principal.workspaceId,
        apiId,
        keyId,
        outcome: outcomeOf[code],
        identity: identity === undefined ? undefined : { id: identity.id, externalId: identity.externalId },
        tags: request.tags
      })

    /** The identity of `externalId` in the caller's workspace. */
    const identityNamed = (principal: Principal, externalId: string) =>
      Effect.flatMap(
        catalog.findIdentityByExternalId(principal.workspaceId, externalId),
        (found) =>
          Option.isNone(found)
            ? Effect.fail(
              new NotFound({ message: `externalId: no identity ${JSON.stringify(externalId)} in this workspace` })
            )
            : Effect.succeed(found.value)
      )

    /** An identity (created with the first key of its externalId). */
    const getIdentity = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const { externalId } = yield* decodeExternalId(input)
        yield* auth.authorize(principal, Permission.required.readIdentity())
        return KeyModel.toIdentityView(yield* identityNamed(principal, externalId))
      }).pipe(Effect.withSpan("Keys.getIdentity"))

    /** Enables or disables an identity: a disabled one's keys verify as UNAUTHORIZED from the next call. */
    const updateIdentity = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const request = yield* decodeUpdateIdentity(input)
        yield* auth.authorize(principal, Permission.required.updateIdentity())
        const identity = yield* identityNamed(principal, request.externalId)
        const changed = yield* cache.write(
          { identityId: identity.id },
          catalog.setIdentityEnabled(principal.workspaceId, identity.id, request.enabled)
        )
        if (!changed) {
          return yield* new NotFound({
            message: `externalId: no identity ${JSON.stringify(request.externalId)} in this workspace`
          })
        }
        return KeyModel.toIdentityView(new Identity({ ...identity, enabled: request.enabled }))
      }).pipe(Effect.withSpan("Keys.updateIdentity"))

    /** The key's limits a call takes: its auto-applied ones and those it names (at their cost). */
    const limitsOf = (
      key: Key,
      identity: Identity | undefined,
      requested: ReadonlyMap<string, number> | undefined
    ): Array<TakeRequest> => {
      const out: Array<TakeRequest> = []
      for (const limit of key.ratelimits) {
        const cost = requested?.get(limit.name)
        if (!limit.autoApply && cost === undefined) continue
        out.push({
          name: limit.name,
          identifier: identity?.externalId ?? key.id,
          limit: limit.limit,
          duration: limit.duration,
          cost: cost ?? 1
        })
      }
      return out
    }

    /**
     * The costs of the limits the call names, by name; the index of the first the key does not
     * have, when one is unknown (the caller's mistake).
     */
    const requestedOf = (key: Key, request: VerifyKeyInput): ReadonlyMap<string, number> | number | undefined => {
      if (request.ratelimits === undefined || request.ratelimits.length === 0) return undefined
      const requested = new Map<string, number>()
      for (const [i, limit] of request.ratelimits.entries()) {
        if (!key.ratelimits.some((own) => own.name === limit.name)) return i
        requested.set(limit.name, limit.cost ?? 1)
      }
      return requested
    }

    /** The code of the checks before the limits (2–6 of the order), or undefined when they pass. */
    const precheck = (key: Key, identity: Identity | undefined, request: VerifyKeyInput, now: number) =>
      request.apiId !== undefined && request.apiId !== key.apiId
        ? "FORBIDDEN" as const
        : identity !== undefined && !identity.enabled
        ? "UNAUTHORIZED" as const
        : !key.enabled
        ? "DISABLED" as const
        : key.expires !== undefined && key.expires <= now
        ? "EXPIRED" as const
        : request.permissions !== undefined && !satisfies(key.permissions, request.permissions)
        ? "INSUFFICIENT_PERMISSIONS" as const
        : undefined

    const answerOf = (
      key: Key,
      identity: Identity | undefined,
      code: Code,
      limits: ReadonlyArray<TakenLimit> | undefined,
      remaining: number | undefined
    ): VerifyKeyResponse => ({
      valid: code === "VALID",
      code,
      keyId: key.id,
      ...(key.name !== undefined ? { name: key.name } : {}),
      ...(key.meta !== undefined ? { meta: key.meta } : {}),
      ...(key.expires !== undefined ? { expires: key.expires } : {}),
      ...(remaining !== undefined ? { credits: { remaining } } : {}),
      ...(limits !== undefined && limits.length > 0 ? { ratelimits: limits } : {}),
      permissions: key.permissions,
      enabled: key.enabled,
      ...(identity !== undefined ? { identity: { id: identity.id, externalId: identity.externalId } } : {})
    })

    const unknownRatelimit = (request: VerifyKeyInput, i: number) =>
      new ValidationError({
        message: `ratelimits[${i}].name: the key has no rate limit named ${
          JSON.stringify(request.ratelimits![i]!.name)
        }`
      })

    /**
     * The end of a verification whose limits were taken: spends the credits (all or nothing with
     * the limits, which are given back when the credits fall short or storage fails), records,
     * answers.
     */
    const spendAndAnswer = (
      principal: Principal,
      request: VerifyKeyInput,
      now: number,
      key: Key,
      identity: Identity | undefined,
      taken: Taken,
      durable: boolean
    ) =>
      Effect.gen(function*() {
        const spend = yield* catalog.spendCredits(
          key.id,
          request.credits?.cost ?? 1,
          key.refill === undefined ? undefined : { since: refillSince(key.refill, now), amount: key.refill.amount },
          now
        ).pipe(Effect.tapError(() => taken.refund))
        let code: Code = "VALID"
        let limits = taken.results
        if (Option.isSome(spend) && !spend.value.spent) {
          limits = yield* taken.refund
          code = "USAGE_EXCEEDED"
        }
        // No balance: the key's credits were removed meanwhile; it verifies as a key without.
        const remaining = Option.isSome(spend) ? spend.value.remaining : undefined
        yield* recorder.record(eventOf(principal, request, now, key.apiId, key.id, code, identity), durable)
        return answerOf(key, identity, code, limits, remaining)
      })

    /** The end of a verification that spends nothing: its balance read when it has credits, recorded, answered. */
    const creditedAnswer = (
      principal: Principal,
      request: VerifyKeyInput,
      now: number,
      key: Key,
      identity: Identity | undefined,
      code: Code,
      limits: ReadonlyArray<TakenLimit> | undefined,
      durable: boolean
    ) =>
      Effect.gen(function*() {
        const remaining = key.credited
          ? Option.getOrUndefined(yield* catalog.getCredits(key.id))?.remaining
          : undefined
        yield* recorder.record(eventOf(principal, request, now, key.apiId, key.id, code, identity), durable)
        return answerOf(key, identity, code, limits, remaining)
      })

    /** The end of a verification whose limits were taken: credits spent (or not), recorded, answered. */
    const afterLimits = (
      principal: Principal,
      request: VerifyKeyInput,
      now: number,
      key: Key,
      identity: Identity | undefined,
      taken: Taken
    ) =>
      !taken.allowed
        ? creditedAnswer(principal, request, now, key, identity, "RATE_LIMITED", taken.results, false)
        : key.credited
        ? spendAndAnswer(principal, request, now, key, identity, taken, false)
        : creditedAnswer(principal, request, now, key, identity, "VALID", taken.results, false)

    /** Verifies a key and records the verification; see the module's order of checks. */
    const verify = (principal: Principal, input: unknown, options: VerifyOptions = {}) =>
      Effect.gen(function*() {
        const request = plainVerifyInput(input) ?? (yield* decodeVerify(input))
        if (request.apiId !== undefined) {
          yield* auth.authorize(principal, Permission.required.verifyKey(request.apiId))
          yield* requireApi(principal, request.apiId)
        }
        const now = yield* Clock.currentTimeMillis
        const hash = RootKey.hash(request.key)
        const found = yield* cache.key(hash, catalog.findKeyByHash(hash))
        const record = (apiId: string, keyId: string, code: Code, identity?: Identity) =>
          recorder.record(eventOf(principal, request, now, apiId, keyId, code, identity), options.durable ?? false)
        // Keys of nowhere the caller may see: counted under the api it named, if any.
        if (Option.isNone(found) || found.value.workspaceId !== principal.workspaceId) {
          const code: Code = Option.isNone(found) ? "NOT_FOUND" : "FORBIDDEN"
          if (request.apiId !== undefined) yield* record(request.apiId, UNKNOWN_KEY_ID, code)
          return { valid: false, code } satisfies VerifyKeyResponse
        }
        const key = found.value
        if (request.apiId === undefined) yield* auth.authorize(principal, Permission.required.verifyKey(key.apiId))
        // Requested limits must be the key's own: an unknown name is the caller's mistake.
        const requested = requestedOf(key, request)
        if (typeof requested === "number") return yield* unknownRatelimit(request, requested)
        const identity = key.identityId === undefined
          ? undefined
          : Option.getOrUndefined(
            yield* cache.identity(key.identityId, catalog.getIdentity(key.workspaceId, key.identityId))
          )
        let code: Code = precheck(key, identity, request, now) ?? "VALID"
        let limits: ReadonlyArray<TakenLimit> | undefined
        if (code === "VALID") {
          const taken = yield* limiter.takeAll(key.workspaceId, limitsOf(key, identity, requested))
          if (taken.allowed && key.credited) {
            return yield* spendAndAnswer(principal, request, now, key, identity, taken, options.durable ?? false)
          }
          limits = taken.results
          if (!taken.allowed) code = "RATE_LIMITED"
        }
        return yield* creditedAnswer(principal, request, now, key, identity, code, limits, options.durable ?? false)
      }).pipe(Effect.withSpan("Keys.verify"))

    /**
     * What {@link verify} answers at `now`, decided and recorded without I/O, when everything it
     * needs is in memory: a plain valid body, the key (or its absence) and its identity remembered,
     * the permissions and the api known, the limits' namespaces and overrides in memory, and room
     * in the recorder's queue. A key with credits is decided here up to its credits, which are
     * read or spent in storage: the answer is then an effect that finishes the verification (run
     * it; the limits are taken already). Undefined otherwise, with nothing taken or recorded: run
     * {@link verify}, which also words every refusal. The event is queued, never waited for
     * (`durable` verifications go through {@link verify}).
     */
    const verifyNow = (
      principal: Principal,
      input: unknown,
      now: number
    ): VerifyKeyResponse | Effect.Effect<VerifyKeyResponse, StorageError> | undefined => {
      const request = plainVerifyInput(input)
      if (request === undefined) return undefined
      const { apiId } = request
      if (apiId !== undefined) {
        if (!Permission.allows(principal.permissions, Permission.required.verifyKey(apiId))) return undefined
        if (apis.peek(principal.workspaceId, apiId) !== true) return undefined
      }
      const found = cache.peekKey(RootKey.hash(request.key))
      if (found === undefined) return undefined
      if (found === null || found.workspaceId !== principal.workspaceId) {
        const code: Code = found === null ? "NOT_FOUND" : "FORBIDDEN"
        if (apiId !== undefined) {
          if (!recorder.recordNow(eventOf(principal, request, now, apiId, UNKNOWN_KEY_ID, code, undefined))) {
            return undefined
          }
        }
        return { valid: false, code }
      }
      const key = found
      if (apiId === undefined && !Permission.allows(principal.permissions, Permission.required.verifyKey(key.apiId))) {
        return undefined
      }
      const requested = requestedOf(key, request)
      if (typeof requested === "number") return undefined
      let identity: Identity | undefined
      if (key.identityId !== undefined) {
        const known = cache.peekIdentity(key.identityId)
        if (known === undefined) return undefined
        identity = known ?? undefined
      }
      let code: Code = precheck(key, identity, request, now) ?? "VALID"
      let limits: ReadonlyArray<TakenLimit> | undefined
      if (code === "VALID") {
        const limitsTaken = limitsOf(key, identity, requested)
        const taken = limiter.takeAllNow(key.workspaceId, limitsTaken, now)
        // The limits need I/O (shared windows, a namespace or override not in memory), or the
        // credits do: the rest of the verification is one effect.
        if (taken === undefined) {
          return Effect.flatMap(
            limiter.takeAll(key.workspaceId, limitsTaken),
            (taken) => afterLimits(principal, request, now, key, identity, taken)
          )
        }
        if (key.credited) return afterLimits(principal, request, now, key, identity, taken)
        if (
          !recorder.recordNow(
            eventOf(principal, request, now, key.apiId, key.id, taken.allowed ? "VALID" : "RATE_LIMITED", identity)
          )
        ) {
          // Decided in this process (takeAllNow), so given back at once.
          taken.refundNow!()
          return undefined
        }
        limits = taken.results
        if (!taken.allowed) code = "RATE_LIMITED"
      } else if (key.credited) {
        return creditedAnswer(principal, request, now, key, identity, code, undefined, false)
      } else if (!recorder.recordNow(eventOf(principal, request, now, key.apiId, key.id, code, identity))) {
        return undefined
      }
      return answerOf(key, identity, code, limits, undefined)
    }

    return {
      create,
      get,
      list,
      update,
      delete: remove,
      updateCredits,
      verify,
      verifyNow,
      getIdentity,
      updateIdentity
    } as const
  })
}) {}

/** listKeys cursors: opaque, and bound to the api they page. */
const Cursor = {
  encode: (apiId: string, after: string): string => Buffer.from(`${apiId}\u0000${after}`, "utf8").toString("base64url"),
  /** The last key id of the page before; null when the cursor is not one this api's listing gave. */
  decode: (text: string, apiId: string): string | null => {
    const [forApi, after, ...rest] = Buffer.from(text, "base64url").toString("utf8").split("\u0000")
    return rest.length === 0 && forApi === apiId && after !== undefined && /^key_[0-9A-Z]{26}$/.test(after)
      ? after
      : null
  }
}
