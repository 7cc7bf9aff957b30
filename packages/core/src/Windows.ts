/**
 * Where rate-limit windows live (a port): in this process (the default, {@link layerLocal}), or
 * shared by every server that points at the same store (the Redis adapter). Both keep the same
 * sliding-window log: the accepted requests of the last `duration` ms, coalesced per millisecond;
 * a request is accepted when they leave room for its cost (a zero cost takes nothing and passes
 * when a cost of 1 would, so `limit: 0` refuses everything).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { StorageError } from "./Errors.js"
import type { Decision } from "./internal/slidingWindow.js"
import { SlidingWindows } from "./internal/slidingWindow.js"

export type { Decision } from "./internal/slidingWindow.js"

/** One window to take from. */
export interface WindowRequest {
  /** The window's key: namespace id and identifier. */
  readonly key: string
  readonly limit: number
  readonly duration: number
  readonly cost: number
}

/** The sync windows of this process, for the paths that decide without I/O. */
export interface LocalWindows {
  readonly take: (key: string, now: number, limit: number, duration: number, cost: number) => Decision
  readonly refund: (key: string, now: number, cost: number) => void
}

export class Windows extends Context.Tag("@keymeter/core/Windows")<Windows, {
  /** The windows when they are in this process (decided without I/O); undefined when shared. */
  readonly local: LocalWindows | undefined
  /**
   * Takes each request's cost from its window at `now`, all or none: when any would be refused,
   * nothing is taken, and each decision says how its window stands.
   */
  readonly takeAll: (
    requests: ReadonlyArray<WindowRequest>,
    now: number
  ) => Effect.Effect<ReadonlyArray<Decision>, StorageError>
  /** Gives back what a `takeAll` at `now` took (a call refused afterwards for another reason). */
  readonly refundAll: (
    taken: ReadonlyArray<{ readonly key: string; readonly cost: number }>,
    now: number
  ) => Effect.Effect<void, StorageError>
}>() {}

/**
 * Takes each request's cost from this process's windows at `now`, all or none: when any is
 * refused, what the others took is given back and their decisions say how their windows stand.
 */
export const takeAllLocal = (
  windows: LocalWindows,
  requests: ReadonlyArray<WindowRequest>,
  now: number
): ReadonlyArray<Decision> => {
  const decisions = requests.map((r) => windows.take(r.key, now, r.limit, r.duration, r.cost))
  if (decisions.every((d) => d.success)) return decisions
  return decisions.map((decision, i) => {
    if (!decision.success) return decision
    const request = requests[i]!
    windows.refund(request.key, now, request.cost)
    return { ...decision, remaining: Math.min(request.limit, decision.remaining + request.cost) }
  })
}

/** Windows of this process, all or none over several. */
export const makeLocal = (windows: SlidingWindows = new SlidingWindows()): Windows["Type"] => {
  return {
    local: windows,
    takeAll: (requests, now) => Effect.sync(() => takeAllLocal(windows, requests, now)),
    refundAll: (taken, now) =>
      Effect.sync(() => {
        for (const { cost, key } of taken) windows.refund(key, now, cost)
      })
  }
}

/** The windows in this process (the default). */
export const layerLocal: Layer.Layer<Windows> = Layer.sync(Windows, () => makeLocal())
