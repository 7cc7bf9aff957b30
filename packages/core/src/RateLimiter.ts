/**
 * Rate limiting that honours overrides: `limit` answers whether a request of an identifier in a
 * namespace is allowed, with the sliding-window state of this process; `multiLimit` answers
 * several such requests in one call (Unkey v2's `ratelimit.multiLimit`).
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
import { allowed, Creation, LimitNamespaces } from "./internal/LimitNamespaces.js"
import { SlidingWindows } from "./internal/slidingWindow.js"
import type { LimitRequest, LimitResponse, MultiLimitResponse } from "./Limit.js"
import { DEFAULT_NAMESPACE, LimitInput, MAX_LIMITS, MultiLimitInput } from "./Limit.js"
import type { Namespace } from "./Namespace.js"
import type { Override } from "./Override.js"
import { MAX_TIME } from "./Override.js"
import { Overrides } from "./Overrides.js"
import type { Principal } from "./Permission.js"
import type { RatelimitEvent, Source } from "./RatelimitEvent.js"
import { detailOf } from "./RatelimitEvent.js"
import { RatelimitRecorder } from "./RatelimitRecorder.js"
import { Catalog } from "./Storage.js"
import * as Validation from "./Validation.js"
import type { Decision as WindowDecision, WindowRequest } from "./Windows.js"
import * as Windows from "./Windows.js"

/** One limit of a {@link RateLimiter} `decideTakeAll` call, as a verification answers it. */
export interface TakenLimit {
  /** The limit's id, as its owner (a key, an identity) names it. */
  readonly id: string
  readonly name: string
  readonly limit: number
  /** The window applied: the override's when one applies. */
  readonly duration: number
  readonly autoApply: boolean
  readonly remaining: number
  readonly reset: number
  readonly exceeded: boolean
  readonly overrideId?: string
}

