/**
 * Rate limiting that honours overrides: `limit` answers whether a request of an identifier in a
 * namespace is allowed, with the sliding-window state of this process.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Auth } from "./Auth.js"
import * as Checker from "./Checker.js"
import * as Decision from "./Decision.js"
import { Missing } from "./Decision.js"
import type { Busy, InsufficientPermissions, StorageError } from "./Errors.js"
import { ValidationError } from "./Errors.js"
import * as Ids from "./Ids.js"
import { CatalogCache } from "./internal/CatalogCache.js"
import * as CompositeKey from "./internal/CompositeKey.js"
import { SlidingWindows } from "./internal/slidingWindow.js"
import { Meta } from "./Key.js"
import { MAX_NAME_LENGTH, Namespace } from "./Namespace.js"
import type { Override } from "./Override.js"
import { Duration, MAX_IDENTIFIER_LENGTH, MAX_TIME } from "./Override.js"
import { Overrides } from "./Overrides.js"
import type { Principal } from "./Permission.js"
import * as Permission from "./Permission.js"
import { Catalog } from "./Storage.js"
import * as Validation from "./Validation.js"
import type { Decision as WindowDecision, WindowRequest } from "./Windows.js"
import * as Windows from "./Windows.js"

const Integer = (min: number, expectation: string) =>
  Validation.expected(Schema.Number.pipe(Schema.int(), Schema.between(min, Number.MAX_SAFE_INTEGER)), expectation)

/** The namespace of a `ratelimits.limit` that names none, as Unkey's v1 has it. */
export const DEFAULT_NAMESPACE = "default"

/** Most resources one `ratelimits.limit` names. */
export const MAX_RESOURCES = 100

/** A resource a limited request is about to access (Unkey v1's `resources[]`). */
const Resource = Schema.Struct({
  type: Validation.boundedString("a string", 1, 255),
  id: Validation.boundedString("a string", 1, 255),
  name: Schema.optional(Validation.boundedString("a string", 1, 255)),
  meta: Schema.optional(Meta)
})

/**
 * Body of `ratelimits.limit`: Unkey v1's. `async`, `meta` and `resources` are accepted and
 * bounded; `meta` and `resources` are not stored yet (rate-limit analytics will keep them),
 * `async` decides from this server's view of a shared window (see the README).
 */
export const LimitInput = Schema.Struct({
  namespace: Schema.optional(Validation.boundedString("a namespace name", 1, MAX_NAME_LENGTH)).annotations({
    description: `The namespace; "${DEFAULT_NAMESPACE}" when none is given.`
  }),
  identifier: Validation.boundedString("a string", 1, MAX_IDENTIFIER_LENGTH),
  limit: Integer(1, "must be an integer >= 1"),
  duration: Duration,
  cost: Schema.optional(Integer(0, "must be an integer >= 0")),
  async: Schema.optional(Validation.expected(Schema.Boolean, "must be true or false")),
  meta: Schema.optional(Meta),
  resources: Schema.optional(
    Schema.Array(Resource).pipe(
      Schema.filter((all) => all.length <= MAX_RESOURCES || `must hold at most ${MAX_RESOURCES} resources`)
    )
  )
}).annotations({ identifier: "LimitInput" })

/** Answer of `ratelimits.limit`. */
export const LimitResponse = Schema.Struct({
  success: Schema.Boolean,
  limit: Schema.Number.annotations({ description: "the limit applied: the override's when one applies" }),
  remaining: Schema.Number,
  reset: Schema.Number.annotations({ description: "unix ms when the oldest counted request leaves the window" }),
  overrideId: Schema.optional(Schema.String)
}).annotations({ identifier: "LimitResponse" })

/** One limit of a {@link RateLimiter} `decideTakeAll` call, as a verification answers it. */
export interface TakenLimit {
  readonly name: string
  readonly limit: number
  readonly remaining: number
  readonly reset: number
  readonly exceeded: boolean
  readonly overrideId?: string
}

/** One limit {@link RateLimiter} `decideTakeAll` takes. */
export interface TakeRequest {
  /** The namespace's name. */
  readonly name: string
  readonly identifier: string
  readonly limit: number
  readonly duration: number
  readonly cost: number
}

/** What `decideTakeAll` took: all its limits (`allowed`) or none. */
export interface Taken {
  readonly allowed: boolean
  readonly results: ReadonlyArray<TakenLimit>
  /** Gives back what was taken (once); the results as they then stand. Never fails (a failure is logged). */
  readonly refund: Effect.Effect<ReadonlyArray<TakenLimit>>
}

