/**
 * Rate limiting that honours overrides: `limit` answers whether a request of an identifier in a
 * namespace is allowed, with the sliding-window state of this process.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Auth } from "./Auth.js"
import { ValidationError } from "./Errors.js"
import * as Ids from "./Ids.js"
import { CatalogCache } from "./internal/CatalogCache.js"
import { SlidingWindows } from "./internal/slidingWindow.js"
import { MAX_NAME_LENGTH, Namespace } from "./Namespace.js"
import type { Override } from "./Override.js"
import { Duration, MAX_DURATION, MAX_IDENTIFIER_LENGTH, MIN_DURATION } from "./Override.js"
import { Overrides, Unknown } from "./Overrides.js"
import type { Principal } from "./Permission.js"
import * as Permission from "./Permission.js"
import { Catalog } from "./Storage.js"
import * as Validation from "./Validation.js"
import type { Decision, WindowRequest } from "./Windows.js"
import { Windows } from "./Windows.js"

const Integer = (min: number, expectation: string) =>
  Validation.expected(Schema.Number.pipe(Schema.int(), Schema.between(min, Number.MAX_SAFE_INTEGER)), expectation)

/** Body of `ratelimits.limit`. */
export const LimitInput = Schema.Struct({
  namespace: Validation.boundedString("a namespace name", 1, MAX_NAME_LENGTH),

  identifier: Validation.boundedString("a string", 1, MAX_IDENTIFIER_LENGTH),

  limit: Integer(1, "must be an integer >= 1"),
  duration: Duration,
  cost: Schema.optional(Integer(0, "must be an integer >= 0"))
}).annotations({ identifier: "LimitInput" })

/** Answer of `ratelimits.limit`. */
export const LimitResponse = Schema.Struct({
  success: Schema.Boolean,
  limit: Schema.Number.annotations({ description: "the limit applied: the override's when one applies" }),
  remaining: Schema.Number,
  reset: Schema.Number.annotations({ description: "unix ms when the oldest counted request leaves the window" }),
  overrideId: Schema.optional(Schema.String)
}).annotations({ identifier: "LimitResponse" })

/** One limit of a {@link RateLimiter} `takeAll` call, as a verification answers it. */
export interface TakenLimit {
  readonly name: string
  readonly limit: number
  readonly remaining: number
  readonly reset: number
  readonly exceeded: boolean
  readonly overrideId?: string
}

/** One limit {@link RateLimiter} `takeAll` takes. */
export interface TakeRequest {
  /** The namespace's name. */
  readonly name: string
  readonly identifier: string
  readonly limit: number
  readonly duration: number
  readonly cost: number
}

/** What `takeAll` took: all its limits (`allowed`) or none. */
export interface Taken {
  readonly allowed: boolean
  readonly results: ReadonlyArray<TakenLimit>
  /** Gives back what was taken (once); the results as they then stand. Never fails (a failure is logged). */
  readonly refund: Effect.Effect<ReadonlyArray<TakenLimit>>
  /** {@link refund} at once, when the windows are in this process. */
  readonly refundNow: (() => ReadonlyArray<TakenLimit>) | undefined
}

interface Resolved {
  readonly request: TakeRequest
  readonly key: string
  readonly override: Override | undefined
}

/** An answer of {@link RateLimiter}. */
export type LimitResponse = Schema.Schema.Type<typeof LimitResponse>

/**
 * `input` as {@link LimitInput} decodes it, when it is a plain valid body (what clients send);
 * undefined for anything else, valid or not, which the schema then judges. A hand check costs a
 * tenth of the schema's.
 */
