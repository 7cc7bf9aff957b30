import { describe, expect, it } from "@effect/vitest"
import * as Foreground from "@keymeter/core/Foreground"
import * as Effect from "effect/Effect"
import { giveWay, isFree, stepMs } from "../src/internal/Lane.js"

const sleep = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

/**
 * Whether a look after a pause finds the loop free, in one of a few looks (a machine shared with
 * other work may stop this process for a millisecond, which a look takes for other work).
 */
const looksFree = Effect.gen(function*() {
  for (let look = 0; look < 5; look++) {
    yield* sleep(60)
    if (yield* Effect.promise(isFree)) return true
  }
  return false
})

/** Other work on the loop: every turn, `ms` of it, until stopped. */
const busyLoop = (ms: number) => {
  let running = true
  const spin = () => {
    if (!running) return
    const until = performance.now() + ms
    while (performance.now() < until) {
      // busy
    }
    setImmediate(spin)
  }
  setImmediate(spin)
  return () => (running = false)
}

/** A hot path marking itself every turn of the loop with next to no work, until stopped. */
const hotPath = () => {
  let running = true
  const mark = () => {
    if (!running) return
    Foreground.mark(performance.now())
    setImmediate(mark)
  }
  setImmediate(mark)
  return () => (running = false)
}

/** Ms `giveWay(ran)` takes. */
const timedGiveWay = (ran: number) =>
  Effect.promise(async () => {
    const started = performance.now()
    await giveWay(ran)
    return performance.now() - started
  })

describe("Lane", () => {
  it.live("tells a free loop from a busy one by looking again when its last turn is stale", () =>
    Effect.gen(function*() {
      expect(yield* looksFree).toBe(true)
      const stop = busyLoop(4)
      yield* sleep(60)
      expect(yield* Effect.promise(isFree)).toBe(false)
      // A query's turns while the loop is busy keep it careful.
      for (let i = 0; i < 5; i++) yield* Effect.promise(() => giveWay(1))
      expect(yield* Effect.promise(isFree)).toBe(false)
      stop()
      // Once the other work is over, what the last turns saw is stale: the next query looks again.
      expect(yield* looksFree).toBe(true)
    }))

  it.live("waits after a slice while other work waits, and not once none does", () =>
    Effect.gen(function*() {
      // The lane sees a busy loop: other work of 4 ms a turn, through a few of a query's turns.
      const seeBusy = Effect.gen(function*() {
        const stop = busyLoop(4)
        yield* sleep(60)
        for (let i = 0; i < 5; i++) yield* Effect.promise(() => giveWay(1))
        return stop
      })
      let stop = yield* seeBusy
      // A slice of 10 ms owes 90 ms to the other work, which goes on: the query waits.
      expect(yield* timedGiveWay(10)).toBeGreaterThanOrEqual(15)
      stop()
      // Other work goes on in small pieces (0.3 ms a turn): the query still waits.
      stop = yield* seeBusy
      stop()
      const stopLight = busyLoop(0.3)
      expect(yield* timedGiveWay(10)).toBeGreaterThanOrEqual(15)
      stopLight()
      // No other work waits now, though the lane last saw a busy loop: a slice of 40 ms (owing
      // 360 ms while others wait) is followed by a turn, not by the wait.
      stop = yield* seeBusy
      stop()
      expect(yield* timedGiveWay(40)).toBeLessThan(60)
    }))

  it.live("gives two queries one slice per turn of the loop, not both in one", () =>
    Effect.gen(function*() {
      yield* looksFree
      // Turns of the loop, counted by an immediate that queues itself again each turn.
      let turns = 0
      let counting = true
      const count = () => {
        turns++
        if (counting) setImmediate(count)
      }
      setImmediate(count)
      const resumedAt: Array<number> = []
      yield* Effect.promise(() => Promise.all([0, 1, 2].map(() => giveWay(0).then(() => resumedAt.push(turns)))))
      counting = false
      expect(resumedAt).toHaveLength(3)
      expect(new Set(resumedAt).size).toBe(3)
    }))

  it.live("counts the loop as busy while the hot paths run, however little work each brings", () =>
    Effect.gen(function*() {
      expect(yield* looksFree).toBe(true)
      const stop = hotPath()
      yield* sleep(60)
      // Turns bring less other work than a busy loop's, yet the lane steps aside: short steps, no
      // whole reads, and a slice's debt kept (not forgiven by the turns that find nothing waiting).
      expect(yield* Effect.promise(isFree)).toBe(false)
      expect(stepMs()).toBe(1)
      expect(yield* timedGiveWay(10)).toBeGreaterThanOrEqual(15)
      expect(yield* Effect.promise(isFree)).toBe(false)
      stop()
      // Once they stop, the loop is free again.
      expect(yield* looksFree).toBe(true)
      expect(stepMs()).toBeGreaterThan(1)
    }))
})
