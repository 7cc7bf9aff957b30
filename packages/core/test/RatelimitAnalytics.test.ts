// Rate-limit analytics over the memory storage: every decision of limit, multiLimit and a key's
// limits is an event, counted by getRatelimits as getVerifications counts, with each override's hits.
import { describe, expect, it } from "@effect/vitest"
import * as Auth from "@keymeter/core/Auth"
import * as Decision from "@keymeter/core/Decision"
import type { InsufficientPermissions, NotFound, ValidationError } from "@keymeter/core/Errors"
import { Overrides } from "@keymeter/core/Overrides"
import type { Principal } from "@keymeter/core/Permission"
import { RatelimitAnalytics } from "@keymeter/core/RatelimitAnalytics"
import { RateLimiter } from "@keymeter/core/RateLimiter"
import { MAX_DETAIL_BYTES } from "@keymeter/core/RatelimitEvent"
import { RatelimitRecorder } from "@keymeter/core/RatelimitRecorder"
import { Catalog, RatelimitStore } from "@keymeter/core/Storage"
import * as Time from "@keymeter/core/Time"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as TestClock from "effect/TestClock"
import { admin, NOW, setup as keySetup, Test, WS } from "./KeyFixture.js"

const setup = Effect.gen(function*() {
  const fixture = yield* keySetup
  const limiter = yield* RateLimiter
  const analytics = yield* RatelimitAnalytics
  const overrides = yield* Overrides
  const catalog = yield* Catalog
  return {
    ...fixture,
    limiter,
    analytics,
    overrides,
    /** `n` calls of limit for `identifier` in `namespace`, `limit` per minute. */
    limit: (namespace: string, identifier: string, n: number, limit = 2, extra: object = {}) =>
      Effect.forEach(
        Array.from({ length: n }),
        () => limiter.limit(admin, { namespace, identifier, limit, duration: 60_000, ...extra })
      ),
    idOf: (name: string) =>
      Effect.map(catalog.findNamespaceByName(WS, name), (found) => found._tag === "Some" ? found.value.id : "")
  }
})

/** The error tag of a failed query. */
const failure = (effect: Effect.Effect<unknown, ValidationError | NotFound | InsufficientPermissions | object>) =>
  Effect.map(Effect.flip(effect), (error) => (error as { _tag: string; message: string }))

