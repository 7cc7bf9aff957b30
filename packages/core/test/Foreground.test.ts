import { describe, expect, it } from "@effect/vitest"
import * as Foreground from "@keymeter/core/Foreground"
import * as Effect from "effect/Effect"
import { Worker } from "node:worker_threads"

describe("Foreground", () => {
  it.effect("keeps marks in shared memory as epoch ms, which another thread's clock reads", () =>
    Effect.gen(function*() {
      const cell = new Float64Array(Foreground.shared())
      Foreground.mark(performance.now())
      expect(Math.abs(cell[0]! - Date.now())).toBeLessThan(50)
      expect(Foreground.idleFor()).toBeLessThan(50)
      // A thread of its own origin reads the cell against its clock: ms since the mark, not a
      // difference of two origins.
      const idle = yield* Effect.promise(() =>
        new Promise<number>((resolve, reject) => {
          const worker = new Worker(
            `const { workerData, parentPort } = require("node:worker_threads")
             const cell = new Float64Array(workerData)
             parentPort.postMessage(performance.timeOrigin + performance.now() - cell[0])`,
            { eval: true, workerData: Foreground.shared() }
          )
          worker.once("message", (ms: number) => void worker.terminate().then(() => resolve(ms)))
          worker.once("error", reject)
        })
      )
      expect(idle).toBeGreaterThanOrEqual(0)
      expect(idle).toBeLessThan(5_000)
    }))

  it.effect("follows another thread's cell: its marks tell this thread's idleness", () =>
    Effect.sync(() => {
      const mine = Foreground.shared()
      const theirs = new Float64Array(new SharedArrayBuffer(8))
      theirs[0] = Date.now() - 5_000
      Foreground.follow(theirs.buffer as SharedArrayBuffer)
      try {
        expect(Foreground.idleFor()).toBeGreaterThan(4_900)
        expect(Foreground.idleFor()).toBeLessThan(6_000)
        Foreground.mark(performance.now())
        expect(Math.abs(theirs[0]! - Date.now())).toBeLessThan(50)
      } finally {
        Foreground.follow(mine)
      }
      expect(Foreground.shared()).toBe(mine)
    }))
})
