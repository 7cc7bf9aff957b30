// Keys over the memory storage: a key's secret shown once, updates, listing, credits, permissions
// per api, and secrets kept out of logs.
import { describe, expect, it } from "@effect/vitest"
import { KeyVerifier } from "@keymeter/core/KeyVerifier"
import { RateLimiter } from "@keymeter/core/RateLimiter"
import { Catalog } from "@keymeter/core/Storage"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import { admin, setup, Test, WS } from "./KeyFixture.js"

describe("Keys", () => {
  it.effect("creates a key whose secret is shown once and never again", () =>
    Effect.gen(function*() {
      const { create, keys } = yield* setup
      const created = yield* create({ prefix: "acme", name: "first", meta: { plan: "pro" }, externalId: "user_42" })
      expect(created.keyId).toMatch(/^key_[0-9A-Z]{26}$/)
      expect(created.key).toMatch(/^acme_[1-9A-HJ-NP-Za-km-z]{20,}$/)
      const view = yield* keys.get(admin, { keyId: created.keyId })
      expect(view).toMatchObject({
        keyId: created.keyId,
        apiId: "api_a",
        start: created.key.slice(0, 9),
        name: "first",
        meta: { plan: "pro" },
        enabled: true,
        identity: { externalId: "user_42" }
      })
      expect(JSON.stringify(view)).not.toContain(created.key.slice(5))
      const other = yield* create({ externalId: "user_42" })
      expect((yield* keys.get(admin, { keyId: other.keyId })).identity).toEqual(view.identity)
      expect((yield* create({ byteLength: 64 })).key.length).toBeGreaterThan(80)
    }).pipe(Effect.provide(Test)))

  it.effect("updates, lists, changes credits, and checks permissions per api", () =>
    Effect.gen(function*() {
      const { create, keys } = yield* setup
      const first = yield* create({ name: "n", meta: { a: 1 }, credits: { remaining: 5 } })
      const updated = yield* keys.update(admin, { keyId: first.keyId, name: null, meta: null, externalId: "cust_9" })
      expect(updated.name).toBeUndefined()
      expect(updated.meta).toBeUndefined()
      expect(updated.identity?.externalId).toBe("cust_9")
      expect(updated.credits).toEqual({ remaining: 5 })
      expect(yield* keys.updateCredits(admin, { keyId: first.keyId, op: "increment", value: 3 })).toEqual({
        remaining: 8
      })
      expect(yield* keys.updateCredits(admin, { keyId: first.keyId, op: "decrement", value: 100 })).toEqual({
        remaining: 0
      })
      const cleared = yield* keys.update(admin, { keyId: first.keyId, credits: null })
      expect(cleared.credits).toBeUndefined()
      for (let i = 0; i < 4; i++) yield* create()
      const page = yield* keys.list(admin, { apiId: "api_a", limit: 3 })
      expect(page.keys).toHaveLength(3)
      expect(page.total).toBe(5)
      const rest = yield* keys.list(admin, { apiId: "api_a", limit: 3, cursor: page.cursor })
      expect(rest.keys).toHaveLength(2)
      expect(rest.cursor).toBeUndefined()
      expect((yield* keys.list(admin, { apiId: "api_a", externalId: "cust_9" })).keys.map((k) => k.keyId)).toEqual([
        first.keyId
      ])
      const bad = yield* Effect.flip(keys.list(admin, { apiId: "api_b", cursor: page.cursor }))
      expect(bad._tag).toBe("ValidationError")
      // Permissions per api: verify_key on api_b does not verify api_a's keys.
      const verifier = { workspaceId: WS, rootKeyId: "rk", permissions: ["api.api_b.verify_key"] }
      const refused = yield* Effect.flip((yield* KeyVerifier).verify(verifier, { key: (yield* create()).key }))
      expect(refused._tag).toBe("InsufficientPermissions")
      const reader = { workspaceId: WS, rootKeyId: "rk", permissions: ["api.api_a.read_key"] }
      expect((yield* keys.get(reader, { keyId: first.keyId })).keyId).toBe(first.keyId)
      expect((yield* Effect.flip(keys.delete(reader, { keyId: first.keyId })))._tag).toBe("InsufficientPermissions")
      // A key of an api the caller may not read is answered as an unknown one: alike, word for word.
      const otherApi = { workspaceId: WS, rootKeyId: "rk", permissions: ["api.api_b.read_key"] }
      const hidden = yield* Effect.flip(keys.get(otherApi, { keyId: first.keyId }))
      const unknown = yield* Effect.flip(keys.get(otherApi, { keyId: "key_nope" }))
      expect([hidden._tag, hidden.message.replace(first.keyId, "<id>")]).toEqual([
        unknown._tag,
        unknown.message.replace("key_nope", "<id>")
      ])
      expect(hidden._tag).toBe("NotFound")
      expect((yield* Effect.flip(keys.get(admin, { keyId: "key_nope" })))._tag).toBe("NotFound")
      const catalog = yield* Catalog
      expect(Option.isSome(yield* catalog.getKey(WS, first.keyId))).toBe(true)
    }).pipe(Effect.provide(Test)))

  it.effect("lets a key's limits take only from namespaces its issuer may limit in", () =>
    Effect.gen(function*() {
      const { create, keys } = yield* setup
      const limiter = yield* RateLimiter
      const catalog = yield* Catalog
      // The admin's namespace "email", with user_42's window in it.
      yield* limiter.limit(admin, { namespace: "email", identifier: "user_42", limit: 10, duration: 60_000 })
      const email = Option.getOrThrow(yield* catalog.findNamespaceByName(WS, "email"))
      const issuer = (...more: Array<string>) => ({
        workspaceId: WS,
        rootKeyId: "rk_issuer",
        permissions: ["api.api_a.create_key", "api.api_a.update_key", "api.api_a.verify_key", ...more]
      })
      const limits = (name: string) => [{ name, limit: 1_000_000, duration: 60_000, autoApply: true }]
      const refusal = (effect: Effect.Effect<unknown, { _tag: string; message: string }>) =>
        Effect.map(Effect.flip(effect), (error) => [error._tag, error.message])
      // An existing namespace needs its limit permission; a new one, ratelimit.*.limit.
      expect(yield* refusal(create({ externalId: "user_42", ratelimits: limits("email") }, issuer()))).toEqual([
        "InsufficientPermissions",
        expect.stringMatching(/ratelimit\.\*\.limit|ratelimit\.rlns_/)
      ])
      expect((yield* refusal(create({ ratelimits: limits("brand_new") }, issuer())))[0]).toBe("InsufficientPermissions")
      expect(Option.isNone(yield* catalog.findNamespaceByName(WS, "brand_new"))).toBe(true)
      // The same when limits are set by an update, or a limited key is attached to an identity.
      const plain = yield* create({}, issuer())
      expect((yield* refusal(keys.update(issuer(), { keyId: plain.keyId, ratelimits: limits("email") })))[0]).toBe(
        "InsufficientPermissions"
      )
      const allowed = issuer(`ratelimit.${email.id}.limit`)
      const limited = yield* create({ ratelimits: limits("email") }, allowed)
      expect((yield* refusal(keys.update(issuer(), { keyId: limited.keyId, externalId: "user_42" })))[0]).toBe(
        "InsufficientPermissions"
      )
      // A key without limits is attached to an identity with update_key alone.
      expect((yield* keys.update(issuer(), { keyId: plain.keyId, externalId: "user_42" })).identity?.externalId).toBe(
        "user_42"
      )
      // With the namespace's permission, all of it is allowed.
      yield* keys.update(allowed, { keyId: limited.keyId, externalId: "user_42" })
      yield* create({ ratelimits: limits("brand_new") }, issuer("ratelimit.*.limit"))
      // Nothing the refused calls did reached user_42's window in "email".
      expect(yield* limiter.limit(admin, { namespace: "email", identifier: "user_42", limit: 10, duration: 60_000 }))
        .toMatchObject({ success: true, remaining: 8 })
    }).pipe(Effect.provide(Test)))

  it.effect("keeps a key's secret out of every log line and every later answer", () => {
    const lines: Array<string> = []
    const capture = Logger.make(({ cause, message }) => {
      lines.push(`${JSON.stringify(message)} ${Cause.pretty(cause)}`)
    })
    return Effect.gen(function*() {
      const { create, keys, verify } = yield* setup
      const { key, keyId } = yield* create({ externalId: "user_log", credits: { remaining: 1 } })
      const answers = [
        yield* verify(key),
        yield* verify(key),
        yield* verify(key, { apiId: "api_b" }),
        yield* Effect.either(verify(key, { ratelimits: [{ name: "missing" }] })),
        yield* keys.get(admin, { keyId }),
        yield* keys.list(admin, { apiId: "api_a" }),
        yield* keys.update(admin, { keyId, enabled: false })
      ]
      yield* Effect.logDebug("a line, so that the capture is known to work")
      const secretPart = key.slice(-16)
      expect(lines.length).toBeGreaterThan(0)
      for (const line of lines) expect(line).not.toContain(secretPart)
      expect(JSON.stringify(answers)).not.toContain(secretPart)
    }).pipe(
      Effect.provide(Test),
      Effect.provide(Logger.replace(Logger.defaultLogger, capture)),
      Logger.withMinimumLogLevel(LogLevel.All)
    )
  })
})