/** One limit {@link RateLimiter} `decideTakeAll` takes. */
export interface TakeRequest {
  /** The limit's id (see {@link TakenLimit}). */
  readonly id: string
  /** Whether the limit applies without being asked for (answered back). */
  readonly autoApply: boolean
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

/** Where a limit takes from: the override that applies, and its window. */
interface Target {
  readonly override: Override | undefined
  /** The window taken from, under the override's limit when one applies. */
  readonly window: WindowRequest
}

interface Resolved extends Target {
  readonly request: TakeRequest
  readonly namespaceId: string
}

/** A window's reset as a valid time: windows up to 2^53-1 ms end past the last Date. */
const validReset = (reset: number) => Math.min(reset, MAX_TIME)

/** The fast checks of bodies (see `Checker`): what the schemas would decode to themselves. */
const checkLimit = Checker.compile(LimitInput)
const checkMultiLimit = Checker.compile(MultiLimitInput)

/** Sliding-window rate limiting per (namespace, identifier), applying overrides. */
export class RateLimiter extends Effect.Service<RateLimiter>()("@keymeter/core/RateLimiter", {
  effect: Effect.gen(function*() {
    const overrides = yield* Overrides
    const windows = yield* Windows.Windows
    const recorder = yield* RatelimitRecorder
    const clock = yield* Effect.clock
    // With shared windows, `async: true` overrides are decided here, from this process's view of
    // their windows, which each decision then brings up to date with the shared one in the
    // background: no wait for the store, at the price of some overshoot (see the README).
    const nearby = new SlidingWindows(yield* Windows.MaxWindows)
    const decode = Validation.decode(LimitInput)
    const decodeItems = Validation.decode(MultiLimitInput)
    const namespaces = new LimitNamespaces(yield* Catalog, yield* Auth)

    /**
     * Validates, finds the namespace (by id, or by name, creating it on first use, which needs
     * `ratelimit.*.limit`), resolves the override that applies, and takes `cost` (default 1) from
     * the identifier's window using the override's limit and duration when there is one. A
     * decision (see `Decision`): `Decision.now` answers it without running an effect when memory
     * holds what it needs.
     */
    const limit = (principal: Principal, input: unknown) => {
      // The decision's latency counts from the call, through whatever it loads.
      const started = performance.now()
      Foreground.mark(started)
      return checkLimit(input)
        ? Decision.make(() => decideLimit(principal, input, started))
        : Effect.flatMap(decode(input), (decoded) => Decision.make(() => decideLimit(principal, decoded, started)))
    }

    const decideLimit = (
      principal: Principal,
      request: LimitRequest,
      started: number
    ): Decision.Turn<LimitResponse, LimitError> => {
      const found = namespaces.of(principal, request, "")
      if (!Option.isOption(found)) return found
      const target = targetOf(principal.workspaceId, found.value, request.identifier, request, request.cost ?? 1)
      if (target instanceof Missing) return target
      const { override, window } = target
      const now = clock.unsafeCurrentTimeMillis()
      const answer = (decision: WindowDecision) => {
        const answer = answerOf(decision, window.limit, override)
        return recorded(
          [eventOf(principal.workspaceId, found.value.id, request.identifier, window, decision, override, {
            source: "limit",
            time: now,
            started,
            detail: detailOf(request.meta, request.resources)
          })],
          answer
        )
      }
      // An override decides how its limit is taken; without one, the request's `async` does.
      if ((override !== undefined ? override.async : request.async === true) && windows.shared) {
        return Decision.andThen(decideNearby(window, now), answer)
      }
      return Decision.andThen(windows.takeAll([window], now), ([decision]) => answer(decision!))
    }

    /** The event of one decision of `window` for (namespace, identifier). */
    const eventOf = (
      workspaceId: string,
      namespaceId: string,
      identifier: string,
      window: WindowRequest,
      decision: WindowDecision,
      override: Override | undefined,
      at: {
        readonly source: Source
        readonly time: number
        readonly started: number
        readonly detail?: string | undefined
      }
    ): RatelimitEvent => ({
      time: at.time,
      workspaceId,
      namespaceId,
      identifier,
      passed: decision.success,
      limit: window.limit,
      duration: window.duration,
      remaining: decision.remaining,
      cost: window.cost,
      overrideId: override?.id,
      source: at.source,
      latency: Math.round((performance.now() - at.started) * 1000) / 1000,
      detail: at.detail
    })

    /** `answer` once `events` are queued for recording: at once, unless the recorder's queue is full. */
    const recorded = <A>(events: ReadonlyArray<RatelimitEvent>, answer: A): Decision.Turn<A> => {
      let waiting: Array<Effect.Effect<void>> | undefined
      for (const event of events) {
        const queued = recorder.decideRecord(event)
        if (!Exit.isExit(queued)) (waiting ??= []).push(queued)
      }
      return waiting === undefined ? Exit.succeed(answer) : Effect.as(Effect.all(waiting), answer)
    }

    /**
     * Where `identifier` takes `cost` from in `namespace`, as a lookup: its window, under the
     * limit and duration of the override that resolves for it, else under `requested`'s.
     */
    const targetOf = (
      owner: string,
      namespace: Namespace,
      identifier: string,
      requested: { readonly limit: number; readonly duration: number },
      cost: number
    ): Target | Missing<StorageError> => {
      const override = overrides.resolve(namespace, identifier)
      if (override instanceof Missing) return override
      const applied = override ?? requested
      return {
        override,
        window: {
          key: Windows.keyOf(namespace.id, identifier),
          owner,
          limit: applied.limit,
          duration: applied.duration,
          cost
        }
      }
    }

    /**
     * Validates 1 to {@link MAX_LIMITS} bodies of `limit` and decides each as `limit` would, in
     * order and independently: `passed` when all passed. With `atomic`, all are taken together
     * or, when any is exceeded, none. Every limit's namespace is found and its permission checked
     * before anything is taken (or created). A decision, as `limit` is.
     */
    const multiLimit = (
      principal: Principal,
      input: unknown,
      options?: { readonly atomic?: boolean | undefined }
    ): Effect.Effect<MultiLimitResponse, LimitError> => {
      const atomic = options?.atomic === true
      const started = performance.now()
      Foreground.mark(started)
      const decide = (requests: ReadonlyArray<LimitRequest>) => () =>
        decideMultiLimit(principal, requests, atomic, started)
      if (checkMultiLimit(input)) return Decision.make(decide(input))
      if (!Array.isArray(input) || input.length < 1 || input.length > MAX_LIMITS) {
        const got = Array.isArray(input) ? `${input.length} limits` : Validation.describeValue(input)
        return Exit.fail(
          new ValidationError({ message: `input: must be an array of 1 to ${MAX_LIMITS} limits, got ${got}` })
        )
      }
      return Effect.flatMap(decodeItems(input), (decoded) => Decision.make(decide(decoded)))
    }

    const decideMultiLimit = (
      principal: Principal,
      requests: ReadonlyArray<LimitRequest>,
      atomic: boolean,
      started: number
    ): Decision.Turn<MultiLimitResponse, LimitError> => {
      const targets: Array<Target> = []
      const namespaceIds: Array<string> = []
      let creations: Array<Effect.Effect<unknown, StorageError>> | undefined
      for (let i = 0; i < requests.length; i++) {
        const request = requests[i]!
        const found = namespaces.of(principal, request, `[${i}].`)
        if (found instanceof Creation) {
          ;(creations ??= []).push(found.load)
          continue
        }
        if (!Option.isOption(found)) return found
        const target = targetOf(principal.workspaceId, found.value, request.identifier, request, request.cost ?? 1)
        if (target instanceof Missing) return target
        targets.push(target)
        namespaceIds.push(found.value.id)
      }
      if (creations !== undefined) return new Missing(Effect.all(creations, { discard: true }))
      const now = clock.unsafeCurrentTimeMillis()
      const answer = (decisions: ReadonlyArray<WindowDecision>) => {
        const events: Array<RatelimitEvent> = []
        const limits = targets.map(({ override, window }, i) => {
          const request = requests[i]!
          const decision = decisions[i]!
          events.push(eventOf(
            principal.workspaceId,
            namespaceIds[i]!,
            request.identifier,
            window,
            decision,
            override,
            {
              source: "multiLimit",
              time: now,
              started,
              detail: detailOf(request.meta, request.resources)
            }
          ))
          const { overrideId, success, ...counts } = answerOf(decision, window.limit, override)
          return {
            namespace: request.namespaceId ?? request.namespace ?? DEFAULT_NAMESPACE,
            identifier: request.identifier,
            ...counts,
            passed: success,
            ...(overrideId !== undefined ? { overrideId } : {})
          }
        })
        return recorded(events, { passed: limits.every((limit) => limit.passed), limits })
      }
      // `async` (a request's or an override's) is ignored: every item is decided from its exact
      // window, as all-or-none needs the windows themselves, and so an item is decided alike in
      // both modes.
      const windowsOf = targets.map(({ window }) => window)
      return Decision.andThen(atomic ? windows.takeAll(windowsOf, now) : takeEach(windowsOf, now, []), answer)
    }

    /** Takes each window on its own, in order (as as many `limit` calls would): what each decided. */
    const takeEach = (
      all: ReadonlyArray<WindowRequest>,
      now: number,
      decided: ReadonlyArray<WindowDecision>
    ): Decision.Turn<ReadonlyArray<WindowDecision>, StorageError | Busy> =>
      decided.length === all.length
        ? Exit.succeed(decided)
        : Decision.andThen(
          windows.takeAll([all[decided.length]!], now),
          ([decision]) => takeEach(all, now, [...decided, decision!])
        )

    const answerOf = (decision: WindowDecision, limit: number, override: Override | undefined): LimitResponse => ({
      success: decision.success,
      limit,
      remaining: decision.remaining,
      reset: validReset(decision.reset),
      ...(override !== undefined ? { overrideId: override.id } : {})
    })

    /**
     * Decides an `async` limit (an override's, or a request's without one) from this process's
     * view of its window, then adds what it took to the shared window (or only reads it, when
     * refused) and raises the view to what all servers took.
     */
    const decideNearby = (window: WindowRequest, now: number): Exit.Exit<WindowDecision, Busy> => {
      const taken = Windows.takeAllFrom(nearby, [window], now)
      if (!Array.isArray(taken)) return Exit.fail(taken as Busy)
      const decision = taken[0]!
      Effect.runFork(
        Effect.suspend(() =>
          windows.takeAll([{
            ...window,
            limit: Number.MAX_SAFE_INTEGER,
            cost: decision.success ? window.cost : 0
          }], now)
        ).pipe(
          Effect.map(([shared]) =>
            nearby.catchUp(window.key, now, Number.MAX_SAFE_INTEGER - shared!.remaining, window.duration, window.owner)
          ),
          Effect.ignore
        )
      )
      return Exit.succeed(decision)
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
      const started = performance.now()
      const resolved: Array<Resolved> = []
      for (const request of requests) {
        const found = namespaces.named(workspaceId, request.name, allowed)
        if (!Option.isOption(found)) return found
        const target = targetOf(workspaceId, found.value, request.identifier, request, request.cost)
        if (target instanceof Missing) return target
        // Field by field: a spread costs every verification with limits an object's copy.
        resolved.push({ override: target.override, window: target.window, request, namespaceId: found.value.id })
      }
      return Decision.andThen(
        windows.takeAll(resolved.map((r) => r.window), now),
        (decisions) => {
          const at = { source: "verifyKey" as const, time: now, started }
          const events = resolved.map(({ namespaceId, override, request, window }, i) =>
            eventOf(workspaceId, namespaceId, request.identifier, window, decisions[i]!, override, at)
          )
          return recorded(events, takenOf(resolved, decisions, now))
        }
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
          id: request.id,
          name: request.name,
          limit: window.limit,
          duration: window.duration,
          autoApply: request.autoApply,
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

    return { limit, multiLimit, decideTakeAll } as const
  })
}) {}

const NOTHING_TAKEN = Exit.succeed<Taken>({ allowed: true, results: [], refund: Exit.succeed([]) })

type LimitError = ValidationError | NotFound | InsufficientPermissions | StorageError | Busy
