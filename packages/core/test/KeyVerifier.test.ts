// KeyVerifier over the memory storage: each outcome and the order of checks, credits and limits
// taken together, overrides governing key limits, refills, and every verification counted by
// analytics.
import { describe, expect, it } from "@effect/vitest"
import { Analytics } from "@keymeter/core/Analytics"
import * as Auth from "@keymeter/core/Auth"
import { Identity } from "@keymeter/core/Key"
import * as Keymeter from "@keymeter/core/Keymeter"
import { refillSince } from "@keymeter/core/KeyVerifier"
import { Overrides } from "@keymeter/core/Overrides"
import { Catalog, VerificationStore } from "@keymeter/core/Storage"
import { MemoryCatalog, MemoryRatelimitStore, MemoryVerificationStore } from "@keymeter/storage-memory"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { admin, NOW, setup, SharedWindows, Test, WS } from "./KeyFixture.js"

/** Limits and credits taken together, all or none, whichever windows hold the limits. */
const limitsAndCredits = Effect.gen(function*() {
  const { create, verify } = yield* setup
  const { key } = yield* create({
    credits: { remaining: 1 },
    ratelimits: [{ name: "per-minute", limit: 3, duration: 60_000, autoApply: true }]
  })
  expect(yield* verify(key)).toMatchObject({
    code: "VALID",
    credits: { remaining: 0 },
    ratelimits: [{ name: "per-minute", limit: 3, remaining: 2, exceeded: false }]
  })
  // No credits left: USAGE_EXCEEDED, and the limit's token is given back each time.
  for (let i = 0; i < 5; i++) {
    expect(yield* verify(key)).toMatchObject({
      code: "USAGE_EXCEEDED",
      ratelimits: [{ remaining: 2, exceeded: false }]
    })
  }
  // Rate limited: no credit is spent.
  const { key: limited } = yield* create({
    credits: { remaining: 10 },
    ratelimits: [{ name: "tight", limit: 1, duration: 60_000, autoApply: true }]
  })
  expect((yield* verify(limited)).code).toBe("VALID")
  expect(yield* verify(limited)).toMatchObject({ code: "RATE_LIMITED", credits: { remaining: 9 } })
  // A limit applied only when asked for, with its cost; an unknown name is the caller's error.
  const { key: asked } = yield* create({ ratelimits: [{ name: "expensive", limit: 10, duration: 60_000 }] })
  expect((yield* verify(asked)).ratelimits).toBeUndefined()
  expect((yield* verify(asked, { ratelimits: [{ name: "expensive", cost: 4 }] })).ratelimits).toMatchObject([
    { name: "expensive", remaining: 6 }
  ])
  const unknown = yield* Effect.flip(verify(asked, { ratelimits: [{ name: "nope" }] }))
  expect(unknown._tag).toBe("ValidationError")
})

/**
 * The memory storage with every key lookup by hash taking 25 ms more (a real timer). A timer may
 * fire a little early by `performance.now()`, so the wait as measured is kept in `slowWait`.
 */
let slowWait = 0
const SlowLookups = Keymeter.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(
    MemoryVerificationStore.layer,
    MemoryRatelimitStore.layer,
    Layer.effect(
      Catalog,
      Effect.map(Catalog, (catalog) =>
        Catalog.of({
          ...catalog,
          findKeyByHash: (hash) =>
            Effect.zipRight(
              Effect.promise(() => {
                const started = performance.now()
                return new Promise<void>((resolve) =>
                  setTimeout(() => {
                    slowWait = performance.now() - started
                    resolve()
                  }, 25)
                )
              }),
              catalog.findKeyByHash(hash)
            )
        }))
    ).pipe(Layer.provide(MemoryCatalog.layer))
  ))
)

