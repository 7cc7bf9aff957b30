// The windows of this process: memory per window bounded for large limits without ever admitting
// more than the limit, exact for small limits, and the live windows capped in all and per
// workspace.
import { describe, expect, it } from "@effect/vitest"
import * as Windows from "@keymeter/core/Windows"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import { MAX_ENTRIES, SlidingWindows } from "../src/internal/slidingWindow.js"

/** The exact sliding window: every accepted request kept. */
const exactWindow = () => {
  const log: Array<{ time: number; cost: number }> = []
  return (now: number, limit: number, duration: number, cost: number) => {
    const used = log.filter((e) => e.time > now - duration).reduce((sum, e) => sum + e.cost, 0)
    const success = limit > 0 && used + Math.max(1, cost) <= limit
    if (success && cost > 0) log.push({ time: now, cost })
    return success
  }
}

describe("Windows", () => {
  it("keeps a window's memory bounded under a large limit, and never admits more than the limit", () => {
    const windows = new SlidingWindows()
    const duration = 60_000
    const limit = 50_000
    const accepted: Array<number> = []
    // A request every 0.5 ms on average for four windows' length: 480,000 requests at distinct times.
    for (let i = 0, now = 1_000_000; i < 480_000; i++, now += i % 2) {
      if (windows.take("k", now, limit, duration, 1).success) accepted.push(now)
    }
    const log = (windows as unknown as { logs: Map<string, { times: Array<number>; head: number }> }).logs.get("k")!
    expect(log.times.length - log.head).toBeLessThanOrEqual(2 * MAX_ENTRIES + 1)
    // No window of `duration` holds more than the limit.
    let from = 0
    for (let to = 0; to < accepted.length; to++) {
      while (accepted[from]! <= accepted[to]! - duration) from++
      expect(to - from + 1).toBeLessThanOrEqual(limit)
    }
    // And it is not far from exact: at least 90 % of what the limit allows was admitted.
    expect(accepted.length).toBeGreaterThan(0.9 * limit * 4)
  })

  it("answers exactly like the full log for limits up to MAX_ENTRIES", () =>
    FastCheck.assert(
      FastCheck.property(
        FastCheck.array(
          FastCheck.record({
            dt: FastCheck.integer({ min: 0, max: 8 }),
            cost: FastCheck.integer({ min: 0, max: 3 })
          }),
          { minLength: 1_000, maxLength: 4_000 }
        ),
        FastCheck.integer({ min: 1, max: MAX_ENTRIES }),
        (steps, limit) => {
          const windows = new SlidingWindows()
          const exact = exactWindow()
          let now = 0
          for (const { cost, dt } of steps) {
            now += dt
            expect(windows.take("k", now, limit, 5_000, cost).success).toBe(exact(now, limit, 5_000, cost))
          }
        }
      ),
      { numRuns: 30 }
    ))

  it.effect("caps live windows per workspace and in all; expired ones make room again", () =>
    Effect.gen(function*() {
      const windows = Windows.makeLocal({ total: 3, perOwner: 2 })
      const take = (key: string, owner: string, now: number) =>
        Effect.exit(windows.takeAll([{ key, owner, limit: 5, duration: 1_000, cost: 1 }], now))
      expect(Exit.isSuccess(yield* take("a1", "ws_a", 0))).toBe(true)
      expect(Exit.isSuccess(yield* take("a2", "ws_a", 0))).toBe(true)
      const full = yield* take("a3", "ws_a", 0)
      const error = Exit.isFailure(full) ? Cause.squash(full.cause) as { _tag: string; message: string } : undefined
      expect([error?._tag, error?.message]).toEqual([
        "Busy",
        expect.stringMatching(/at most 3 in all, 2 per workspace/)
      ])
      // A live window is still served; another workspace has room until the total is reached.
      expect(Exit.isSuccess(yield* take("a1", "ws_a", 1))).toBe(true)
      expect(Exit.isSuccess(yield* take("b1", "ws_b", 1))).toBe(true)
      expect(Exit.isFailure(yield* take("b2", "ws_b", 1))).toBe(true)
      // Once the windows have expired, they are swept to make room.
      expect(Exit.isSuccess(yield* take("a3", "ws_a", 5_000))).toBe(true)
      expect(Exit.isSuccess(yield* take("b2", "ws_b", 5_000))).toBe(true)
    }))
})
