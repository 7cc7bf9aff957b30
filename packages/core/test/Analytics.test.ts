// Analytics over the memory storage: answers (decided at once, as the engine answers from memory),
// and the answers remembered for a repeated query from its second asking (given without a read,
// shared and frozen) while nothing was stored, no verification waits to be stored, the hour of an
// open-ended query lasts, and the caller may read the api.
import { describe, expect, it } from "@effect/vitest"
import { Analytics, MaxReadsAtOnce, RememberedAnswers, stable } from "@keymeter/core/Analytics"
import { Api } from "@keymeter/core/Api"
import * as Auth from "@keymeter/core/Auth"
import * as Decision from "@keymeter/core/Decision"
import * as Keymeter from "@keymeter/core/Keymeter"
import { Recorder } from "@keymeter/core/Recorder"
import { Catalog, VerificationStore } from "@keymeter/core/Storage"
import * as Time from "@keymeter/core/Time"
import * as Verification from "@keymeter/core/Verification"
import { Verifications } from "@keymeter/core/Verifications"
import { Workspace } from "@keymeter/core/Workspace"
import { MemoryStorage } from "@keymeter/storage-memory"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"

const WS = "ws_analytics"
const admin = Auth.system(WS)
const NOW = Date.UTC(2026, 0, 15, 12, 30)

/** Reads of the store so far (each test's `setup` starts it at 0). */
let reads = 0

/** The memory storage, its reads counted. */
const CountedStorage = Layer.effect(
  VerificationStore,
  Effect.map(VerificationStore, (store) => ({
    ...store,
    aggregate: (q: Parameters<typeof store.aggregate>[0]) => {
      reads++
      return store.aggregate(q)
    }
  }))
).pipe(Layer.provideMerge(MemoryStorage.layer))

const Test = Keymeter.layer.pipe(Layer.provideMerge(CountedStorage))

const setup = Effect.gen(function*() {
  reads = 0
  const catalog = yield* Catalog
  yield* catalog.putWorkspace(new Workspace({ id: WS, name: "analytics" }))
  yield* catalog.putApi(new Api({ id: "api_a", workspaceId: WS, name: "a" }))
  yield* catalog.putApi(new Api({ id: "api_b", workspaceId: WS, name: "b" }))
  yield* TestClock.setTime(NOW)
  const analytics = yield* Analytics
  const verifications = yield* Verifications
  return {
    analytics,
    record: (keyId: string) =>
      verifications.record(admin, [{ apiId: "api_a", keyId, outcome: "valid", time: NOW - 1000 }])
  }
})

const query = { apiId: "api_a", groupBy: ["key"] }

/** The memory storage with reads that take `duration`: reads at work overlap. */
const slowStorage = (duration: Duration.DurationInput) =>
  Layer.effect(
    VerificationStore,
    Effect.map(VerificationStore, (store) => ({
      ...store,
      aggregate: (q: Parameters<typeof store.aggregate>[0]) =>
        Effect.zipRight(Effect.sleep(duration), store.aggregate(q))
    }))
  ).pipe(Layer.provideMerge(MemoryStorage.layer))

