import { describe, expect, it } from "@effect/vitest"
import { SlidingWindows } from "../src/internal/slidingWindow.js"

const MINUTE = 60_000

describe("SlidingWindows", () => {
  it("takes up to the limit within a window, and again as old requests leave it", () => {
    const windows = new SlidingWindows()
    expect(windows.take("k", 1000, 3, MINUTE, 2)).toEqual({ success: true, remaining: 1, reset: 1000 + MINUTE })
    expect(windows.take("k", 2000, 3, MINUTE, 1)).toEqual({ success: true, remaining: 0, reset: 1000 + MINUTE })
    expect(windows.take("k", 3000, 3, MINUTE, 1)).toEqual({ success: false, remaining: 0, reset: 1000 + MINUTE })
    // At 1000 + MINUTE the first request (cost 2) leaves; the one at 2000 stays.
    expect(windows.take("k", 1000 + MINUTE, 3, MINUTE, 2)).toEqual({
      success: true,
      remaining: 0,
      reset: 2000 + MINUTE
    })
    // Other keys have windows of their own.
    expect(windows.take("other", 3000, 3, MINUTE, 1).remaining).toBe(2)
  })

  it("refuses everything at limit 0; a zero cost takes nothing and succeeds when a cost of 1 would", () => {
    const windows = new SlidingWindows()
    expect(windows.take("k", 0, 0, MINUTE, 0).success).toBe(false)
    expect(windows.take("k", 0, 1, MINUTE, 0)).toMatchObject({ success: true, remaining: 1 })
    expect(windows.take("k", 0, 1, MINUTE, 1)).toMatchObject({ success: true, remaining: 0 })
    expect(windows.take("k", 1, 1, MINUTE, 0)).toMatchObject({ success: false, remaining: 0 })
  })

  it("gives back what a take at the same millisecond took, and nothing older", () => {
    const windows = new SlidingWindows()
    windows.take("k", 1000, 5, MINUTE, 1)
    windows.take("k", 2000, 5, MINUTE, 2)
    windows.take("k", 2000, 5, MINUTE, 1) // coalesced with the entry at 2000
    windows.refund("k", 2000, 2)
    expect(windows.take("k", 2000, 5, MINUTE, 0).remaining).toBe(3)
    // The entry at 2000 holds 1 now: a larger refund gives back only that.
    windows.refund("k", 2000, 10)
    expect(windows.take("k", 2000, 5, MINUTE, 0).remaining).toBe(4)
    // A refund for another time (the call's own time is gone) changes nothing.
    windows.refund("k", 1000, 1)
    expect(windows.take("k", 2500, 5, MINUTE, 0).remaining).toBe(4)
  })

  it("catches up to what other servers took, never down", () => {
    const windows = new SlidingWindows()
    windows.take("k", 1000, 10, MINUTE, 2)
    windows.catchUp("k", 1500, 7, MINUTE)
    expect(windows.take("k", 1500, 10, MINUTE, 0).remaining).toBe(3)
    windows.catchUp("k", 1600, 4, MINUTE)
    expect(windows.take("k", 1600, 10, MINUTE, 0).remaining).toBe(3)
    // What was caught up at 1500 leaves the window with it.
    expect(windows.take("k", 1500 + MINUTE, 10, MINUTE, 0).remaining).toBe(10)
    // A key first seen through catchUp starts there.
    windows.catchUp("new", 0, 9, MINUTE)
    expect(windows.take("new", 0, 10, MINUTE, 2).success).toBe(false)
  })

  it("forgets windows with nothing left that counts", () => {
    const windows = new SlidingWindows()
    windows.take("a", 0, 5, 1000, 1)
    windows.take("b", 0, 5, MINUTE, 1)
    windows.sweep(1000)
    expect(windows.size).toBe(1)
    windows.sweep(MINUTE)
    expect(windows.size).toBe(0)
  })
})