const plainLimitInput = (input: unknown): Schema.Schema.Type<typeof LimitInput> | undefined => {
  if (typeof input !== "object" || input === null || Array.isArray(input)) return undefined
  let fields = 0
  for (const name in input) {
    if (!Object.hasOwn(LIMIT_FIELDS, name)) return undefined
    fields++
  }
  const { cost, duration, identifier, limit, namespace } = input as Record<string, unknown>
  const valid = typeof namespace === "string" && namespace.length >= 1 && namespace.length <= MAX_NAME_LENGTH &&
    !namespace.includes("*") && Validation.isWellFormed(namespace) &&
    typeof identifier === "string" && identifier.length >= 1 && identifier.length <= MAX_IDENTIFIER_LENGTH &&
    Validation.isWellFormed(identifier) &&
    Number.isSafeInteger(limit) && (limit as number) >= 1 &&
    Number.isSafeInteger(duration) && (duration as number) >= MIN_DURATION && (duration as number) <= MAX_DURATION &&
    (cost === undefined ? fields === 4 : Number.isSafeInteger(cost) && (cost as number) >= 0 && fields === 5)
  return valid ? input as Schema.Schema.Type<typeof LimitInput> : undefined
}
const LIMIT_FIELDS = { namespace: 1, identifier: 1, limit: 1, duration: 1, cost: 1 }

