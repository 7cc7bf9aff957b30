// RateLimiter over the memory storage (the adapter core's service tests run on; it is built with
// them, see tsconfig.test.json).
import { describe, expect, it } from "@effect/vitest"
import * as Auth from "@keymeter/core/Auth"
import * as Decision from "@keymeter/core/Decision"
import * as Foreground from "@keymeter/core/Foreground"
import * as Keymeter from "@keymeter/core/Keymeter"
import { Overrides } from "@keymeter/core/Overrides"
import { RateLimiter } from "@keymeter/core/RateLimiter"
import { Catalog } from "@keymeter/core/Storage"
import { Workspace } from "@keymeter/core/Workspace"
import { MemoryStorage } from "@keymeter/storage-memory"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import { SharedWindows } from "./KeyFixture.js"

const WS = "ws_rl"
const admin = Auth.system(WS)
const Test = Keymeter.layer.pipe(Layer.provideMerge(MemoryStorage.layer))

const setup = Effect.gen(function*() {
  const catalog = yield* Catalog
  yield* catalog.putWorkspace(new Workspace({ id: WS, name: "rl" }))
  yield* TestClock.setTime(1_000_000)
  const limiter = yield* RateLimiter
  const overrides = yield* Overrides
  return {
    limit: (input: object) =>
      limiter.limit(admin, { namespace: "api", identifier: "user_1", limit: 3, duration: 10_000, ...input }),
    overrides
  }
})