describe("RatelimitAnalytics", () => {
  it.effect("counts every limit decision, passed and blocked, per identifier, hour and override", () =>
    Effect.gen(function*() {
      const { analytics, idOf, limit, overrides } = yield* setup
      yield* limit("api", "alice", 5) // 2 passed, 3 blocked
      yield* limit("api", "bob", 1) // 1 passed
      yield* overrides.set(admin, { namespaceName: "api", identifier: "carol", limit: 10, duration: 60_000 })
      yield* TestClock.adjust("1 hour")
      yield* limit("api", "carol", 4) // the override: 4 passed
      const namespaceId = yield* idOf("api")
      expect(yield* analytics.getRatelimits(admin, { namespaceName: "api" })).toEqual([
        { total: 10, passed: 7, blocked: 3 }
      ])
      expect(
        yield* analytics.getRatelimits(admin, {
          namespaceId,
          groupBy: ["identifier"],
          orderBy: "blocked",
          order: "desc"
        })
      ).toEqual([
        { identifier: "alice", total: 5, passed: 2, blocked: 3 },
        { identifier: "bob", total: 1, passed: 1, blocked: 0 },
        { identifier: "carol", total: 4, passed: 4, blocked: 0 }
      ])
      const hour = Time.truncateToHour(NOW)
      // A time series is zero-filled over the window, as getVerifications' is.
      expect(
        yield* analytics.getRatelimits(admin, {
          namespaceName: "api",
          groupBy: ["hour"],
          start: hour - Time.HOUR,
          end: hour + Time.HOUR
        })
      ).toEqual([
        { time: hour - Time.HOUR, total: 0, passed: 0, blocked: 0 },
        { time: hour, total: 6, passed: 3, blocked: 3 },
        { time: hour + Time.HOUR, total: 4, passed: 4, blocked: 0 }
      ])
      const [override] = (yield* overrides.list(admin, { namespaceName: "api" })).overrides
      expect(
        yield* analytics.getRatelimits(admin, { namespaceName: "api", groupBy: ["override"] })
      ).toEqual([{ overrideId: override!.id, total: 4, passed: 4, blocked: 0 }])
      expect(
        yield* analytics.getRatelimits(admin, { namespaceName: "api", overrideId: override!.id, identifier: ["alice"] })
      ).toEqual([{ total: 0, passed: 0, blocked: 0 }])
      expect(
        yield* analytics.getRatelimits(admin, { namespaceName: "api", identifier: ["alice", "bob"], groupBy: ["day"] })
      ).toEqual([{ time: Time.truncateToDay(NOW), total: 6, passed: 3, blocked: 3 }])
    }).pipe(Effect.provide(Test)))

  it.effect("answers each override's hits and last decision in getOverride and listOverrides", () =>
    Effect.gen(function*() {
      const { limit, overrides } = yield* setup
      yield* overrides.set(admin, { namespaceName: "api", identifier: "user_*", limit: 1, duration: 60_000 })
      yield* overrides.set(admin, { namespaceName: "api", identifier: "idle", limit: 1, duration: 60_000 })
      yield* limit("api", "user_1", 2)
      yield* TestClock.adjust("5 seconds")
      yield* limit("api", "user_2", 1)
      const got = yield* overrides.get(admin, { namespaceName: "api", identifier: "user_*" })
      expect(got).toMatchObject({ identifier: "user_*", hits: 3, lastHitAt: NOW + 5_000 })
      const page = yield* overrides.list(admin, { namespaceName: "api" })
      expect(page.overrides.map(({ hits, identifier, lastHitAt }) => ({ identifier, hits, lastHitAt }))).toEqual([
        { identifier: "user_*", hits: 3, lastHitAt: NOW + 5_000 },
        { identifier: "idle", hits: 0, lastHitAt: undefined }
      ])
    }).pipe(Effect.provide(Test)))

  it.effect("records multiLimit and a key's limits too, with what each decision applied", () =>
    Effect.gen(function*() {
      const { create, idOf, limiter, verify } = yield* setup
      yield* limiter.multiLimit(admin, [
        { namespace: "email", identifier: "u1", limit: 1, duration: 10_000, cost: 1 },
        { namespace: "email", identifier: "u1", limit: 1, duration: 10_000, meta: { plan: "free" } }
      ])
      const { key } = yield* create({
        ratelimits: [{ name: "per-minute", limit: 1, duration: 60_000, autoApply: true }]
      })
      yield* verify(key)
      yield* verify(key)
      yield* (yield* RatelimitRecorder).flush
      const store = yield* RatelimitStore
      const email = yield* store.decisions(WS, yield* idOf("email"), { limit: 10 })
      expect(email.map(({ detail, identifier, passed, remaining, source }) => ({
        identifier,
        passed,
        remaining,
        source,
        detail
      }))).toEqual([
        {
          identifier: "u1",
          passed: false,
          remaining: 0,
          source: "multiLimit",
          detail: JSON.stringify({ meta: { plan: "free" } })
        },
        { identifier: "u1", passed: true, remaining: 0, source: "multiLimit", detail: undefined }
      ])
      const perMinute = yield* store.decisions(WS, yield* idOf("per-minute"), { limit: 10 })
      expect(perMinute.map((event) => [event.source, event.passed, event.limit, event.duration, event.cost])).toEqual([
        ["verifyKey", false, 1, 60_000, 1],
        ["verifyKey", true, 1, 60_000, 1]
      ])
      for (const event of [...email, ...perMinute]) {
        expect(event.time).toBe(NOW)
        expect(event.latency).toBeGreaterThanOrEqual(0)
      }
    }).pipe(Effect.provide(Test)))

  it.effect("keeps a request's meta and resources, cut down to the bound", () =>
    Effect.gen(function*() {
      const { idOf, limit } = yield* setup
      const resources = Array.from({ length: 100 }, (_, i) => ({ type: "doc", id: `doc_${i}`, name: "x".repeat(200) }))
      yield* limit("big", "u", 1, 2, { meta: { plan: "pro" }, resources })
      yield* (yield* RatelimitRecorder).flush
      const [event] = yield* (yield* RatelimitStore).decisions(WS, yield* idOf("big"), { limit: 1 })
      const detail = JSON.parse(event!.detail!)
      expect(Buffer.byteLength(event!.detail!)).toBeLessThanOrEqual(MAX_DETAIL_BYTES)
      expect(detail.truncated).toBe(true)
      expect(detail.meta).toEqual({ plan: "pro" })
      expect(detail.resources.length).toBeGreaterThan(0)
      expect(detail.resources).toEqual(resources.slice(0, detail.resources.length))
    }).pipe(Effect.provide(Test)))

  it.effect("checks the read_analytics permission, by namespace id, and the query's fields", () =>
    Effect.gen(function*() {
      const { analytics, idOf, limit } = yield* setup
      yield* limit("api", "alice", 1)
      yield* limit("other", "alice", 1)
      const namespaceId = yield* idOf("api")
      const reader: Principal = {
        workspaceId: WS,
        rootKeyId: "rk_reader",
        permissions: [`ratelimit.${namespaceId}.read_analytics`]
      }
      expect(yield* analytics.getRatelimits(reader, { namespaceName: "api" })).toEqual([
        { total: 1, passed: 1, blocked: 0 }
      ])
      expect((yield* failure(analytics.getRatelimits(reader, { namespaceName: "other" })))._tag).toBe(
        "InsufficientPermissions"
      )
      const overrideReader: Principal = { ...reader, permissions: ["ratelimit.*.read_override"] }
      expect((yield* failure(analytics.getRatelimits(overrideReader, { namespaceId })))._tag).toBe(
        "InsufficientPermissions"
      )
      // Another workspace's admin finds nothing.
      const stranger = Auth.system("ws_other")
      expect((yield* failure(analytics.getRatelimits(stranger, { namespaceId })))._tag).toBe("NotFound")
      expect(yield* failure(analytics.getRatelimits(admin, {}))).toMatchObject({
        _tag: "ValidationError",
        message: "namespaceId: either namespaceId or namespaceName is required"
      })
      expect(yield* failure(analytics.getRatelimits(admin, { namespaceId, namespaceName: "api" }))).toMatchObject({
        _tag: "ValidationError"
      })
      expect(yield* failure(analytics.getRatelimits(admin, { namespaceId, groupBy: ["key"] }))).toMatchObject({
        _tag: "ValidationError"
      })
      expect(
        yield* failure(analytics.getRatelimits(admin, { namespaceId, groupBy: ["hour", "day"] }))
      ).toMatchObject({ _tag: "ValidationError", message: expect.stringContaining("at most one of hour, day, month") })
      expect(yield* failure(analytics.getRatelimits(admin, { namespaceId, orderBy: "valid" }))).toMatchObject({
        _tag: "ValidationError"
      })
    }).pipe(Effect.provide(Test)))

  it.effect("is decided at once when memory holds the namespace and the counts, by id or by name", () =>
    Effect.gen(function*() {
      const { analytics, idOf, limit } = yield* setup
      yield* limit("api", "alice", 3) // 2 passed, 1 blocked
      const namespaceId = yield* idOf("api")
      // The first read loads the namespace; from then on the memory store answers at once.
      expect(yield* analytics.getRatelimits(admin, { namespaceId })).toEqual([{ total: 3, passed: 2, blocked: 1 }])
      const byId = Decision.now(analytics.getRatelimits(admin, { namespaceId, groupBy: ["identifier"] }))
      expect(byId).toEqual(Exit.succeed([{ identifier: "alice", total: 3, passed: 2, blocked: 1 }]))
      yield* analytics.getRatelimits(admin, { namespaceName: "api" })
      const byName = Decision.now(analytics.getRatelimits(admin, { namespaceName: "api" }))
      expect(byName).toEqual(Exit.succeed([{ total: 3, passed: 2, blocked: 1 }]))
      // So is a refusal of a known namespace.
      const stranger: Principal = { ...admin, permissions: ["ratelimit.other.read_analytics"] }
      const refused = Decision.now(analytics.getRatelimits(stranger, { namespaceName: "api" }))
      expect(Exit.isExit(refused) && Exit.isFailure(refused)).toBe(true)
    }).pipe(Effect.provide(Test)))
})