describe("Analytics", () => {
  it.effect("gives a repeated query's answer at once while the store holds what it held", () =>
    Effect.gen(function*() {
      const { analytics, record } = yield* setup
      yield* record("key_1")
      // Asked once: read, and not kept (nor frozen).
      const onceAnswer = yield* analytics.getVerifications(admin, query)
      expect(reads).toBe(1)
      expect(onceAnswer).toMatchObject([{ keyId: "key_1", total: 1 }])
      expect(Object.isFrozen(onceAnswer)).toBe(false)
      // Asked again: read, and kept from now on.
      const answer = yield* analytics.getVerifications(admin, query)
      expect(reads).toBe(2)
      expect(answer).toEqual(onceAnswer)
      // Shared with every caller of the same query: frozen.
      expect(Object.isFrozen(answer) && Object.isFrozen(answer[0])).toBe(true)
      const again = Decision.now(analytics.getVerifications(admin, query))
      expect(again).toEqual(Exit.succeed(answer))
      expect(reads).toBe(2)
      // Another query is read: decided at once, as the api is known by now and the engine answers
      // from memory.
      const other = Decision.now(analytics.getVerifications(admin, { apiId: "api_a", groupBy: ["day"] }))
      expect(Exit.isExit(other)).toBe(true)
      expect(reads).toBe(3)
      expect(yield* other).toMatchObject([{ total: 1 }])
      // Something stored since: read again, and counted; kept again at once (it was asked before).
      yield* record("key_2")
      expect((yield* analytics.getVerifications(admin, query)).map((d) => d.keyId)).toEqual(["key_1", "key_2"])
      expect(reads).toBe(4)
      yield* analytics.getVerifications(admin, query)
      expect(reads).toBe(4)
    }).pipe(Effect.provide(Test)))

  it.effect("reads again when a verification waits to be stored, or the hour of an open-ended query ends", () =>
    Effect.gen(function*() {
      const { analytics } = yield* setup
      const recorder = yield* Recorder
      yield* analytics.getVerifications(admin, query)
      yield* analytics.getVerifications(admin, query)
      yield* analytics.getVerifications(admin, query)
      expect(reads).toBe(2)
      yield* recorder.record(
        Verification.make({ time: NOW, workspaceId: WS, apiId: "api_a", keyId: "key_9", outcome: "valid" }),
        false
      )
      // Not decided at once: the read waits for the verification to be stored first.
      const pending = Decision.now(analytics.getVerifications(admin, query))
      expect(Exit.isExit(pending)).toBe(false)
      expect(yield* pending).toMatchObject([{ keyId: "key_9", total: 1 }])
      expect(reads).toBe(3)
      yield* analytics.getVerifications(admin, query)
      expect(reads).toBe(3)
      yield* TestClock.setTime(Time.truncateToHour(NOW) + Time.HOUR)
      yield* analytics.getVerifications(admin, query)
      expect(reads).toBe(4)
    }).pipe(Effect.provide(Test)))

  it.effect("checks the caller's permission on a remembered answer", () =>
    Effect.gen(function*() {
      const { analytics } = yield* setup
      yield* analytics.getVerifications(admin, query)
      yield* analytics.getVerifications(admin, query)
      const other = { workspaceId: WS, rootKeyId: "rk", permissions: ["api.api_b.read_api"] }
      const refused = Decision.now(analytics.getVerifications(other, query))
      expect((yield* Effect.flip(refused))._tag).toBe("InsufficientPermissions")
    }).pipe(Effect.provide(Test)))

  it.effect("knows a stable query by identity, and any other by what it holds at each asking", () =>
    Effect.gen(function*() {
      const { analytics, record } = yield* setup
      yield* record("key_1")
      // A caller's own object, changed between askings: each asking is answered for what it holds.
      const mutable: { apiId: string; groupBy: Array<string> } = { apiId: "api_a", groupBy: ["key"] }
      yield* analytics.getVerifications(admin, mutable)
      expect(yield* analytics.getVerifications(admin, mutable)).toMatchObject([{ keyId: "key_1" }])
      mutable.apiId = "api_b"
      expect(yield* analytics.getVerifications(admin, mutable)).toEqual([])
      // A stable one cannot change: frozen all through.
      const fixed = stable({ apiId: "api_a", groupBy: ["key"] })
      expect(Object.isFrozen(fixed) && Object.isFrozen(fixed.groupBy)).toBe(true)
      expect(() => fixed.groupBy.push("day")).toThrow()
      expect(Decision.now(analytics.getVerifications(admin, fixed))).toEqual(
        Exit.succeed([expect.objectContaining({ keyId: "key_1" })])
      )
    }).pipe(Effect.provide(Test)))

  it.effect("bounds a time series at 10,000 buckets, whatever the datapoint cap", () =>
    Effect.gen(function*() {
      const { analytics, record } = yield* setup
      yield* record("key_1")
      const hours = (days: number) =>
        analytics.getVerifications(admin, { apiId: "api_a", groupBy: ["hour"], start: NOW - days * Time.DAY })
      expect((yield* hours(416)).length).toBeLessThanOrEqual(10_000)
      const refused = yield* Effect.flip(hours(11 * 365))
      expect([refused._tag, refused.message]).toEqual([
        "QueryTooLarge",
        expect.stringMatching(/^A time series holds at most 10000 buckets .*this one would hold 96\d{3}/)
      ])
      // Grouped by key too, the buckets are those with data: not bounded by the window.
      expect(
        yield* analytics.getVerifications(admin, {
          apiId: "api_a",
          groupBy: ["hour", "key"],
          start: NOW - 11 * 365 * Time.DAY
        })
      ).toHaveLength(1)
    }).pipe(Effect.provide(Test)))

  it.effect("lets a workspace have MaxReadsAtOnce reads at work and a few waiting; more fail Busy, other workspaces unaffected", () =>
    Effect.gen(function*() {
      const { analytics } = yield* setup
      const catalog = yield* Catalog
      yield* catalog.putWorkspace(new Workspace({ id: "ws_other", name: "other" }))
      yield* catalog.putApi(new Api({ id: "api_o", workspaceId: "ws_other", name: "o" }))
      // Distinct windows, so that none is a remembered answer.
      const read = (principal: typeof admin, apiId: string, n: number) =>
        analytics.getVerifications(principal, { apiId, start: NOW - (n + 1) * Time.HOUR })
      // Two at work, eight (four a slot) waiting their turn, in the order they came.
      const done: Array<number> = []
      const many = yield* Effect.forkAll(
        Array.from({ length: 10 }, (_, n) => Effect.tap(read(admin, "api_a", n), () => Effect.sync(() => done.push(n))))
      )
      yield* TestClock.adjust("10 millis")
      const busy = yield* Effect.flip(read(admin, "api_a", 10))
      expect([busy._tag, busy.message]).toEqual(["Busy", expect.stringMatching(/2 analytics reads at work already/)])
      const other = yield* Effect.fork(read(Auth.system("ws_other"), "api_o", 11))
      yield* TestClock.adjust("200 millis")
      expect(yield* Fiber.join(other)).toEqual([expect.objectContaining({ total: 0 })])
      // Two by two, in the order they came (within a pair, as the scheduler has it).
      const pairs = () => Array.from({ length: done.length / 2 }, (_, i) => done.slice(2 * i, 2 * i + 2).sort())
      expect(pairs()).toEqual([[0, 1]])
      yield* TestClock.adjust("800 millis")
      expect((yield* Fiber.join(many)).length).toBe(10)
      expect(pairs()).toEqual([[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]])
      // Every slot given back: two at once again, none waiting.
      const after = yield* Effect.forkAll([12, 13].map((n) => read(admin, "api_a", n)))
      yield* TestClock.adjust("200 millis")
      expect(Option.isSome(yield* Fiber.poll(after))).toBe(true)
    }).pipe(
      Effect.provide(Keymeter.layer.pipe(Layer.provideMerge(slowStorage("200 millis")))),
      Effect.provide(Layer.succeed(MaxReadsAtOnce, 2))
    ))

  it.effect("refuses a read Busy once it has waited 2 s for a slot, and one whose caller left gives its place up", () =>
    Effect.gen(function*() {
      const { analytics } = yield* setup
      const read = (n: number) =>
        analytics.getVerifications(admin, { apiId: "api_a", start: NOW - (n + 1) * Time.HOUR })
      // Reads of 3 s: one at work, the next waits.
      const first = yield* Effect.fork(read(0))
      yield* TestClock.adjust("10 millis")
      const waited = yield* Effect.fork(Effect.flip(read(1)))
      const left = yield* Effect.fork(read(2))
      yield* TestClock.adjust("10 millis")
      yield* Fiber.interrupt(left)
      yield* TestClock.adjust("2000 millis")
      const refused = yield* Fiber.join(waited)
      expect(refused._tag).toBe("Busy")
      yield* TestClock.adjust("1000 millis")
      expect(yield* Fiber.join(first)).toHaveLength(1)
      // No slot kept by the refused or the interrupted one: the next read runs at once.
      const next = yield* Effect.fork(read(3))
      yield* TestClock.adjust("3000 millis")
      expect(yield* Fiber.join(next)).toHaveLength(1)
    }).pipe(
      Effect.provide(Keymeter.layer.pipe(Layer.provideMerge(slowStorage("3 seconds")))),
      Effect.provide(Layer.succeed(MaxReadsAtOnce, 1))
    ))

  it.effect("remembers nothing when told so", () =>
    Effect.gen(function*() {
      const { analytics } = yield* setup
      yield* analytics.getVerifications(admin, query)
      yield* analytics.getVerifications(admin, query)
      yield* analytics.getVerifications(admin, query)
      expect(reads).toBe(3)
    }).pipe(Effect.provide(Test), Effect.provide(Layer.succeed(RememberedAnswers, 0))))
})
