import { describe, expect, it } from "@effect/vitest"
import { StorageError } from "@keymeter/core/Errors"
import * as GroupCommit from "@keymeter/core/GroupCommit"
import type { Verification } from "@keymeter/core/Verification"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Scope from "effect/Scope"

const events = (keyId: string, n = 1): Array<Verification> =>
  Array.from(
    { length: n },
    () => ({ time: 0, workspaceId: "ws", apiId: "a", keyId, identity: undefined, outcome: "valid", tags: [] })
  )

/** A writer whose first write waits for `release`, recording every batch it is given. */
const blockedWriter = Effect.gen(function*() {
  const release = yield* Deferred.make<void>()
  const started = yield* Deferred.make<void>()
  const batches: Array<Array<string>> = []
  const write = (batch: ReadonlyArray<Verification>) =>
    Effect.gen(function*() {
      batches.push(batch.map((e) => e.keyId))
      yield* Deferred.succeed(started, undefined)
      yield* Deferred.await(release)
      if (batch.some((e) => e.keyId === "poison")) return yield* new StorageError({ message: "poisoned" })
    })
  return { release, started, batches, write }
})

describe("GroupCommit", () => {
  it.scoped("writes the calls queued behind a write together, and answers each once stored", () =>
    Effect.gen(function*() {
      const w = yield* blockedWriter
      const offer = yield* GroupCommit.make({ write: w.write, maxEvents: 100 })
      const first = yield* Effect.fork(offer(events("a")))
      yield* Deferred.await(w.started)
      const rest = yield* Effect.fork(
        Effect.all(["b", "c", "d"].map((k) => offer(events(k))), { concurrency: "unbounded" })
      )
      yield* Effect.yieldNow()
      expect(first.unsafePoll()).toBeNull()
      yield* Deferred.succeed(w.release, undefined)
      yield* Fiber.join(first)
      yield* Fiber.join(rest)
      expect(w.batches).toEqual([["a"], ["b", "c", "d"]])
    }))

  it.scoped("calls arriving while a synchronous write blocks the event loop share the next write", () =>
    Effect.gen(function*() {
      // SQLite's writes block the loop; the calls that arrived meanwhile (here timers, in the
      // server request bodies) must be read before the writer takes its next batch.
      const batches: Array<number> = []
      const offer = yield* GroupCommit.make({
        write: (batch) =>
          Effect.sync(() => {
            batches.push(batch.length)
            const until = Date.now() + 15
            while (Date.now() < until) {
              // blocks, as a synchronous commit does
            }
          }),
        maxEvents: 1_000
      })
      const calls = Array.from({ length: 10 }, (_, i) =>
        Effect.async<void, StorageError>((resume) => {
          const timer = setTimeout(() =>
            Effect.runFork(
              Effect.exit(offer(events(`k${i}`))).pipe(Effect.flatMap((exit) => Effect.sync(() => resume(exit))))
            ), 1)
          return Effect.sync(() => clearTimeout(timer))
        }))
      yield* Effect.all(calls, { concurrency: "unbounded" })
      expect(batches.reduce((a, b) => a + b, 0)).toBe(10)
      expect(batches.length).toBeLessThanOrEqual(2)
    }))

  it.scoped("fails every call of a failed write and none of the next", () =>
    Effect.gen(function*() {
      const w = yield* blockedWriter
      const offer = yield* GroupCommit.make({ write: w.write, maxEvents: 100 })
      const first = yield* Effect.fork(offer(events("a")))
      yield* Deferred.await(w.started)
      const together = yield* Effect.fork(
        Effect.all([offer(events("b")), offer(events("poison"))].map(Effect.exit), { concurrency: "unbounded" })
      )
      yield* Effect.yieldNow()
      yield* Deferred.succeed(w.release, undefined)
      yield* Fiber.join(first)
      const [b, poison] = yield* Fiber.join(together)
      expect([Exit.isFailure(b), Exit.isFailure(poison)]).toEqual([true, true])
      yield* offer(events("e"))
      expect(w.batches).toEqual([["a"], ["b", "poison"], ["e"]])
    }))

  it.scoped("refuses at once beyond maxBuffered waiting events, and takes calls again once written", () =>
    Effect.gen(function*() {
      const w = yield* blockedWriter
      const offer = yield* GroupCommit.make({ write: w.write, maxEvents: 10, maxBuffered: 10 })
      const first = yield* Effect.fork(offer(events("a", 6)))
      yield* Deferred.await(w.started)
      const refused = yield* Effect.exit(offer(events("b", 5)))
      expect(Exit.isFailure(refused) && JSON.stringify(refused.cause)).toMatch(/not keeping up: 6 events/)
      const fits = yield* Effect.fork(offer(events("c", 4)))
      yield* Deferred.succeed(w.release, undefined)
      yield* Fiber.join(first)
      yield* Fiber.join(fits)
      yield* offer(events("d", 10))
      expect(w.batches.map((b) => b.length)).toEqual([6, 4, 10])
    }))

  it.effect("fails the calls still queued when its scope closes", () =>
    Effect.gen(function*() {
      const w = yield* blockedWriter
      const scope = yield* Scope.make()
      const offer = yield* Scope.extend(GroupCommit.make({ write: w.write, maxEvents: 1 }), scope)
      const first = yield* Effect.fork(offer(events("a")))
      yield* Deferred.await(w.started)
      const queued = yield* Effect.fork(offer(events("b")))
      yield* Effect.yieldNow()
      yield* Effect.fork(Scope.close(scope, Exit.void))
      yield* Effect.yieldNow()
      const exit = yield* Fiber.await(queued)
      expect(Exit.isFailure(exit) && JSON.stringify(exit.cause)).toMatch(/shutting down/)
      // The taken batch is still written and answered.
      yield* Deferred.succeed(w.release, undefined)
      expect(Exit.isSuccess(yield* Fiber.await(first))).toBe(true)
    }))
})
