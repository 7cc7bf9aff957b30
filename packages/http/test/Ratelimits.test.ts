import { expect, layer } from "@effect/vitest"
import { MemoryStorage } from "@keymeter/storage-memory"
import * as Effect from "effect/Effect"
import * as TestServer from "./TestServer.js"
import { keys, post, request } from "./TestServer.js"

const expectError = (reply: TestServer.Reply, status: number, code: string, message?: RegExp) => {
  expect(reply.status, JSON.stringify(reply.body)).toBe(status)
  expect(reply.body.error.code).toBe(code)
  expect(reply.body.error.requestId).toBe(reply.headers.get("x-request-id"))
  if (message) expect(reply.body.error.message).toMatch(message)
}

const get = (path: string, params: Record<string, string>, key: string) =>
  request(`/v1/ratelimits.${path}?${new URLSearchParams(params)}`, { key })

layer(TestServer.layer(MemoryStorage.layer), { excludeTestServices: true })("HTTP ratelimits routes", (it) => {
  it.effect("reads an override, or the one that resolves, in the documented shape", () =>
    Effect.gen(function*() {
      const set = yield* post("/v1/ratelimits.setOverride", {
        namespaceId: "rlns_a1",
        identifier: "user_*",
        limit: 10,
        duration: 60_000,
        async: true
      }, keys.setter)
      const literal = yield* get("getOverride", { namespaceId: "rlns_a1", identifier: "user_*" }, keys.overrideReader)
      expect(literal.status).toBe(200)
      expect(Object.keys(literal.body).sort()).toEqual([
        "async",
        "createdAt",
        "duration",
        "hits",
        "id",
        "identifier",
        "limit",
        "updatedAt"
      ])
      expect(literal.body.hits).toBe(0)
      expect(literal.body).toMatchObject({
        id: set.body.overrideId,
        identifier: "user_*",
        limit: 10,
        duration: 60_000,
        async: true
      })
      expectError(
        yield* get("getOverride", { namespaceId: "rlns_a1", identifier: "user_42" }, keys.overrideReader),
        404,
        "NOT_FOUND",
        /no override for "user_42"/
      )
      const resolved = yield* get(
        "getOverride",
        { namespaceName: "email", identifier: "user_42", resolve: "true" },
        keys.overrideReaderOne
      )
      expect(resolved.body.id).toBe(set.body.overrideId)
      expectError(
        yield* get("getOverride", { namespaceId: "rlns_a1", identifier: "zzz", resolve: "true" }, keys.overrideReader),
        404,
        "NOT_FOUND",
        /no override applies/
      )
      expectError(
        yield* get("getOverride", { namespaceId: "rlns_a1", identifier: "x", resolve: "yes" }, keys.overrideReader),
        400,
        "BAD_REQUEST",
        /^resolve: must be true or false/
      )
      expectError(
        yield* get("getOverride", { identifier: "x" }, keys.overrideReader),
        400,
        "BAD_REQUEST",
        /either namespaceId or namespaceName/
      )
    }))

  it.effect("checks read, delete and limit permissions, before looking anything up", () =>
    Effect.gen(function*() {
      expectError(
        yield* get("getOverride", { namespaceId: "rlns_a2", identifier: "abc" }, keys.overrideReaderOne),
        403,
        "INSUFFICIENT_PERMISSIONS",
        /ratelimit\.rlns_a2\.read_override/
      )
      // An unknown namespace name: 403 without the workspace-wide permission, so names do not leak.
      expectError(
        yield* get("listOverrides", { namespaceName: "nope" }, keys.overrideReaderOne),
        403,
        "INSUFFICIENT_PERMISSIONS"
      )
      expectError(
        yield* get("listOverrides", { namespaceName: "nope" }, keys.overrideReader),
        404,
        "NOT_FOUND",
        /namespaceName: no namespace "nope"/
      )
      expectError(
        yield* get("getOverride", { namespaceId: "rlns_a1", identifier: "abc" }, keys.setter),
        403,
        "INSUFFICIENT_PERMISSIONS"
      )
      expectError(
        yield* post(
          "/v1/ratelimits.deleteOverride",
          { namespaceId: "rlns_a1", identifier: "abc" },
          keys.overrideReader
        ),
        403,
        "INSUFFICIENT_PERMISSIONS",
        /delete_override/
      )
      expectError(
        yield* post(
          "/v1/ratelimits.limit",
          { namespace: "sms", identifier: "u", limit: 1, duration: 1000 },
          keys.limiterOne
        ),
        403,
        "INSUFFICIENT_PERMISSIONS",
        /ratelimit\.rlns_a2\.limit/
      )
      expectError(
        yield* post(
          "/v1/ratelimits.limit",
          { namespace: "brand-new", identifier: "u", limit: 1, duration: 1000 },
          keys.limiterOne
        ),
        403,
        "INSUFFICIENT_PERMISSIONS",
        /ratelimit\.\*\.limit/
      )
      expect(
        (yield* post(
          "/v1/ratelimits.limit",
          { namespace: "email", identifier: "u", limit: 1, duration: 1000 },
          keys.limiterOne
        )).status
      ).toBe(200)
      // 401 before 400 before 403.
      expectError(
        yield* post("/v1/ratelimits.limit", { namespace: "email", identifier: "u", limit: 0, duration: 1000 }),
        401,
        "UNAUTHORIZED"
      )
      expectError(
        yield* post(
          "/v1/ratelimits.limit",
          { namespace: "email", identifier: "u", limit: 0, duration: 1000 },
          keys.reader
        ),
        400,
        "BAD_REQUEST"
      )
      expectError(
        yield* post(
          "/v1/ratelimits.limit",
          { namespace: "email", identifier: "u", limit: 1, duration: 1000 },
          keys.reader
        ),
        403,
        "INSUFFICIENT_PERMISSIONS"
      )
    }))

  it.effect("deletes an override: 404 the second time, and it no longer applies", () =>
    Effect.gen(function*() {
      const body = { namespaceId: "rlns_a2", identifier: "sms_user", limit: 0, duration: 1000 }
      yield* post("/v1/ratelimits.setOverride", body, keys.setter)
      const blocked = yield* post("/v1/ratelimits.limit", {
        namespace: "sms",
        identifier: "sms_user",
        limit: 5,
        duration: 1000
      }, keys.limiter)
      expect(blocked.body).toMatchObject({ success: false, limit: 0 })
      expect(blocked.body.overrideId).toMatch(/^rlor_/)
      const deleted = yield* post(
        "/v1/ratelimits.deleteOverride",
        { namespaceId: "rlns_a2", identifier: "sms_user" },
        keys.overrideDeleter
      )
      expect([deleted.status, deleted.body]).toEqual([200, {}])
      expectError(
        yield* post(
          "/v1/ratelimits.deleteOverride",
          { namespaceId: "rlns_a2", identifier: "sms_user" },
          keys.overrideDeleter
        ),
        404,
        "NOT_FOUND"
      )
      const free = yield* post("/v1/ratelimits.limit", {
        namespace: "sms",
        identifier: "sms_user",
        limit: 5,
        duration: 1000
      }, keys.limiter)
      expect(free.body).toMatchObject({ success: true, limit: 5, remaining: 4 })
      expect(free.body.overrideId).toBeUndefined()
    }))

  it.effect("pages overrides over the wire", () =>
    Effect.gen(function*() {
      for (const identifier of ["p_one", "p_two", "p_three"]) {
        yield* post(
          "/v1/ratelimits.setOverride",
          { namespaceName: "paged", identifier, limit: 1, duration: 1000 },
          keys.setter
        )
      }
      const first = yield* get("listOverrides", { namespaceName: "paged", limit: "2" }, keys.overrideReader)
      expect(first.body.total).toBe(3)
      expect(first.body.overrides.map((o: { identifier: string }) => o.identifier)).toEqual(["p_one", "p_two"])
      const second = yield* get(
        "listOverrides",
        { namespaceName: "paged", limit: "2", cursor: first.body.cursor },
        keys.overrideReader
      )
      expect(second.body.overrides.map((o: { identifier: string }) => o.identifier)).toEqual(["p_three"])
      expect(second.body).not.toHaveProperty("cursor")
      expectError(
        yield* get("listOverrides", { namespaceName: "paged", limit: "101" }, keys.overrideReader),
        400,
        "BAD_REQUEST",
        /^limit: must be an integer from 1 to 100/
      )
      expectError(
        yield* get("listOverrides", { namespaceName: "paged", cursor: "garbage" }, keys.overrideReader),
        400,
        "BAD_REQUEST",
        /^cursor:/
      )
      // A cursor pages only the namespace it was returned for.
      yield* post(
        "/v1/ratelimits.setOverride",
        { namespaceName: "paged_other", identifier: "p_one", limit: 1, duration: 1000 },
        keys.setter
      )
      expectError(
        yield* get("listOverrides", { namespaceName: "paged_other", cursor: first.body.cursor }, keys.overrideReader),
        400,
        "BAD_REQUEST",
        /^cursor: was returned for another namespace/
      )
    }))

  it.effect("answers clear 400s on limit", () =>
    Effect.gen(function*() {
      const limit = (body: object) =>
        post(
          "/v1/ratelimits.limit",
          { namespace: "email", identifier: "u", limit: 1, duration: 1000, ...body },
          keys.limiter
        )
      expectError(yield* limit({ limit: 0 }), 400, "BAD_REQUEST", /^limit: must be an integer >= 1, got 0$/)
      expectError(yield* limit({ duration: 999 }), 400, "BAD_REQUEST", /^duration:/)
      expectError(yield* limit({ cost: -1 }), 400, "BAD_REQUEST", /^cost: must be an integer >= 0/)
      expectError(yield* limit({ namespace: "a*" }), 400, "BAD_REQUEST", /^namespace: must not contain \*/)
      expectError(yield* limit({ identifier: "" }), 400, "BAD_REQUEST", /^identifier:/)
      expectError(yield* limit({ extra: true }), 400, "BAD_REQUEST", /^extra: is not a known field/)
    }))

  it.effect("takes any window up to 2^53-1 ms (a yearly quota, say), and answers a reset that is a valid time", () =>
    Effect.gen(function*() {
      const YEAR = 365 * 86_400_000
      const LONGEST = Number.MAX_SAFE_INTEGER
      const set = (identifier: string, duration: number) =>
        post("/v1/ratelimits.setOverride", { namespaceName: "long", identifier, limit: 1, duration }, keys.setter)
      const limit = (identifier: string, duration: number) =>
        post("/v1/ratelimits.limit", { namespace: "long", identifier, limit: 5, duration }, keys.limiter)
      expect((yield* set("u_year", YEAR)).status).toBe(200)
      expect((yield* set("u_longest", LONGEST)).status).toBe(200)
      const yearly = yield* limit("u_year", 1000)
      expect(yearly.body).toMatchObject({ success: true, limit: 1, remaining: 0 })
      expect(yearly.body.reset - Date.now()).toBeGreaterThan(YEAR - 60_000)
      expect((yield* limit("u_year", 1000)).body).toMatchObject({ success: false, limit: 1 })
      // now + 2^53-1 is past the last date JavaScript represents: the reset is that date.
      for (
        const reset of [(yield* limit("u_longest", 1000)).body.reset, (yield* limit("u_free", LONGEST)).body.reset]
      ) {
        expect(reset).toBe(8_640_000_000_000_000)
        expect(new Date(reset).toISOString()).toBe("+275760-09-13T00:00:00.000Z")
      }
      for (const duration of [LONGEST + 1, 2 ** 60, 1.5e3 + 0.5]) {
        expectError(
          yield* set("u_bad", duration),
          400,
          "BAD_REQUEST",
          /^duration: must be an integer of milliseconds from 1000 to 9007199254740991/
        )
        expectError(
          yield* limit("u_bad", duration),
          400,
          "BAD_REQUEST",
          /^duration: must be an integer of milliseconds/
        )
      }
    }))

  it.effect("keeps workspaces apart: another workspace's namespace or override never shows or applies", () =>
    Effect.gen(function*() {
      yield* post("/v1/ratelimits.setOverride", {
        namespaceId: "rlns_b1",
        identifier: "shared_user",
        limit: 0,
        duration: 60_000
      }, keys.otherAdmin)
      expectError(
        yield* get("getOverride", { namespaceId: "rlns_b1", identifier: "shared_user" }, keys.admin),
        404,
        "NOT_FOUND"
      )
      expectError(yield* get("listOverrides", { namespaceId: "rlns_b1" }, keys.admin), 404, "NOT_FOUND")
      expectError(
        yield* post("/v1/ratelimits.deleteOverride", { namespaceId: "rlns_b1", identifier: "shared_user" }, keys.admin),
        404,
        "NOT_FOUND"
      )
      // Both workspaces have a namespace called "email"; B's override does not apply in A.
      const inA = yield* post("/v1/ratelimits.limit", {
        namespace: "email",
        identifier: "shared_user",
        limit: 3,
        duration: 1000
      }, keys.admin)
      expect(inA.body).toMatchObject({ success: true, limit: 3 })
      const inB = yield* post("/v1/ratelimits.limit", {
        namespace: "email",
        identifier: "shared_user",
        limit: 3,
        duration: 1000
      }, keys.otherAdmin)
      expect(inB.body).toMatchObject({ success: false, limit: 0 })
    }))
})