describe("RateLimiter", () => {
  it.effect("counts requests in a window that slides", () =>
    Effect.gen(function*() {
      const { limit } = yield* setup
      expect(yield* limit({})).toEqual({ success: true, limit: 3, remaining: 2, reset: 1_010_000 })
      yield* TestClock.adjust(4_000)
      expect(yield* limit({})).toMatchObject({ success: true, remaining: 1, reset: 1_010_000 })
      expect(yield* limit({})).toMatchObject({ success: true, remaining: 0 })
      expect(yield* limit({})).toMatchObject({ success: false, remaining: 0, reset: 1_010_000 })
      // 1 ms before the first request leaves the window it still counts...
      yield* TestClock.setTime(1_009_999)
      expect(yield* limit({})).toMatchObject({ success: false, remaining: 0 })
      // ...at its edge it no longer does.
      yield* TestClock.setTime(1_010_000)
      expect(yield* limit({})).toMatchObject({ success: true, remaining: 0, reset: 1_014_000 })
      // The other identifier has its own window.
      expect(yield* limit({ identifier: "user_2" })).toMatchObject({ success: true, remaining: 2 })
    }).pipe(Effect.provide(Test)))

  it.effect("marks the foreground at each call, one limit or many, so background work steps aside", () =>
    Effect.gen(function*() {
      const { limit } = yield* setup
      const limiter = yield* RateLimiter
      const before = Foreground.lastRan()
      yield* limit({})
      const once = Foreground.lastRan()
      expect(once).toBeGreaterThan(before)
      // Even a call refused as invalid was asked for, and marks it.
      while (performance.now() === once) yield* Effect.yieldNow()
      yield* Effect.either(limiter.multiLimit(admin, []))
      expect(Foreground.lastRan()).toBeGreaterThan(once)
      expect(Foreground.idleFor()).toBeLessThan(1_000)
    }).pipe(Effect.provide(Test)))

  it.effect("takes the cost, refuses what does not fit, and peeks with cost 0", () =>
    Effect.gen(function*() {
      const { limit } = yield* setup
      expect(yield* limit({ limit: 10, cost: 7 })).toMatchObject({ success: true, remaining: 3 })
      expect(yield* limit({ limit: 10, cost: 4 })).toMatchObject({ success: false, remaining: 3 })
      expect(yield* limit({ limit: 10, cost: 0 })).toMatchObject({ success: true, remaining: 3 })
      expect(yield* limit({ limit: 10, cost: 3 })).toMatchObject({ success: true, remaining: 0 })
      expect(yield* limit({ limit: 10, cost: 0 })).toMatchObject({ success: false, remaining: 0 })
      expect(yield* limit({ identifier: "big", limit: 5, cost: 6 })).toMatchObject({ success: false, remaining: 5 })
    }).pipe(Effect.provide(Test)))

  it.effect("applies the resolved override instead of the request's limit, and its changes at once", () =>
    Effect.gen(function*() {
      const { limit, overrides } = yield* setup
      yield* limit({}) // creates the namespace "api"
      const set = (identifier: string, values: object) =>
        overrides.set(admin, { namespaceName: "api", identifier, duration: 60_000, ...values })
      const wildcard = yield* set("user_*", { limit: 100 })
      expect(yield* limit({})).toMatchObject({
        success: true,
        limit: 100,
        remaining: 98,
        overrideId: wildcard.id,
        reset: 1_060_000
      })
      const exact = yield* set("user_1", { limit: 0 })
      // limit 0 blocks every request, a peek included.
      expect(yield* limit({})).toMatchObject({ success: false, limit: 0, remaining: 0, overrideId: exact.id })
      expect(yield* limit({ cost: 0 })).toMatchObject({ success: false, overrideId: exact.id })
      yield* overrides.delete(admin, { namespaceName: "api", identifier: "user_1" })
      expect(yield* limit({})).toMatchObject({ success: true, limit: 100, overrideId: wildcard.id })
      yield* overrides.delete(admin, { namespaceName: "api", identifier: "user_*" })
      const none = yield* limit({})
      expect(none.overrideId).toBeUndefined()
      expect(none.limit).toBe(3)
    }).pipe(Effect.provide(Test)))

  it.effect("applies overrides of namespace patterns, below the namespace's own", () =>
    Effect.gen(function*() {
      const { limit, overrides } = yield* setup
      yield* overrides.set(admin, { namespaceName: "api*", identifier: "user_1", limit: 50, duration: 60_000 })
      expect(yield* limit({ namespace: "api.v2" })).toMatchObject({ limit: 50 })
      yield* overrides.set(admin, { namespaceName: "api.v2", identifier: "user*", limit: 7, duration: 60_000 })
      expect(yield* limit({ namespace: "api.v2" })).toMatchObject({ limit: 7 })
      expect(yield* limit({ namespace: "other" })).toMatchObject({ limit: 3 })
    }).pipe(Effect.provide(Test)))

  it.effect("shows an override resolved in a pattern namespace only to a key that may read that one", () =>
    Effect.gen(function*() {
      const { limit, overrides } = yield* setup
      const catalog = yield* Catalog
      yield* overrides.set(admin, { namespaceName: "api*", identifier: "user_1", limit: 50, duration: 60_000 })
      yield* limit({ namespace: "api.v2" })
      const pattern = yield* catalog.findNamespaceByName(WS, "api*")
      const own = yield* catalog.findNamespaceByName(WS, "api.v2")
      if (pattern._tag === "None" || own._tag === "None") return expect.unreachable()
      const ask = (permissions: Array<string>) =>
        Effect.either(
          overrides.get({ workspaceId: WS, rootKeyId: "rk", permissions }, {
            namespaceName: "api.v2",
            identifier: "user_1",
            resolve: true
          })
        )
      const narrow = yield* ask([`ratelimit.${own.value.id}.read_override`])
      expect(Either.isLeft(narrow) && narrow.left._tag).toBe("InsufficientPermissions")
      const both = yield* ask([
        `ratelimit.${own.value.id}.read_override`,
        `ratelimit.${pattern.value.id}.read_override`
      ])
      expect(Either.isRight(both) && both.right).toMatchObject({ identifier: "user_1", limit: 50 })
    }).pipe(Effect.provide(Test)))

  it.effect("takes Unkey v1's body: namespace \"default\" when none, async, meta and resources bounded", () =>
    Effect.gen(function*() {
      yield* setup
      const catalog = yield* Catalog
      const limiter = yield* RateLimiter
      const limit = (input: object) =>
        Effect.either(limiter.limit(admin, { identifier: "u", limit: 2, duration: 1000, ...input }))
      expect(yield* limit({})).toEqual(Either.right({ success: true, limit: 2, remaining: 1, reset: 1_001_000 }))
      expect((yield* catalog.findNamespaceByName(WS, "default"))._tag).toBe("Some")
      // With windows of this process, async decides as sync does; meta and resources are accepted.
      const full = yield* limit({
        async: true,
        meta: { plan: "pro", n: 1 },
        resources: [{ type: "organization", id: "org_1", name: "Acme", meta: { tier: 2 } }]
      })
      expect(full).toEqual(Either.right({ success: true, limit: 2, remaining: 0, reset: 1_001_000 }))
      const refusal = (input: object) =>
        Effect.map(limit(input), (result) => Either.isLeft(result) ? result.left.message : "accepted")
      expect(yield* refusal({ meta: { big: "x".repeat(17_000) } })).toMatch(/^meta: must be at most 16384 bytes/)
      expect(yield* refusal({ resources: Array.from({ length: 101 }, (_, i) => ({ type: "t", id: `${i}` })) }))
        .toMatch(/^resources: must hold at most 100 resources/)
      expect(yield* refusal({ resources: [{ id: "x" }] })).toMatch(/^resources\[0\]\.type: is required/)
      expect(yield* refusal({ async: "yes" })).toMatch(/^async: must be true or false/)
      expect(yield* refusal({ meta: [1] })).toMatch(/^meta:/)
    }).pipe(Effect.provide(Test)))

  it.effect("decides an async request from this server's view of shared windows, at once", () =>
    Effect.gen(function*() {
      yield* setup
      const limiter = yield* RateLimiter
      const ask = (async: boolean) =>
        Decision.now(limiter.limit(admin, { namespace: "api", identifier: "u_async", limit: 2, duration: 1000, async }))
      yield* ask(false) // loads the namespace and the overrides
      expect(Exit.isExit(ask(false))).toBe(false)
      const quick = ask(true)
      expect(quick).toEqual(Exit.succeed(expect.objectContaining({ success: true, limit: 2 })))
    }).pipe(Effect.provide(SharedWindows)))

  it.effect("creates a namespace on first use, which needs ratelimit.*.limit", () =>
    Effect.gen(function*() {
      yield* setup
      const catalog = yield* Catalog
      const limiter = yield* RateLimiter
      const narrow = { workspaceId: WS, rootKeyId: "rk", permissions: ["ratelimit.rlns_x.limit"] }
      const refused = yield* Effect.either(
        limiter.limit(narrow, { namespace: "fresh", identifier: "u", limit: 1, duration: 1000 })
      )
      expect(Either.isLeft(refused) && refused.left._tag).toBe("InsufficientPermissions")
      expect((yield* catalog.findNamespaceByName(WS, "fresh"))._tag).toBe("None")
      yield* limiter.limit(admin, { namespace: "fresh", identifier: "u", limit: 1, duration: 1000 })
      const created = yield* catalog.findNamespaceByName(WS, "fresh")
      expect(created._tag).toBe("Some")
      const bad = yield* Effect.either(
        limiter.limit(admin, { namespace: "a*", identifier: "u", limit: 0, duration: 10 })
      )
      expect(Either.isLeft(bad) && bad.left.message).toMatch(/^limit: must be an integer >= 1, got 0; duration:/)
    }).pipe(Effect.provide(Test)))

  it.effect("never lets parallel calls for one identifier past the limit in a window", () =>
    Effect.gen(function*() {
      const { limit } = yield* setup
      const results = yield* Effect.all(
        Array.from({ length: 200 }, () => limit({ limit: 25, duration: 60_000 })),
        { concurrency: "unbounded" }
      )
      expect(results.filter((r) => r.success)).toHaveLength(25)
      expect(Math.min(...results.map((r) => r.remaining))).toBe(0)
    }).pipe(Effect.provide(Test)))

  it.effect("limit decides at once (an Exit) when what it needs is remembered, and takes nothing before it has it", () =>
    Effect.gen(function*() {
      const { limit, overrides } = yield* setup
      const limiter = yield* RateLimiter
      const body = { namespace: "api", identifier: "user_1", limit: 3, duration: 10_000 }
      // A namespace never read: it needs a read (and here its creation), so no answer at once.
      const first = Decision.now(limiter.limit(admin, body))
      expect(Exit.isExit(first)).toBe(false)
      expect(yield* first).toMatchObject({ success: true, remaining: 2 })
      // Its run read the namespace it created: the next call is decided at once.
      expect(Decision.now(limiter.limit(admin, body))).toEqual(Exit.succeed({
        success: true,
        limit: 3,
        remaining: 1,
        reset: 1_010_000
      }))
      expect(yield* limit({})).toMatchObject({ success: true, remaining: 0 })
      // Refusals take nothing: bodies the schema refuses, and a principal that may not limit here.
      for (
        const bad of [{ ...body, cost: -1 }, { ...body, extra: 1 }, { ...body, limit: 1.5 }, {
          ...body,
          namespace: "a*"
        }]
      ) {
        expect((yield* Effect.flip(Decision.now(limiter.limit(admin, bad))))._tag).toBe("ValidationError")
      }
      const narrow = { workspaceId: WS, rootKeyId: "rk", permissions: ["ratelimit.rlns_x.limit"] }
      const refused = Decision.now(limiter.limit(narrow, body))
      expect(Exit.isExit(refused) && Exit.isFailure(refused)).toBe(true)
      expect(yield* limit({})).toMatchObject({ success: false, remaining: 0 })
      // An override set since applies at once, decided without a read: Overrides applied its own
      // write to what it remembers, and an override write leaves the namespaces read valid.
      const set = yield* overrides.set(admin, {
        namespaceName: "api",
        identifier: "user_*",
        limit: 10,
        duration: 10_000
      })
      expect(Decision.now(limiter.limit(admin, body))).toMatchObject(Exit.succeed({
        success: true,
        limit: 10,
        remaining: 6,
        overrideId: set.id
      }))
      expect(Decision.now(limiter.limit(admin, body))).toMatchObject(Exit.succeed({
        success: true,
        limit: 10,
        remaining: 5,
        overrideId: set.id
      }))
    }).pipe(Effect.provide(Test)))
  it.effect("limits a namespace given by id in the window of its name, at once once it is remembered", () =>
    Effect.gen(function*() {
      const { limit } = yield* setup
      const catalog = yield* Catalog
      const limiter = yield* RateLimiter
      yield* limit({}) // creates "api"
      const api = yield* catalog.findNamespaceByName(WS, "api")
      if (api._tag === "None") return expect.unreachable()
      const byId = { namespaceId: api.value.id, identifier: "user_1", limit: 3, duration: 10_000 }
      const first = Decision.now(limiter.limit(admin, byId))
      expect(Exit.isExit(first)).toBe(false)
      expect(yield* first).toEqual({ success: true, limit: 3, remaining: 1, reset: 1_010_000 })
      // The id read is remembered: the compiled check took the body, and memory answers it.
      expect(Decision.now(limiter.limit(admin, byId))).toEqual(Exit.succeed({
        success: true,
        limit: 3,
        remaining: 0,
        reset: 1_010_000
      }))
      expect(yield* limit({})).toMatchObject({ success: false, remaining: 0 })
      // The permission is the namespace's, by its id.
      const own = { workspaceId: WS, rootKeyId: "rk", permissions: [`ratelimit.${api.value.id}.limit`] }
      expect(yield* limiter.limit(own, { ...byId, identifier: "user_2" })).toMatchObject({ remaining: 2 })
      const other = { workspaceId: WS, rootKeyId: "rk", permissions: ["ratelimit.rlns_x.limit"] }
      const refused = yield* Effect.flip(limiter.limit(other, byId))
      expect(refused._tag).toBe("InsufficientPermissions")
    }).pipe(Effect.provide(Test)))

  it.effect("refuses a namespaceId of no namespace of the workspace (creating nothing), and both ways at once", () =>
    Effect.gen(function*() {
      const { limit, overrides } = yield* setup
      const catalog = yield* Catalog
      const limiter = yield* RateLimiter
      const body = { identifier: "u", limit: 2, duration: 1000 }
      const missing = yield* Effect.flip(limiter.limit(admin, { ...body, namespaceId: "rlns_nope" }))
      expect(missing).toMatchObject({
        _tag: "NotFound",
        message: "namespaceId: no namespace \"rlns_nope\" in this workspace"
      })
      expect((yield* catalog.getNamespace(WS, "rlns_nope"))._tag).toBe("None")
      expect((yield* catalog.findNamespaceByName(WS, "default"))._tag).toBe("None")
      // Another workspace's namespace is not found either.
      yield* catalog.putWorkspace(new Workspace({ id: "ws_other", name: "other" }))
      yield* limiter.limit(Auth.system("ws_other"), { ...body, namespace: "theirs" })
      const theirs = yield* catalog.findNamespaceByName("ws_other", "theirs")
      if (theirs._tag === "None") return expect.unreachable()
      const foreign = yield* Effect.flip(limiter.limit(admin, { ...body, namespaceId: theirs.value.id }))
      expect(foreign._tag).toBe("NotFound")
      yield* limit({}) // creates "api"
      const api = yield* catalog.findNamespaceByName(WS, "api")
      if (api._tag === "None") return expect.unreachable()
      const both = yield* Effect.flip(limiter.limit(admin, { ...body, namespace: "api", namespaceId: api.value.id }))
      expect(both).toMatchObject({
        _tag: "ValidationError",
        message: "namespace: give namespace or namespaceId, not both"
      })
      const empty = yield* Effect.flip(limiter.limit(admin, { ...body, namespaceId: "" }))
      expect(empty.message).toMatch(/^namespaceId: must be a namespace id of 1 to 255 characters, got ""/)
      // A pattern's id is refused as its name is.
      yield* overrides.set(admin, { namespaceName: "api*", identifier: "user_1", limit: 5, duration: 1000 })
      const pattern = yield* catalog.findNamespaceByName(WS, "api*")
      if (pattern._tag === "None") return expect.unreachable()
      const patterned = yield* Effect.flip(limiter.limit(admin, { ...body, namespaceId: pattern.value.id }))
      expect(patterned.message).toMatch(/^namespaceId: names the pattern "api\*"/)
    }).pipe(Effect.provide(Test)))

  it.effect("a namespace name that no namespace bears but is one's id names that one, unless a pattern", () =>
    Effect.gen(function*() {
      const { limit, overrides } = yield* setup
      const catalog = yield* Catalog
      const limiter = yield* RateLimiter
      yield* limit({}) // creates "api"
      const api = yield* catalog.findNamespaceByName(WS, "api")
      if (api._tag === "None") return expect.unreachable()
      // The same window as by name: the second request of three.
      expect(yield* limit({ namespace: api.value.id })).toMatchObject({ success: true, remaining: 1 })
      // An override set through the id as a name is the namespace's own.
      yield* overrides.set(admin, { namespaceName: api.value.id, identifier: "user_9", limit: 7, duration: 1000 })
      expect(yield* limit({ identifier: "user_9" })).toMatchObject({ limit: 7, remaining: 6 })
      expect((yield* catalog.findNamespaceByName(WS, api.value.id))._tag).toBe("None")
      // A pattern's id is no namespace to limit in: a name like it is a new namespace's.
      yield* overrides.set(admin, { namespaceName: "api*", identifier: "user_1", limit: 5, duration: 1000 })
      const pattern = yield* catalog.findNamespaceByName(WS, "api*")
      if (pattern._tag === "None") return expect.unreachable()
      expect(yield* limiter.limit(admin, { namespace: pattern.value.id, identifier: "u", limit: 2, duration: 1000 }))
        .toMatchObject({ success: true, remaining: 1 })
      const created = yield* catalog.findNamespaceByName(WS, pattern.value.id)
      if (created._tag === "None") return expect.unreachable()
      expect(created.value.id).not.toBe(pattern.value.id)
    }).pipe(Effect.provide(Test)))

  it.effect("an effect of limit decides when it runs, each time it runs", () =>
    Effect.gen(function*() {
      yield* setup
      const limiter = yield* RateLimiter
      const once = limiter.limit(admin, { namespace: "api", identifier: "user_9", limit: 2, duration: 10_000 })
      yield* once
      // Made but not run: nothing taken.
      limiter.limit(admin, { namespace: "api", identifier: "user_9", limit: 2, duration: 10_000 })
      expect(yield* once).toMatchObject({ success: true, remaining: 0 })
      expect(yield* once).toMatchObject({ success: false, remaining: 0 })
    }).pipe(Effect.provide(Test)))
})
