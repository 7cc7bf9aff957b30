/**
 * Where rate-limit windows live (a port): in this process (the default, {@link layerLocal}), or
 * shared by every server that points at the same store (the Redis adapter). Both keep the same
 * sliding-window log: the accepted requests of the last `duration` ms, coalesced per millisecond;
 * a request is accepted when they leave room for its cost (a zero cost takes nothing and passes
 * when a cost of 1 would, so `limit: 0` refuses everything).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import type { StorageError } from "./Errors.js"
import { Busy } from "./Errors.js"
import * as CompositeKey from "./internal/CompositeKey.js"
import type { Decision } from "./internal/slidingWindow.js"
import type { Capacity } from "./internal/slidingWindow.js"
import { SlidingWindows } from "./internal/slidingWindow.js"

export type { Capacity, Decision } from "./internal/slidingWindow.js"

/** One window to take from. */
export interface WindowRequest {
  /** The window's key: {@link keyOf} its namespace and identifier. */
  readonly key: string
  /** The workspace whose window it is: windows in this process are counted per workspace. */
  readonly owner: string
  readonly limit: number
  readonly duration: number
  readonly cost: number
}

export class Windows extends Context.Tag("@keymeter/core/Windows")<Windows, {
  /** Whether other processes take from the same windows (then a take costs I/O). */
  readonly shared: boolean
  /**
   * Takes each request's cost from its window at `now`, all or none: when any would be refused,
   * nothing is taken, and each decision says how its window stands. A decision (see the
   * `Decision` module): windows in this process are taken when it is called (an Exit), shared
   * ones when its effect runs. Fails with Busy when a new window would pass the live windows'
   * caps ({@link MaxWindows}).
   */
  readonly takeAll: (
    requests: ReadonlyArray<WindowRequest>,
    now: number
  ) => Effect.Effect<ReadonlyArray<Decision>, StorageError | Busy>
  /** Gives back what a `takeAll` at `now` took (a call refused afterwards for another reason). */
  readonly refundAll: (
    taken: ReadonlyArray<{ readonly key: string; readonly cost: number }>,
    now: number
  ) => Effect.Effect<void, StorageError>
}>() {}

/** The key of the window of `identifier` in the namespace `namespaceId`. */
export const keyOf = (namespaceId: string, identifier: string): string => CompositeKey.make(namespaceId, identifier)

/** How a window stands once `cost` it took is given back, under `limit` (a decision, or an answer made of one). */
export const givenBack = <D extends { readonly remaining: number }>(decision: D, limit: number, cost: number): D => ({
  ...decision,
  remaining: Math.min(limit, decision.remaining + cost)
})

/**
 * Live rate-limit windows this process keeps at most, in all and per workspace (about 600 bytes
 * each, and 16 bytes per request a window counts, up to about 2,000 entries): a new window past
 * either cap fails with Busy until windows expire. Windows shared through Redis live there.
 */
export class MaxWindows extends Context.Reference<MaxWindows>()("@keymeter/core/Windows/MaxWindows", {
  defaultValue: (): Capacity => ({ total: 1_000_000, perOwner: 100_000 })
}) {}

/**
 * Takes each request's cost from `windows` at `now`, all or none: when any is refused, what the
 * others took is given back and their decisions say how their windows stand. Busy, taking
 * nothing, when a new window has no room.
 */
export const takeAllFrom = (
  windows: SlidingWindows,
  requests: ReadonlyArray<WindowRequest>,
  now: number
): ReadonlyArray<Decision> | Busy => {
  for (const r of requests) {
    if (!windows.admits(r.key, r.owner, now)) {
      return new Busy({
        message: `Too many rate-limit windows are live (at most ${windows.capacity.total} in all, ` +
          `${windows.capacity.perOwner} per workspace); retry once some have expired`
      })
    }
  }
  const decisions: Array<Decision> = []
  let allowed = true
  for (const r of requests) {
    const decision = windows.take(r.key, now, r.limit, r.duration, r.cost, r.owner)
    if (!decision.success) allowed = false
    decisions.push(decision)
  }
  if (allowed) return decisions
  return decisions.map((decision, i) => {
    if (!decision.success) return decision
    const request = requests[i]!
    windows.refund(request.key, now, request.cost)
    return givenBack(decision, request.limit, request.cost)
  })
}

/** Windows of this process, all or none over several, at most `capacity` of them live. */
export const makeLocal = (capacity?: Capacity): Windows["Type"] => {
  const windows = new SlidingWindows(capacity)
  return {
    shared: false,
    takeAll: (requests, now) => {
      const taken = takeAllFrom(windows, requests, now)
      return taken instanceof Busy ? Exit.fail(taken) : Exit.succeed(taken)
    },
    refundAll: (taken, now) =>
      Effect.sync(() => {
        for (const { cost, key } of taken) windows.refund(key, now, cost)
      })
  }
}

/** The windows in this process (the default). */
export const layerLocal: Layer.Layer<Windows> = Layer.effect(
  Windows,
  Effect.map(MaxWindows, makeLocal)
)