interface Resolved {
  readonly request: TakeRequest
  readonly override: Override | undefined
  /** The window taken from, under the override's limit when one applies. */
  readonly window: WindowRequest
}

/** An answer of {@link RateLimiter}. */
export type LimitResponse = Schema.Schema.Type<typeof LimitResponse>

/** A window's reset as a valid time: windows up to 2^53-1 ms end past the last Date. */
const validReset = (reset: number) => Math.min(reset, MAX_TIME)

/** The fast check of a body (see `Checker`): what the schema would decode to itself. */
const checkLimit = Checker.compile(LimitInput)

/** Sliding-window rate limiting per (namespace, identifier), applying overrides. */
export class RateLimiter extends Effect.Service<RateLimiter>()("@keymeter/core/RateLimiter", {
  effect: Effect.gen(function*() {
    const catalog = yield* Catalog
    const auth = yield* Auth
    const overrides = yield* Overrides
    const windows = yield* Windows.Windows
    const clock = yield* Effect.clock
    // With shared windows, `async: true` overrides are decided here, from this process's view of
    // their windows, which each decision then brings up to date with the shared one in the
    // background: no wait for the store, at the price of some overshoot (see the README).
    const nearby = new SlidingWindows(yield* Windows.MaxWindows)
    const decode = Validation.decode(LimitInput)
    const namespaces = new CatalogCache<Option.Option<Namespace>>(catalog.revision)

    /**
     * The workspace's namespace `name`, as a lookup; a name seen for the first time is created
     * (when `mayCreate` allows it: the caller's permission, checked only then), which is what is
     * then missing.
     */
    const namespaceNamed = <E>(
      workspaceId: string,
      name: string,
      mayCreate: () => Exit.Exit<void, E>
    ): Option.Some<Namespace> | Missing<StorageError> | Exit.Exit<never, E> => {
      const found = namespaces.lookup(
        CompositeKey.make(workspaceId, name),
        () => catalog.findNamespaceByName(workspaceId, name)
      )
      if (found instanceof Missing || Option.isSome(found)) return found
      return Decision.failed(mayCreate()) ?? new Missing(createNamespace(workspaceId, name))
    }

    /** Creates the workspace's namespace `name` (or finds the one a concurrent call created). */
    const createNamespace = (workspaceId: string, name: string) =>
      Effect.flatMap(
        Clock.currentTimeMillis,
        (now) => catalog.ensureNamespace(new Namespace({ id: Ids.make(Ids.Prefix.namespace, now), workspaceId, name }))
      )

    /**
     * Validates, finds the namespace by name (creating it on first use, which needs
     * `ratelimit.*.limit`), resolves the override that applies, and takes `cost` (default 1) from
     * the identifier's window using the override's limit and duration when there is one. A
     * decision (see `Decision`): `Decision.now` answers it without running an effect when memory
     * holds what it needs.
     */
    const limit = (principal: Principal, input: unknown) => {
      return checkLimit(input)
        ? Decision.make(() => decideLimit(principal, input))
        : Effect.flatMap(decode(input), (decoded) => Decision.make(() => decideLimit(principal, decoded)))
    }

    const decideLimit = (
      principal: Principal,
      request: Schema.Schema.Type<typeof LimitInput>
    ): Decision.Turn<LimitResponse, ValidationError | InsufficientPermissions | StorageError | Busy> => {
      const namespaceName = request.namespace ?? DEFAULT_NAMESPACE
      if (namespaceName.includes("*")) return STAR
      const found = namespaceNamed(
        principal.workspaceId,
        namespaceName,
        () => auth.authorize(principal, Permission.required.limit("*"))
      )
      if (!Option.isOption(found)) return found
      const namespace = found.value
      const denied = Decision.failed(auth.authorize(principal, Permission.required.limit(namespace.id)))
      if (denied !== undefined) return denied
      const override = overrides.resolve(namespace, request.identifier)
      if (override instanceof Missing) return override
      const now = clock.unsafeCurrentTimeMillis()
      const key = Windows.keyOf(namespace.id, request.identifier)
      const cost = request.cost ?? 1
      const applied = override ?? request
      // An override decides how its limit is taken; without one, the request's `async` does.
      if ((override !== undefined ? override.async : request.async === true) && windows.shared) {
        return decideNearby(principal.workspaceId, key, cost, applied, override, now)
      }
      return Decision.andThen(
        windows.takeAll([{
          key,
          owner: principal.workspaceId,
          limit: applied.limit,
          duration: applied.duration,
          cost
        }], now),
        ([decision]) => Exit.succeed(answerOf(decision!, applied.limit, override))
      )
    }

    const answerOf = (decision: WindowDecision, limit: number, override: Override | undefined): LimitResponse => ({
      success: decision.success,
      limit,
      remaining: decision.remaining,
      reset: validReset(decision.reset),
      ...(override !== undefined ? { overrideId: override.id } : {})
    })

    /**
     * Decides an `async` limit (an override's, or a request's without one) from this process's
     * view of its window, then adds what it took
     * to the shared window (or only reads it, when refused) and raises the view to what all
     * servers took.
     */
    const decideNearby = (
      owner: string,
      key: string,
      cost: number,
      applied: { readonly limit: number; readonly duration: number },
      override: Override | undefined,
      now: number
    ): Exit.Exit<LimitResponse, Busy> => {
      const taken = Windows.takeAllFrom(nearby, [{
        key,
        owner,
        limit: applied.limit,
        duration: applied.duration,
        cost
      }], now)
      if (!Array.isArray(taken)) return Exit.fail(taken as Busy)
      const decision = taken[0]!
      Effect.runFork(
        Effect.suspend(() =>
          windows.takeAll([{
            key,
            owner,
            limit: Number.MAX_SAFE_INTEGER,
            duration: applied.duration,
            cost: decision.success ? cost : 0
          }], now)
        ).pipe(
          Effect.map(([shared]) =>
            nearby.catchUp(key, now, Number.MAX_SAFE_INTEGER - shared!.remaining, applied.duration, owner)
          ),
          Effect.ignore
        )
      )
      return Exit.succeed(answerOf(decision, applied.limit, override))
    }

    /**
     * Takes several limits of one call together at `now`, in the workspace's namespaces by name
     * (created on first use), each under its identifier and with the override that resolves for
     * it: all are taken, or, when any is exceeded, none. `refund` gives all back later (the call
     * was refused for another reason). No permission is checked: the caller did. A decision (see
     * `Decision`): what it takes is taken only once all it needs was found in memory.
     */
    const decideTakeAll = (
      workspaceId: string,
      requests: ReadonlyArray<TakeRequest>,
      now: number
    ): Decision.Turn<Taken, StorageError | Busy> => {
      if (requests.length === 0) return NOTHING_TAKEN
      const resolved: Array<Resolved> = []
      for (const request of requests) {
        const found = namespaceNamed(workspaceId, request.name, allowed)
        if (!Option.isOption(found)) return found
        const override = overrides.resolve(found.value, request.identifier)
        if (override instanceof Missing) return override
        const applied = override ?? request
        resolved.push({
          request,
          override,
          window: {
            key: Windows.keyOf(found.value.id, request.identifier),
            owner: workspaceId,
            limit: applied.limit,
            duration: applied.duration,
            cost: request.cost
          }
        })
      }
      return Decision.andThen(
        windows.takeAll(resolved.map((r) => r.window), now),
        (decisions) => Exit.succeed(takenOf(resolved, decisions, now))
      )
    }

    /** What a `takeAll` took, from its windows' all-or-none decisions. */
    const takenOf = (
      resolved: ReadonlyArray<Resolved>,
      decisions: ReadonlyArray<WindowDecision>,
      now: number
    ): Taken => {
      let allowed = true
      const results = resolved.map(({ override, request, window }, i): TakenLimit => {
        const decision = decisions[i]!
        if (!decision.success) allowed = false
        return {
          name: request.name,
          limit: window.limit,
          remaining: decision.remaining,
          reset: validReset(decision.reset),
          exceeded: !decision.success,
          ...(override !== undefined ? { overrideId: override.id } : {})
        }
      })
      // A refusal took nothing.
      if (!allowed) return { allowed, results, refund: Exit.succeed(results) }
      const back = () => results.map((result, i) => Windows.givenBack(result, result.limit, resolved[i]!.request.cost))
      let refunded = false
      return {
        allowed,
        results,
        refund: Effect.suspend(() => {
          if (refunded) return Exit.succeed(back())
          refunded = true
          const given = windows.refundAll(resolved.map(({ window }) => window), now)
          return Effect.as(
            Effect.catchAll(given, (error) => Effect.logWarning("rate-limit tokens could not be given back", error)),
            back()
          )
        })
      }
    }

    return { limit, decideTakeAll } as const
  })
}) {}

const allowed = (): Exit.Exit<void> => Exit.void
const NOTHING_TAKEN = Exit.succeed<Taken>({ allowed: true, results: [], refund: Exit.succeed([]) })

const STAR = Exit.fail(
  new ValidationError({
    message: "namespace: must not contain *; patterns name namespaces of overrides, not of requests"
  })
)