layer(TestServer.layer(MemoryStorage.layer), { excludeTestServices: true })("HTTP rate-limit analytics", (it) => {
  const analytics = (params: Record<string, string | ReadonlyArray<string>>, key: string) => {
    const search = new URLSearchParams()
    for (const [name, value] of Object.entries(params)) {
      for (const one of typeof value === "string" ? [value] : value) search.append(name, one)
    }
    return request(`/v1/analytics.getRatelimits?${search}`, { key })
  }
  const limit = (identifier: string, n: number) =>
    Effect.forEach(
      Array.from({ length: n }),
      () => post("/v1/ratelimits.limit", { namespace: "email", identifier, limit: 2, duration: 60_000 }, keys.limiter)
    )

  it.effect("counts every decision of limit, by identifier and override, and each override's hits", () =>
    Effect.gen(function*() {
      const { body: { overrideId } } = yield* post(
        "/v1/ratelimits.setOverride",
        { namespaceName: "email", identifier: "bob", limit: 10, duration: 60_000 },
        keys.admin
      )
      yield* limit("alice", 5)
      yield* limit("bob", 3)
      yield* limit("a,b", 1)
      // v2's route is the same limiter: its decisions count too.
      yield* post(
        "/v2/ratelimit.limit",
        { namespace: "email", identifier: "alice", limit: 2, duration: 60_000 },
        keys.admin
      )
      const all = yield* analytics({ namespaceName: "email" }, keys.limitReaderOne)
      expect(all.status, JSON.stringify(all.body)).toBe(200)
      expect(all.body).toEqual([{ total: 10, passed: 6, blocked: 4 }])
      const byIdentifier = yield* analytics(
        { namespaceId: "rlns_a1", groupBy: "identifier", orderBy: "blocked", order: "desc" },
        keys.limitReaderOne
      )
      expect(byIdentifier.body).toEqual([
        { identifier: "alice", total: 6, passed: 2, blocked: 4 },
        { identifier: "a,b", total: 1, passed: 1, blocked: 0 },
        { identifier: "bob", total: 3, passed: 3, blocked: 0 }
      ])
      // An identifier with a comma is one identifier; several are repeated.
      expect((yield* analytics({ namespaceName: "email", identifier: "a,b" }, keys.admin)).body).toEqual([
        { total: 1, passed: 1, blocked: 0 }
      ])
      expect((yield* analytics({ namespaceName: "email", identifier: ["a,b", "bob"] }, keys.admin)).body).toEqual([
        { total: 4, passed: 4, blocked: 0 }
      ])
      expect((yield* analytics({ namespaceName: "email", groupBy: "override,day" }, keys.admin)).body).toMatchObject([
        { overrideId, total: 3, passed: 3, blocked: 0 }
      ])
      const override = yield* get("getOverride", { namespaceName: "email", identifier: "bob" }, keys.overrideReader)
      expect(override.body).toMatchObject({ id: overrideId, hits: 3 })
      expect(override.body.lastHitAt).toBeGreaterThan(Date.now() - 60_000)
      const page = yield* get("listOverrides", { namespaceName: "email" }, keys.overrideReader)
      expect(page.body.overrides).toMatchObject([{ id: overrideId, hits: 3 }])
    }))

  it.effect("checks ratelimit.<namespaceId>.read_analytics, keeps workspaces apart, and answers clear 400s", () =>
    Effect.gen(function*() {
      expectError(
        yield* analytics({ namespaceName: "sms" }, keys.limitReaderOne),
        403,
        "INSUFFICIENT_PERMISSIONS"
      )
      expectError(yield* analytics({ namespaceId: "rlns_a1" }, keys.overrideReader), 403, "INSUFFICIENT_PERMISSIONS")
      expectError(yield* analytics({ namespaceId: "rlns_a1" }, keys.otherAdmin), 404, "NOT_FOUND")
      expect((yield* analytics({ namespaceName: "email" }, keys.otherAdmin)).body).toEqual([
        { total: 0, passed: 0, blocked: 0 }
      ])
      expectError(yield* analytics({}, keys.admin), 400, "BAD_REQUEST", /either namespaceId or namespaceName/)
      expectError(
        yield* analytics({ namespaceName: "email", groupBy: "key" }, keys.admin),
        400,
        "BAD_REQUEST",
        /^groupBy\[0\]: must be one of identifier, override, month, day, hour/
      )
      expectError(
        yield* analytics({ namespaceName: "email", orderBy: "valid" }, keys.admin),
        400,
        "BAD_REQUEST",
        /^orderBy: must be one of time, total, passed, blocked/
      )
      expectError(
        yield* analytics({ namespaceName: "email", start: "7200000", end: "0" }, keys.admin),
        400,
        "BAD_REQUEST"
      )
      expectError(yield* analytics({ namespaceName: "email", limit: "0" }, keys.admin), 400, "BAD_REQUEST")
    }))
})

layer(TestServer.layer(MemoryStorage.layer, { maxWindows: { total: 100, perOwner: 2 } }), {
  excludeTestServices: true
})("HTTP ratelimits routes, windows capped", (it) => {
  it.effect("answers 429 with Retry-After for a new window past the workspace's cap, and serves live ones", () =>
    Effect.gen(function*() {
      const limit = (identifier: string) =>
        post(
          "/v1/ratelimits.limit",
          { namespace: "capped", identifier, limit: 5, duration: 60_000 },
          keys.limiter
        )
      expect((yield* limit("u_1")).status).toBe(200)
      expect((yield* limit("u_2")).status).toBe(200)
      const refused = yield* limit("u_3")
      expect(refused.status).toBe(429)
      expect(refused.body.error.code).toBe("RATE_LIMITED")
      expect(refused.body.error.message).toMatch(/Too many rate-limit windows are live/)
      expect(refused.headers.get("retry-after")).toBe("1")
      expect((yield* limit("u_1")).body).toMatchObject({ success: true, remaining: 3 })
    }))
})