/** Sliding-window rate limiting per (namespace, identifier), applying overrides. */
export class RateLimiter extends Effect.Service<RateLimiter>()("@keymeter/core/RateLimiter", {
  effect: Effect.gen(function*() {
    const catalog = yield* Catalog
    const auth = yield* Auth
    const overrides = yield* Overrides
    const windows = yield* Windows
    const local = windows.local
    // With shared windows, `async: true` overrides are decided here, from this process's view of
    // their windows, which each decision then brings up to date with the shared one in the
    // background: no wait for the store, at the price of some overshoot (see the README).
    const nearby = new SlidingWindows()
    const decode = Validation.decode(LimitInput)
    const namespaces = new CatalogCache<Option.Option<Namespace>>(catalog.revision)

    /**
     * Validates, finds the namespace by name (creating it on first use, which needs
     * `ratelimit.*.limit`), resolves the override that applies, and takes `cost` (default 1) from
     * the identifier's window using the override's limit and duration when there is one.
     */
    const limit = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const request = plainLimitInput(input) ?? (yield* decode(input))
        if (request.namespace.includes("*")) {
          return yield* new ValidationError({
            message: "namespace: must not contain *; patterns name namespaces of overrides, not of requests"
          })
        }
        const found = yield* namespaces.get(
          `${principal.workspaceId}\u0000${request.namespace}`,
          catalog.findNamespaceByName(principal.workspaceId, request.namespace)
        )
        let namespace: Namespace
        if (found._tag === "Some") {
          yield* auth.authorize(principal, Permission.required.limit(found.value.id))
          namespace = found.value
        } else {
          yield* auth.authorize(principal, Permission.required.limit("*"))
          namespace = yield* createNamespace(principal.workspaceId, request.namespace)
        }
        const override = yield* overrides.resolve(namespace, request.identifier)
        const now = yield* Clock.currentTimeMillis
        if (local !== undefined) return decide(namespace, request, override, now)
        if (override?.async) return decideNearby(namespace, request, override, now)
        const applied = override ?? request
        const [decision] = yield* windows.takeAll([{
          key: `${namespace.id}\u0000${request.identifier}`,
          limit: applied.limit,
          duration: applied.duration,
          cost: request.cost ?? 1
        }], now)
        return answerOf(decision!, applied.limit, override)
      })

    const answerOf = (decision: Decision, limit: number, override: Override | undefined): LimitResponse => ({
      success: decision.success,
      limit,
      remaining: decision.remaining,
      reset: decision.reset,
      ...(override !== undefined ? { overrideId: override.id } : {})
    })

    /** Takes the request's cost from this process's window, under the override's limit when one applies. */
    const decide = (
      namespace: Namespace,
      request: Schema.Schema.Type<typeof LimitInput>,
      override: Override | undefined,
      now: number
    ): LimitResponse => {
      const applied = override ?? request
      const key = `${namespace.id}\u0000${request.identifier}`
      const decision = local!.take(key, now, applied.limit, applied.duration, request.cost ?? 1)
      return answerOf(decision, applied.limit, override)
    }

    /**
     * Decides an `async` override from this process's view of its window, then adds what it took
     * to the shared window (or only reads it, when refused) and raises the view to what all
     * servers took.
     */
    const decideNearby = (
      namespace: Namespace,
      request: Schema.Schema.Type<typeof LimitInput>,
      override: Override,
      now: number
    ): LimitResponse => {
      const key = `${namespace.id}\u0000${request.identifier}`
      const cost = request.cost ?? 1
      const decision = nearby.take(key, now, override.limit, override.duration, cost)
      Effect.runFork(
        windows.takeAll([{
          key,
          limit: Number.MAX_SAFE_INTEGER,
          duration: override.duration,
          cost: decision.success ? cost : 0
        }], now).pipe(
          Effect.map(([shared]) =>
            nearby.catchUp(key, now, Number.MAX_SAFE_INTEGER - shared!.remaining, override.duration)
          ),
          Effect.ignore
        )
      )
      return answerOf(decision, override.limit, override)
    }

    /** Creates the workspace's namespace `name` (or finds the one a concurrent call created). */
    const createNamespace = (workspaceId: string, name: string) =>
      Effect.flatMap(
        Clock.currentTimeMillis,
        (now) => catalog.ensureNamespace(new Namespace({ id: Ids.make(Ids.Prefix.namespace, now), workspaceId, name }))
      )

    /**
     * What {@link limit} would answer at `now`, taken from the window, when it is known without
     * I/O: the body is valid as it is, its namespace exists and was read since the catalog last
     * changed, the principal may limit in it and the overrides involved are in memory. Undefined
     * otherwise (nothing taken): run {@link limit}, which also words every refusal.
     */
    const limitNow = (principal: Principal, input: unknown, now: number): LimitResponse | undefined => {
      const request = plainLimitInput(input)
      if (request === undefined) return undefined
      const found = namespaces.peek(`${principal.workspaceId}\u0000${request.namespace}`)
      if (found === undefined || found._tag === "None") return undefined
      const namespace = found.value
      if (!Permission.allows(principal.permissions, Permission.required.limit(namespace.id))) return undefined
      const override = overrides.resolveNow(namespace, request.identifier)
      if (override === Unknown) return undefined
      if (local !== undefined) return decide(namespace, request, override, now)
      return override?.async ? decideNearby(namespace, request, override, now) : undefined
    }

    /**
     * Takes several limits of one call together, in the workspace's namespaces by name (created on
     * first use), each under its identifier and with the override that resolves for it: all are
     * taken, or, when any is exceeded, none (what was taken is given back). `refund` gives all back
     * later (the call was refused for another reason). No permission is checked: the caller did.
     */
    const takeAll = (workspaceId: string, requests: ReadonlyArray<TakeRequest>) =>
      Effect.gen(function*() {
        const resolved: Array<Resolved> = []
        for (const request of requests) {
          const namespace = yield* namespaceNamed(workspaceId, request.name)
          const override = yield* overrides.resolve(namespace, request.identifier)
          resolved.push({ request, key: `${namespace.id}\u0000${request.identifier}`, override })
        }
        const now = yield* Clock.currentTimeMillis
        if (local !== undefined) return take(resolved, now)
        const decisions = yield* windows.takeAll(resolved.map(windowRequest), now)
        return sharedTaken(
          resolved,
          decisions,
          (taken) =>
            windows.refundAll(taken, now).pipe(
              Effect.catchAll((error) => Effect.logWarning("rate-limit tokens could not be given back", error))
            )
        )
      })

    const windowRequest = ({ key, override, request }: Resolved): WindowRequest => ({
      key,
      limit: (override ?? request).limit,
      duration: (override ?? request).duration,
      cost: request.cost
    })

    /**
     * What a shared `takeAll` took, from its all-or-none decisions; `giveBack` returns what was
     * taken (once, and only when all was taken: a refusal took nothing).
     */
    const sharedTaken = (
      resolved: ReadonlyArray<Resolved>,
      decisions: ReadonlyArray<Decision>,
      giveBack: (taken: ReadonlyArray<{ key: string; cost: number }>) => Effect.Effect<void>
    ): Taken => {
      const results = resolved.map(({ override, request }, i): TakenLimit => ({
        name: request.name,
        limit: (override ?? request).limit,
        remaining: decisions[i]!.remaining,
        reset: decisions[i]!.reset,
        exceeded: !decisions[i]!.success,
        ...(override !== undefined ? { overrideId: override.id } : {})
      }))
      const allowed = results.every((result) => !result.exceeded)
      if (!allowed) return { allowed, results, refund: Effect.succeed(results), refundNow: undefined }
      const back = () =>
        results.map((result, i) => ({
          ...result,
          remaining: Math.min(result.limit, result.remaining + resolved[i]!.request.cost)
        }))
      let refunded = false
      return {
        allowed,
        results,
        refund: Effect.suspend(() => {
          if (refunded) return Effect.succeed(back())
          refunded = true
          return Effect.as(giveBack(resolved.map(({ key, request }) => ({ key, cost: request.cost }))), back())
        }),
        refundNow: undefined
      }
    }

    /**
     * What {@link takeAll} does, at `now`, when its namespaces and overrides are known without I/O;
     * undefined otherwise (nothing taken).
     */
    const takeAllNow = (workspaceId: string, requests: ReadonlyArray<TakeRequest>, now: number) => {
      if (requests.length === 0) return take([], now)
      if (local === undefined) return undefined
      const resolved: Array<Resolved> = []
      for (const request of requests) {
        const found = namespaces.peek(`${workspaceId}\u0000${request.name}`)
        if (found === undefined || found._tag === "None") return undefined
        const override = overrides.resolveNow(found.value, request.identifier)
        if (override === Unknown) return undefined
        resolved.push({ request, key: `${found.value.id}\u0000${request.identifier}`, override })
      }
      return take(resolved, now)
    }

    /**
     * {@link takeAll} on this process's windows: the hot path of every verification with limits,
     * so one loop and no intermediate arrays (building it from `Windows.takeAllLocal` and
     * `sharedTaken` cost about 0.6 µs more per verification).
     */
    const take = (resolved: ReadonlyArray<Resolved>, now: number): Taken => {
      const results: Array<TakenLimit> = []
      const taken: Array<{ readonly key: string; readonly cost: number }> = []
      for (const { key, override, request } of resolved) {
        const applied = override ?? request
        const decision = local!.take(key, now, applied.limit, applied.duration, request.cost)
        if (decision.success) taken.push({ key, cost: request.cost })
        results.push({
          name: request.name,
          limit: applied.limit,
          remaining: decision.remaining,
          reset: decision.reset,
          exceeded: !decision.success,
          ...(override !== undefined ? { overrideId: override.id } : {})
        })
      }
      let refunded = false
      /** Gives back what was taken (once); the results as they then stand. */
      const refund = (): ReadonlyArray<TakenLimit> => {
        if (!refunded) {
          refunded = true
          for (const { cost, key } of taken) local!.refund(key, now, cost)
        }
        return results.map((result, i) =>
          result.exceeded
            ? result
            : { ...result, remaining: Math.min(result.limit, result.remaining + resolved[i]!.request.cost) }
        )
      }
      const allowed = results.every((result) => !result.exceeded)
      return { allowed, results: allowed ? results : refund(), refundNow: refund, refund: Effect.sync(refund) }
    }

    /** The namespace of the workspace named `name`, created on first use. */
    const namespaceNamed = (workspaceId: string, name: string) =>
      Effect.gen(function*() {
        const found = yield* namespaces.get(
          `${workspaceId}\u0000${name}`,
          catalog.findNamespaceByName(workspaceId, name)
        )
        return found._tag === "Some" ? found.value : yield* createNamespace(workspaceId, name)
      })

    return { limit, limitNow, takeAll, takeAllNow } as const
  })
}) {}
