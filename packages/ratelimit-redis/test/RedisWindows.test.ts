// Rate-limit windows in Redis: the same answers as the windows of a process on any sequence of
// requests, several limits taken together or not at all, exact under concurrency from several
// servers, and what happens when Redis goes away.
import { describe, expect, it } from "@effect/vitest"
import * as Windows from "@keymeter/core/Windows"
import { RedisWindows } from "@keymeter/ratelimit-redis"
import { Ports, RedisTestServer } from "@keymeter/testing"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import { type ChildProcess, spawn } from "node:child_process"
import { createServer } from "node:net"

const skip = RedisTestServer.skip()

const windows = (options: Partial<RedisWindows.Options> = {}) =>
  RedisWindows.make({ url: RedisTestServer.url!, prefix: RedisTestServer.freshPrefix(), ...options })

/** A Redis server of the test's own, stopped with the scope. */
const ownRedis = Effect.acquireRelease(
  Effect.promise(async () => {
    const port = await Ports.freePort()
    const child: ChildProcess = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", ""], {
      stdio: "ignore"
    })
    for (let i = 0; i < 100; i++) {
      const up = await new Promise<boolean>((resolve) => {
        const probe = createServer().once("error", () => resolve(true)).listen(port, "127.0.0.1", () => {
          probe.close(() => resolve(false))
        })
      })
      if (up) break
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    return { url: `redis://127.0.0.1:${port}/0`, child }
  }),
  ({ child }) => Effect.sync(() => child.kill("SIGKILL"))
)

/** One step of a trace: after `dt` ms, `cost` from window `key` under `limit` per `duration`. */
const step = FastCheck.record({
  dt: FastCheck.oneof(FastCheck.constant(0), FastCheck.integer({ min: 0, max: 400 })),
  key: FastCheck.constantFrom("a", "b"),
  limit: FastCheck.integer({ min: 0, max: 6 }),
  duration: FastCheck.constantFrom(500, 1_000),
  cost: FastCheck.integer({ min: 0, max: 3 })
})

describe.skipIf(skip !== undefined)("Redis windows", () => {
  it.scopedLive("answer every sequence of requests exactly as the windows of a process do", () =>
    Effect.promise(() =>
      FastCheck.assert(
        FastCheck.asyncProperty(FastCheck.array(step, { minLength: 1, maxLength: 40 }), (steps) =>
          Effect.runPromise(Effect.scoped(Effect.gen(function*() {
            const redis = yield* windows()
            const local = Windows.makeLocal()
            let now = 1_800_000_000_000
            for (const { cost, dt, duration, key, limit } of steps) {
              now += dt
              const request = [{ key, owner: "ws", limit, duration, cost }]
              const want = yield* local.takeAll(request, now)
              const got = yield* redis.takeAll(request, now)
              expect(got, JSON.stringify({ now, key, limit, duration, cost })).toEqual(want)
            }
          })))),
        { numRuns: 40 }
      )
    ))

  it.scopedLive("takes windows of a year and of 2^53-1 ms as the windows of a process do", () =>
    Effect.gen(function*() {
      const redis = yield* windows()
      const local = Windows.makeLocal()
      const now = 1_800_000_000_000
      for (const duration of [365 * 86_400_000, Number.MAX_SAFE_INTEGER]) {
        for (let i = 0; i < 3; i++) {
          const request = [{ key: `long_${duration}`, owner: "ws", limit: 2, duration, cost: 1 }]
          expect(yield* redis.takeAll(request, now + i)).toEqual(yield* local.takeAll(request, now + i))
        }
      }
    }))

  it.scopedLive("takes several limits together or not at all, and gives them back", () =>
    Effect.gen(function*() {
      const redis = yield* windows()
      const now = 1_800_000_000_000
      const both = (cost: number) => [
        { key: "minute", owner: "ws", limit: 10, duration: 60_000, cost },
        { key: "second", owner: "ws", limit: 3, duration: 1_000, cost }
      ]
      expect(yield* redis.takeAll(both(3), now)).toEqual([
        { success: true, remaining: 7, reset: now + 60_000 },
        { success: true, remaining: 0, reset: now + 1_000 }
      ])
      // The second is full: nothing is taken from the first either.
      expect(yield* redis.takeAll(both(1), now + 1)).toEqual([
        { success: true, remaining: 7, reset: now + 60_000 },
        { success: false, remaining: 0, reset: now + 1_000 }
      ])
      yield* redis.refundAll([{ key: "minute", cost: 3 }, { key: "second", cost: 3 }], now)
      expect(yield* redis.takeAll(both(1), now + 2)).toEqual([
        { success: true, remaining: 9, reset: now + 2 + 60_000 },
        { success: true, remaining: 2, reset: now + 2 + 1_000 }
      ])
    }))

  it.scopedLive("admits exactly the limit when three servers take at once", () =>
    Effect.gen(function*() {
      const prefix = RedisTestServer.freshPrefix()
      // Commands wait up to 10 s, not the default second: 300 at once, while CI starts every
      // package's suites on two cores, once took longer (a timeout is not what this test is about).
      const servers = yield* Effect.all(
        Array.from({ length: 3 }, () => RedisWindows.make({ url: RedisTestServer.url!, prefix, timeoutMs: 10_000 }))
      )
      const now = Date.now()
      const decisions = yield* Effect.all(
        Array.from({ length: 300 }, (_, i) =>
          servers[i % 3]!.takeAll(
            [{ key: "user_1", owner: "ws", limit: 100, duration: 60_000, cost: 1 }],
            now + (i % 7)
          )),
        { concurrency: "unbounded" }
      )
      expect(decisions.filter(([d]) => d!.success)).toHaveLength(100)
    }))

  it.scopedLive("when Redis goes away: fails closed by default, or decides alone with fallback local", () =>
    Effect.gen(function*() {
      const own = yield* ownRedis
      const closed = yield* RedisWindows.make({ url: own.url })
      const alone = yield* RedisWindows.make({ url: own.url, fallback: "local" })
      const request = [{ key: "k", owner: "ws", limit: 1, duration: 60_000, cost: 1 }]
      expect((yield* closed.takeAll(request, 1_000))[0]!.success).toBe(true)
      own.child.kill("SIGKILL")
      yield* Effect.sleep(200)
      const refused = yield* Effect.exit(closed.takeAll(request, 1_001))
      expect(Exit.isFailure(refused)).toBe(true)
      if (Exit.isFailure(refused)) expect(JSON.stringify(refused.cause)).toMatch(/StorageError/)
      // Alone, this server's own windows decide: its first request passes, its second does not.
      expect((yield* alone.takeAll(request, 1_002))[0]!.success).toBe(true)
      expect((yield* alone.takeAll(request, 1_003))[0]!.success).toBe(false)
    }))

  it.scopedLive("refuses to start when Redis cannot be reached, naming it without its password", () =>
    Effect.gen(function*() {
      const port = yield* Effect.promise(Ports.freePort)
      const error = yield* Effect.flip(RedisWindows.make({ url: `redis://:hunter2@127.0.0.1:${port}/0` }))
      expect(error.message).toMatch(new RegExp(`^Redis is unreachable at redis://127\\.0\\.0\\.1:${port}: `))
      expect(error.message).not.toContain("hunter2")
    }))
})