describe("KeyVerifier", () => {
  it.effect("answers each outcome by its condition, first failure wins", () =>
    Effect.gen(function*() {
      const { create, keys, verify } = yield* setup
      const catalog = yield* Catalog
      const valid = yield* create({ permissions: ["read", "write"] })
      expect(yield* verify(valid.key)).toMatchObject({ valid: true, code: "VALID", keyId: valid.keyId })
      expect(yield* verify("sk_nothing", { apiId: "api_a" })).toEqual({ valid: false, code: "NOT_FOUND" })
      // Another api's key: FORBIDDEN, and nothing of the key (its id, name, meta, ...) shown.
      const named = yield* create({ name: "secret plan", meta: { plan: "gold" }, externalId: "cust_x" })
      expect(yield* verify(named.key, { apiId: "api_b" })).toEqual({ valid: false, code: "FORBIDDEN" })
      // Another workspace's key: as a key that does not exist, so no secret is told valid elsewhere.
      const foreign = yield* keys.create(Auth.system("ws_other"), { apiId: "api_o" })
      expect(yield* verify(foreign.key!)).toEqual({ valid: false, code: "NOT_FOUND" })
      expect(yield* verify(foreign.key!, { apiId: "api_a" })).toEqual(yield* verify("sk_nothing", { apiId: "api_a" }))
      expect((yield* verify(valid.key, { permissions: { and: ["read", "write"] } })).code).toBe("VALID")
      expect((yield* verify(valid.key, { permissions: { and: ["read", "admin"] } })).code).toBe(
        "INSUFFICIENT_PERMISSIONS"
      )
      expect((yield* verify(valid.key, { permissions: { or: ["admin", { and: ["read"] }] } })).code).toBe("VALID")
      // Disabled and expired: disabled is checked first.
      const both = yield* create({ enabled: false, expires: NOW - 1 })
      expect((yield* verify(both.key)).code).toBe("DISABLED")
      yield* keys.update(admin, { keyId: both.keyId, enabled: true })
      expect((yield* verify(both.key)).code).toBe("EXPIRED")
      yield* keys.update(admin, { keyId: both.keyId, expires: null })
      expect((yield* verify(both.key)).code).toBe("VALID")
      // A disabled identity: UNAUTHORIZED, before DISABLED.
      const customer = yield* create({ externalId: "cust", enabled: false })
      const identity = Option.getOrThrow(yield* catalog.findIdentityByExternalId(WS, "cust"))
      yield* catalog.replaceIdentity(new Identity({ ...identity, enabled: false }))
      expect((yield* verify(customer.key)).code).toBe("UNAUTHORIZED")
      // Deleted: NOT_FOUND at once.
      yield* keys.delete(admin, { keyId: valid.keyId })
      expect((yield* verify(valid.key)).code).toBe("NOT_FOUND")
    }).pipe(Effect.provide(Test)))

  it.effect("spends credits exactly: 200 parallel verifications of 50 credits give 50 VALID", () =>
    Effect.gen(function*() {
      const { create, verify } = yield* setup
      const { key } = yield* create({ credits: { remaining: 50 } })
      const answers = yield* Effect.all(Array.from({ length: 200 }, () => verify(key)), { concurrency: "unbounded" })
      expect(answers.filter((a) => a.code === "VALID")).toHaveLength(50)
      expect(answers.filter((a) => a.code === "USAGE_EXCEEDED")).toHaveLength(150)
      expect(Math.min(...answers.map((a) => a.credits!.remaining))).toBe(0)
      // A cost over the balance takes nothing; cost 0 passes.
      const { key: five } = yield* create({ credits: { remaining: 5 } })
      expect(yield* verify(five, { credits: { cost: 6 } })).toMatchObject({
        code: "USAGE_EXCEEDED",
        credits: { remaining: 5 }
      })
      expect(yield* verify(five, { credits: { cost: 0 } })).toMatchObject({ code: "VALID", credits: { remaining: 5 } })
      expect(yield* verify(five, { credits: { cost: 5 } })).toMatchObject({ code: "VALID", credits: { remaining: 0 } })
    }).pipe(Effect.provide(Test)))

  it.effect("records the credits each verification spent and how long it took, to its answer", () =>
    Effect.gen(function*() {
      const { create, verify } = yield* setup
      const store = yield* VerificationStore
      const five = yield* create({ credits: { remaining: 5 } })
      const plain = yield* create()
      yield* verify(five.key, { credits: { cost: 3 } })
      yield* verify(five.key, { credits: { cost: 3 } })
      yield* verify(five.key, { credits: { cost: 0 } })
      yield* verify(plain.key, { credits: { cost: 3 } })
      yield* verify(five.key, { credits: { cost: 2 }, apiId: "api_b" })
      const [batch] = yield* store.scan!({ workspaceId: WS, within: undefined, from: 0, to: NOW + 1, maxRows: 10 })
      const rows = Array.from({ length: batch!.length }, (_, i) => ({
        keyId: batch!.keyId.values[batch!.keyId.codes[i]!],
        outcome: batch!.outcome[i],
        spentCredits: batch!.spentCredits[i],
        latency: batch!.latency[i]!,
        region: batch!.region.values[batch!.region.codes[i]!]
      }))
      // Only what was taken: nothing when the balance fell short, for a key without credits, or
      // another api's key (FORBIDDEN).
      expect(rows.map((r) => [r.keyId, r.outcome, r.spentCredits, r.region])).toEqual([
        [five.keyId, 0, 3, ""],
        [five.keyId, 3, 0, ""],
        [five.keyId, 0, 0, ""],
        [plain.keyId, 0, 0, ""],
        [five.keyId, 2, 0, ""]
      ])
      for (const { latency } of rows) {
        expect(latency).toBeGreaterThanOrEqual(0)
        expect(Math.round(latency * 1000) / 1000).toBe(latency)
      }
      // The first verification of a key loads it: its latency holds the load.
      const slow = yield* create()
      const started = performance.now()
      yield* verify(slow.key)
      const took = performance.now() - started
      const all = yield* store.scan!({ workspaceId: WS, within: ["api_a"], from: 0, to: NOW + 1, maxRows: 10 })
      const last = all.at(-1)!
      const latency = last.latency[last.length - 1]!
      expect(slowWait).toBeGreaterThan(20)
      expect(latency).toBeGreaterThanOrEqual(Math.floor(slowWait * 1000) / 1000)
      expect(latency).toBeLessThanOrEqual(took + 0.001)
    }).pipe(Effect.provide(SlowLookups)))

  it.effect("takes limits and credits together: a refused call spends neither", () =>
    limitsAndCredits.pipe(Effect.provide(Test)))

  // The same through the path for windows outside this process (Redis): decided by takeAll, given
  // back by refundAll.

  it.effect("takes limits and credits together on shared windows: a refused call spends neither", () =>
    limitsAndCredits.pipe(Effect.provide(SharedWindows)))

  it.effect("lets overrides govern key limits, shared by an identity's keys", () =>
    Effect.gen(function*() {
      const { create, verify } = yield* setup
      const overrides = yield* Overrides
      const limits = [{ name: "api-calls", limit: 2, duration: 60_000, autoApply: true }]
      const one = yield* create({ externalId: "user_42", ratelimits: limits })
      const two = yield* create({ externalId: "user_42", ratelimits: limits })
      expect((yield* verify(one.key)).code).toBe("VALID")
      expect((yield* verify(two.key)).code).toBe("VALID")
      // The identity's budget is shared: the third call of either key is refused.
      expect((yield* verify(one.key)).code).toBe("RATE_LIMITED")
      const raised = yield* overrides.set(admin, {
        namespaceName: "api-calls",
        identifier: "user_42",
        limit: 5,
        duration: 60_000
      })
      expect(yield* verify(two.key)).toMatchObject({
        code: "VALID",
        ratelimits: [{ name: "api-calls", limit: 5, remaining: 2, overrideId: raised.id }]
      })
      yield* overrides.set(admin, { namespaceName: "api-calls", identifier: "user_*", limit: 0, duration: 60_000 })
      expect((yield* verify(one.key)).code).toBe("VALID") // the exact override still wins
      yield* overrides.delete(admin, { namespaceName: "api-calls", identifier: "user_42" })
      expect(yield* verify(one.key)).toMatchObject({ code: "RATE_LIMITED", ratelimits: [{ limit: 0 }] })
    }).pipe(Effect.provide(Test)))

  it.effect("takes key limits of any window up to 2^53-1 ms, answering a reset that is a valid time", () =>
    Effect.gen(function*() {
      const { create, verify } = yield* setup
      const YEAR = 365 * 86_400_000
      const { key } = yield* create({
        ratelimits: [
          { name: "yearly", limit: 1000, duration: YEAR, autoApply: true },
          { name: "forever", limit: 5, duration: Number.MAX_SAFE_INTEGER, autoApply: true }
        ]
      })
      expect(yield* verify(key)).toMatchObject({
        code: "VALID",
        ratelimits: [{ name: "yearly", remaining: 999, reset: NOW + YEAR }, {
          name: "forever",
          remaining: 4,
          reset: 8_640_000_000_000_000
        }]
      })
      const tooLong = yield* Effect.flip(
        create({ ratelimits: [{ name: "x", limit: 1, duration: Number.MAX_SAFE_INTEGER + 1 }] })
      )
      expect(tooLong.message).toMatch(/duration: must be an integer of milliseconds from 1000 to 9007199254740991/)
    }).pipe(Effect.provide(Test)))

  it.effect("refills credits at the day's or the month's refill time (UTC)", () =>
    Effect.gen(function*() {
      const { create, verify } = yield* setup
      expect(refillSince({ interval: "daily", amount: 1 }, NOW)).toBe(Date.UTC(2026, 0, 15))
      expect(refillSince({ interval: "monthly", amount: 1, refillDay: 20 }, NOW)).toBe(Date.UTC(2025, 11, 20))
      expect(refillSince({ interval: "monthly", amount: 1, refillDay: 31 }, Date.UTC(2026, 1, 28, 1)))
        .toBe(Date.UTC(2026, 1, 28))
      const { key } = yield* create({ credits: { remaining: 1, refill: { interval: "daily", amount: 3 } } })
      expect((yield* verify(key)).code).toBe("VALID")
      expect((yield* verify(key)).code).toBe("USAGE_EXCEEDED")
      yield* TestClock.setTime(Date.UTC(2026, 0, 16, 0, 0, 1))
      expect(yield* verify(key)).toMatchObject({ code: "VALID", credits: { remaining: 2 } })
      const monthly = yield* create({
        credits: { remaining: 0, refill: { interval: "monthly", amount: 10, refillDay: 31 } }
      })
      expect((yield* verify(monthly.key)).code).toBe("USAGE_EXCEEDED")
      yield* TestClock.setTime(Date.UTC(2026, 0, 31))
      expect(yield* verify(monthly.key)).toMatchObject({ code: "VALID", credits: { remaining: 9 } })
      yield* TestClock.setTime(Date.UTC(2026, 1, 28))
      expect(yield* verify(monthly.key)).toMatchObject({ code: "VALID", credits: { remaining: 9 } })
    }).pipe(Effect.provide(Test)))

  it.effect("counts every verification in analytics, per outcome, key and identity", () =>
    Effect.gen(function*() {
      const { create, verify } = yield* setup
      const analytics = yield* Analytics
      const a = yield* create({ externalId: "user_1", credits: { remaining: 2 } })
      const b = yield* create({ enabled: false })
      for (let i = 0; i < 3; i++) yield* verify(a.key, { tags: ["path:/x"] })
      yield* verify(b.key)
      yield* verify("sk_unknown", { apiId: "api_a" })
      yield* verify("sk_unknown")
      const byKey = yield* analytics.getVerifications(admin, { apiId: "api_a", groupBy: ["key"] })
      expect(byKey.map((p) => [p.keyId, p.valid, p.usageExceeded, p.disabled, p.notFound])).toEqual(
        [[a.keyId, 2, 1, 0, 0], [b.keyId, 0, 0, 1, 0], ["unknown", 0, 0, 0, 1]].sort((x, y) =>
          String(x[0]) < String(y[0]) ? -1 : 1
        )
      )
      const byIdentity = yield* analytics.getVerifications(admin, { apiId: "api_a", externalId: "user_1" })
      expect(byIdentity[0]!.total).toBe(3)
      const tagged = yield* analytics.getVerifications(admin, { apiId: "api_a", tag: ["path:/x"] })
      expect(tagged[0]!.total).toBe(3)
    }).pipe(Effect.provide(Test)))
})
