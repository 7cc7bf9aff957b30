/**
 * Key verification (`keys.verifyKey`): decides one of the nine outcomes, takes the key's rate
 * limits (which overrides govern) and credits together or not at all, and records the
 * verification. One decision over what memory holds (see `Decision`): a key verified before is
 * answered without I/O but for its credits.
 *
 * The order of checks, first failure wins:
 *   1. NOT_FOUND: no key of the caller's workspace has this secret (never created, deleted, or
 *      another workspace's: answered alike, so a secret is never told valid elsewhere);
 *   2. FORBIDDEN: the key is another api's than the `apiId` asked (nothing of the key answered);
 *   3. UNAUTHORIZED: the key's identity is disabled (`Identities.update`);
 *   4. DISABLED: the key is disabled;
 *   5. EXPIRED: its `expires` is not after now;
 *   6. INSUFFICIENT_PERMISSIONS: its permissions do not satisfy the request's query;
 *   7. RATE_LIMITED: one of its auto-applied or requested limits is exceeded (nothing is taken);
 *   8. USAGE_EXCEEDED: its credits are below the cost (nothing is spent, the limits are given back);
 *   9. VALID.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { Auth } from "./Auth.js"
import * as Checker from "./Checker.js"
import * as Decision from "./Decision.js"
import { Missing } from "./Decision.js"
import type { Busy, InsufficientPermissions, NotFound, StorageError } from "./Errors.js"
import { ValidationError } from "./Errors.js"
import * as Foreground from "./Foreground.js"
import { KeyCache } from "./internal/KeyCache.js"
import { hasLimit, limitsOf, requestedOf } from "./internal/KeyLimits.js"
import * as KnownApis from "./internal/KnownApis.js"
import type { Identity, Key, Refill } from "./Key.js"
import type { Principal } from "./Permission.js"
import * as Permission from "./Permission.js"
import { satisfies } from "./PermissionQuery.js"
import type { Taken, TakenLimit } from "./RateLimiter.js"
import { RateLimiter } from "./RateLimiter.js"
import { Recorder } from "./Recorder.js"
import type { Role } from "./Role.js"
import * as RootKey from "./RootKey.js"
import { Catalog } from "./Storage.js"
import * as Time from "./Time.js"
import * as Validation from "./Validation.js"
import * as Verification from "./Verification.js"
import type { Code, VerifyKeyResponse } from "./VerifyKey.js"
import { outcomeOf, UNKNOWN_KEY_ID, VerifyKeyInput } from "./VerifyKey.js"

// The contract of keys.verifyKey has a module of its own; its names are here too, as before.
export {
  type Code,
  Codes,
  MAX_SECRET_LENGTH,
  outcomeOf,
  UNKNOWN_KEY_ID,
  VerifyKeyInput,
  VerifyKeyResponse
} from "./VerifyKey.js"

/** How a verification is recorded. */
export interface VerifyOptions {
  /** Answer only once the verification's event is stored (default: it is stored in the background). */
  readonly durable?: boolean | undefined
  /**
   * Without an `apiId`, a key of an api the caller may not verify is answered NOT_FOUND (and
   * recorded so), as Unkey v2 answers it, rather than refused for the permission; a caller that
   * may verify no api's keys at all is refused either way.
   */
  readonly hideOtherApis?: boolean | undefined
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

/** The fast check of a body (see `Checker`): what the schema would decode to itself. */
const checkVerify = Checker.compile(VerifyKeyInput)

/** Verifies keys of the caller's workspace and records each verification. */
export class KeyVerifier extends Effect.Service<KeyVerifier>()("@keymeter/core/KeyVerifier", {
  effect: Effect.gen(function*() {
    const catalog = yield* Catalog
    const auth = yield* Auth
    const limiter = yield* RateLimiter
    const recorder = yield* Recorder
    const cache = yield* KeyCache
    const clock = yield* Effect.clock
    const decodeVerify = Validation.decode(VerifyKeyInput)
    const apis = KnownApis.make(catalog)

    /**
     * Verifies a key and records the verification; see the module's order of checks. A decision
     * (see `Decision`): `Decision.now` answers it without running an effect when memory holds
     * what it needs and the key has no credits.
     */
    const verify = (principal: Principal, input: unknown, options: VerifyOptions = {}) => {
      // The verification's latency counts from the call, through whatever it loads, to its answer.
      const started = performance.now()
      Foreground.mark(started)
      const durable = options.durable ?? false
      const hide = options.hideOtherApis ?? false
      return checkVerify(input)
        ? verifyDecoded(principal, input, durable, hide, started)
        : Effect.flatMap(decodeVerify(input), (decoded) => verifyDecoded(principal, decoded, durable, hide, started))
    }

    const verifyDecoded = (
      principal: Principal,
      request: VerifyKeyInput,
      durable: boolean,
      hide: boolean,
      started: number
    ) => {
      const hash = RootKey.hash(request.key)
      return Decision.make(() =>
        decide(principal, request, hash, clock.unsafeCurrentTimeMillis(), durable, hide, started)
      )
    }

    /** The verification at `now`, from what memory holds. */
    const decide = (
      principal: Principal,
      request: VerifyKeyInput,
      hash: string,
      now: number,
      durable: boolean,
      hide: boolean,
      started: number
    ): Decision.Turn<VerifyKeyResponse, VerifyError> => {
      const { apiId } = request
      if (apiId !== undefined) {
        const denied = Decision.failed(auth.authorize(principal, Permission.required.verifyKey(apiId)))
        if (denied !== undefined) return denied
        const unknownApi = apis.decideKnown(principal.workspaceId, apiId)
        if (unknownApi !== undefined) return unknownApi
      }
      const found = cache.lookupKey(hash, () => catalog.findKeyByHash(hash))
      if (found instanceof Missing) return found
      // Keys of nowhere the caller may see, another workspace's alike: counted under the api it
      // named, if any.
      if (Option.isNone(found) || found.value.workspaceId !== principal.workspaceId) {
        if (apiId === undefined) return NOT_FOUND
        const event = eventOf(principal, request, now, apiId, UNKNOWN_KEY_ID, "NOT_FOUND", undefined, 0, started)
        return recorded(event, durable, NOT_FOUND_ANSWER)
      }
      const key = found.value
      if (apiId === undefined) {
        const denied = Decision.failed(auth.authorize(principal, Permission.required.verifyKey(key.apiId)))
        if (denied !== undefined) {
          if (!hide || !principal.permissions.some(isVerifyPermission)) return denied
          const event = eventOf(principal, request, now, key.apiId, key.id, "NOT_FOUND", undefined, 0, started)
          return recorded(event, durable, NOT_FOUND_ANSWER)
        }
      }
      let identity: Identity | undefined
      if (key.identityId !== undefined) {
        const known = cache.lookupIdentity(key.identityId, () => catalog.getIdentity(key.workspaceId, key.identityId!))
        if (known instanceof Missing) return known
        identity = Option.getOrUndefined(known)
      }
      // Requested limits are the key's or its identity's, or come with their limit and window: an
      // unknown name without them is the caller's mistake.
      const requested = requestedOf(key, identity, request)
      if (typeof requested === "number") return Exit.fail(unknownRatelimit(request, requested))
      // A limit neither has takes from namespace windows as `ratelimits.limit` would: so it needs
      // the permission that route needs for any namespace.
      if (requested !== undefined && [...requested.keys()].some((name) => !hasLimit(key, identity, name))) {
        const denied = Decision.failed(auth.authorize(principal, Permission.required.limit("*")))
        if (denied !== undefined) return denied
      }
      // The key's roles, for the permissions they hold (a role deleted meanwhile holds none).
      let roles: Array<Role> | undefined
      if (key.roles !== undefined && key.roles.length > 0) {
        roles = []
        for (const id of key.roles) {
          const known = cache.lookupRole(id, () => catalog.getRole(key.workspaceId, id))
          if (known instanceof Missing) return known
          if (Option.isSome(known)) roles.push(known.value)
        }
      }
      const permissions = roles === undefined ? key.permissions : permissionsOf(key, roles)
      const roleNames = roles?.map((role) => role.name)
      const code = precheck(key, identity, request, now, permissions)
      const end = { principal, request, now, key, identity, permissions, roleNames, durable, started }
      if (code !== undefined) return answered(end, code, undefined)
      return Decision.andThen(
        limiter.decideTakeAll(key.workspaceId, limitsOf(key, identity, requested, request.ratelimit?.cost), now),
        (taken) => afterLimits(end, taken)
      )
    }

    /** The end of a verification whose limits were taken: credits spent (or not), recorded, answered. */
    const afterLimits = (end: End, taken: Taken): Decision.Turn<VerifyKeyResponse, StorageError | Busy> =>
      !taken.allowed
        ? answered(end, "RATE_LIMITED", taken.results)
        : end.key.credited
        ? spendAndAnswer(end, taken)
        : answered(end, "VALID", taken.results)

    /**
     * The end of a verification that spends nothing: recorded and answered, with the balance read
     * when the key has credits.
     */
    const answered = (
      end: End,
      code: Code,
      limits: ReadonlyArray<TakenLimit> | undefined
    ): Effect.Effect<VerifyKeyResponse, StorageError> => {
      const { identity, key } = end
      if (!key.credited) {
        const event = eventOf(end.principal, end.request, end.now, key.apiId, key.id, code, identity, 0, end.started)
        return recorded(event, end.durable, answerOf(end, code, limits, undefined))
      }
      // The answer waits for the balance: so does the latency.
      return Effect.flatMap(catalog.getCredits(key.id), (credits) =>
        recorded(
          eventOf(end.principal, end.request, end.now, key.apiId, key.id, code, identity, 0, end.started),
          end.durable,
          answerOf(end, code, limits, Option.getOrUndefined(credits)?.remaining)
        ))
    }

    /**
     * The end of a verification whose limits were taken: spends the credits (all or nothing with
     * the limits, which are given back when the credits fall short or storage fails), records,
     * answers.
     */
    const spendAndAnswer = (end: End, taken: Taken) =>
      Effect.gen(function*() {
        const { identity, key, now, request } = end
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
        // No balance: the key's credits were removed meanwhile; it verifies as a key without (and
        // spends nothing).
        const remaining = Option.isSome(spend) ? spend.value.remaining : undefined
        const spent = Option.isSome(spend) && spend.value.spent ? request.credits?.cost ?? 1 : 0
        const event = eventOf(end.principal, request, now, key.apiId, key.id, code, identity, spent, end.started)
        return yield* recorded(event, end.durable, answerOf(end, code, limits, remaining))
      })

    /** `answer` once `event` is queued (or, when `durable`, stored). */
    const recorded = (
      event: Verification.Verification,
      durable: boolean,
      answer: VerifyKeyResponse
    ): Effect.Effect<VerifyKeyResponse, StorageError> => {
      const queued = durable ? recorder.record(event, true) : recorder.decideRecord(event)
      return Exit.isExit(queued) && Exit.isSuccess(queued) ? Exit.succeed(answer) : Effect.as(queued, answer)
    }

    return { verify } as const
  })
}) {}

/** How a verification fails: a request the caller got wrong, or storage. */
type VerifyError = ValidationError | InsufficientPermissions | NotFound | StorageError | Busy

/** What the end of a verification knows. */
interface End {
  /** The key's permissions, its own and its roles'. */
  readonly permissions: ReadonlyArray<string>
  /** The names of the key's roles, if it has any. */
  readonly roleNames: ReadonlyArray<string> | undefined
  readonly principal: Principal
  readonly request: VerifyKeyInput
  readonly now: number
  readonly key: Key
  readonly identity: Identity | undefined
  readonly durable: boolean
  /** `performance.now()` when the call began. */
  readonly started: number
}

/**
 * The verification event of a call that spent `spentCredits`, begun at `started`
 * (`performance.now()`): its latency runs until now, when its answer is ready.
 */
const eventOf = (
  principal: Principal,
  request: VerifyKeyInput,
  now: number,
  apiId: string,
  keyId: string,
  code: Code,
  identity: Identity | undefined,
  spentCredits: number,
  started: number
) =>
  Verification.make({
    time: now,
    workspaceId: principal.workspaceId,
    apiId,
    keyId,
    outcome: outcomeOf[code],
    identity: identity === undefined ? undefined : { id: identity.id, externalId: identity.externalId },
    tags: request.tags,
    spentCredits,
    latency: Math.round((performance.now() - started) * 1000) / 1000,
    region: ""
  })

/** A key's permissions with its roles': its own first, each once. */
const permissionsOf = (key: Key, roles: ReadonlyArray<Role>): ReadonlyArray<string> => {
  const all = new Set(key.permissions)
  for (const role of roles) for (const permission of role.permissions) all.add(permission)
  return [...all]
}

/** The code of the checks before the limits (2–6 of the order), or undefined when they pass. */
const precheck = (
  key: Key,
  identity: Identity | undefined,
  request: VerifyKeyInput,
  now: number,
  permissions: ReadonlyArray<string>
) =>
  request.apiId !== undefined && request.apiId !== key.apiId
    ? "FORBIDDEN" as const
    : identity !== undefined && !identity.enabled
    ? "UNAUTHORIZED" as const
    : !key.enabled
    ? "DISABLED" as const
    : key.expires !== undefined && key.expires <= now
    ? "EXPIRED" as const
    : request.permissions !== undefined && !satisfies(permissions, request.permissions)
    ? "INSUFFICIENT_PERMISSIONS" as const
    : undefined

/** Whether a permission lets its holder verify some api's keys. */
const isVerifyPermission = (permission: string) =>
  permission === "*" || (permission.startsWith("api.") && permission.endsWith(".verify_key"))

const NO_META: Record<string, unknown> = Object.freeze({})

const NOT_FOUND_ANSWER: VerifyKeyResponse = { valid: false, code: "NOT_FOUND" }
const NOT_FOUND = Exit.succeed(NOT_FOUND_ANSWER)

/** The answer of a verification: the key's fields, but none for another api's key (FORBIDDEN). */
const answerOf = (
  end: End,
  code: Code,
  limits: ReadonlyArray<TakenLimit> | undefined,
  remaining: number | undefined
): VerifyKeyResponse => {
  if (code === "FORBIDDEN") return { valid: false, code }
  const { identity, key } = end
  // Built field by field, in the schema's order: spreading optional fields allocates an object
  // for each, a cost every verification would pay.
  const answer: Record<string, unknown> = { valid: code === "VALID", code, keyId: key.id }
  if (key.name !== undefined) answer.name = key.name
  if (key.meta !== undefined) answer.meta = key.meta
  if (key.expires !== undefined) answer.expires = key.expires
  if (remaining !== undefined) answer.credits = { remaining }
  if (limits !== undefined && limits.length > 0) answer.ratelimits = limits
  answer.permissions = end.permissions
  if (end.roleNames !== undefined) answer.roles = end.roleNames
  answer.enabled = key.enabled
  if (identity !== undefined) {
    answer.identity = { id: identity.id, externalId: identity.externalId, meta: identity.meta ?? NO_META }
  }
  if (key.environment !== undefined) answer.environment = key.environment
  return answer as VerifyKeyResponse
}

const unknownRatelimit = (request: VerifyKeyInput, i: number) =>
  new ValidationError({
    message: `ratelimits[${i}].name: the key has no rate limit named ${
      JSON.stringify(request.ratelimits![i]!.name)
    } (nor its identity); give its limit and duration to apply one for this call`
  })
