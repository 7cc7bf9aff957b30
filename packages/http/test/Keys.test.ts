/**
 * The keys routes over HTTP: the walkthrough a user follows (create a key for a customer, verify
 * it, see it counted, raise its limit with an override, delete it), idempotent creation without
 * the secret kept, errors in the envelope, and the secret in no answer after creation.
 */
import { expect, layer } from "@effect/vitest"
import { MemoryStorage } from "@keymeter/storage-memory"
import * as Effect from "effect/Effect"
import * as TestServer from "./TestServer.js"
import { keys, post, request } from "./TestServer.js"

const keyed = (path: string, body: unknown, idempotencyKey: string) =>
  request(path, {
    method: "POST",
    key: keys.admin,
    headers: { "content-type": "application/json", "idempotency-key": idempotencyKey },
    body: JSON.stringify(body)
  })

layer(TestServer.layer(MemoryStorage.layer), { excludeTestServices: true })("HTTP keys routes", (it) => {
  it.effect("creates, verifies, counts, governs by override, and deletes a customer's key", () =>
    Effect.gen(function*() {
      const created = yield* post("/v1/keys.createKey", {
        apiId: "api_a1",
        prefix: "acme",
        externalId: "user_42",
        ratelimit: { limit: 1, duration: 60_000 }
      }, keys.admin)
      expect(created.status).toBe(200)
      const { key, keyId } = created.body
      expect(key).toMatch(/^acme_/)
      const verify = (body: object = {}) => post("/v1/keys.verifyKey", { key, ...body }, keys.admin)
      expect((yield* verify()).body).toMatchObject({
        valid: true,
        code: "VALID",
        keyId,
        ownerId: "user_42",
        identity: { externalId: "user_42", meta: {} },
        ratelimit: { limit: 1, remaining: 0 },
        requestId: expect.stringMatching(/^req_/)
      })
      expect((yield* verify()).body.code).toBe("RATE_LIMITED")
      // Support raises this customer's limit with one call; the next verification applies it.
      // A key's ratelimit is the limit named "default" (Unkey v1's): its namespace's overrides apply.
      yield* post("/v1/ratelimits.setOverride", {
        namespaceName: "default",
        identifier: "user_42",
        limit: 100,
        duration: 60_000
      }, keys.admin)
      expect((yield* verify()).body).toMatchObject({ code: "VALID", ratelimit: { limit: 100, remaining: 98 } })
      // Counted in analytics, by outcome and identity (events are stored in the background).
      let counted: any
      for (let i = 0; i < 50; i++) {
        counted = yield* request(`/v1/analytics.getVerifications?apiId=api_a1&externalId=user_42&groupBy=key`, {
          key: keys.admin
        })
        if (counted.body[0]?.total === 3) break
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
      }
      expect(counted.body).toMatchObject([{ keyId, total: 3, valid: 2, rateLimited: 1 }])
      // The secret is in no later answer.
      const read = yield* request(`/v1/keys.getKey?keyId=${keyId}`, { key: keys.admin })
      const listed = yield* request(`/v1/apis.listKeys?apiId=api_a1&ownerId=user_42`, { key: keys.admin })
      for (const reply of [read, listed]) {
        expect(reply.status).toBe(200)
        expect(JSON.stringify(reply.body)).not.toContain(key.slice(5))
      }
      expect(listed.body).toMatchObject({
        keys: [{ id: keyId, start: key.slice(0, 9), ownerId: "user_42", ratelimit: { async: true, limit: 1 } }],
        total: 1
      })
      expect((yield* post("/v1/keys.deleteKey", { keyId }, keys.admin)).body).toEqual({})
      expect((yield* verify()).body).toEqual({ valid: false, code: "NOT_FOUND", requestId: expect.any(String) })
    }))

  it.effect("creates once per Idempotency-Key, never keeping the secret, and moves credits once", () =>
    Effect.gen(function*() {
      const first = yield* keyed("/v1/keys.createKey", { apiId: "api_a1", remaining: 10 }, "create-1")
      const again = yield* keyed("/v1/keys.createKey", { apiId: "api_a1", remaining: 10 }, "create-1")
      expect(first.body.key).toBeDefined()
      expect(again.status).toBe(200)
      expect(again.body).toEqual({ keyId: first.body.keyId })
      const other = yield* keyed("/v1/keys.createKey", { apiId: "api_a2" }, "create-1")
      expect(other.status).toBe(422)
      const credit = { keyId: first.body.keyId, op: "increment", value: 5 }
      expect((yield* keyed("/v1/keys.updateRemaining", credit, "credit-1")).body).toEqual({ remaining: 15 })
      expect((yield* keyed("/v1/keys.updateRemaining", credit, "credit-1")).body).toEqual({ remaining: 15 })
      const read = yield* request(`/v1/keys.getKey?keyId=${first.body.keyId}`, { key: keys.admin })
      expect(read.body.remaining).toBe(15)
    }))

  it.effect("answers bad input and missing permissions in the envelope", () =>
    Effect.gen(function*() {
      const bad = yield* post("/v1/keys.createKey", { apiId: "api_a1", byteLength: 8, prefix: "no spaces" }, keys.admin)
      expect(bad.status).toBe(400)
      expect(bad.body.error.code).toBe("BAD_REQUEST")
      expect(bad.body.error.message).toMatch(/prefix: .*byteLength: must be an integer from 16 to 255/s)
      const deep = yield* post("/v1/keys.verifyKey", {
        key: "x",
        authorization: {
          permissions: {
            and: [{ and: [{ and: [{ and: [{ and: [{ and: [{ and: [{ and: [{ and: ["p"] }] }] }] }] }] }] }] }]
          }
        }
      }, keys.admin)
      expect(deep.status).toBe(400)
      expect(deep.body.error.message).toMatch(/authorization\.permissions: must nest at most 8 levels/)
      const refused = yield* post("/v1/keys.createKey", { apiId: "api_a1" }, keys.reader)
      expect(refused.status).toBe(403)
      expect(refused.body.error.code).toBe("INSUFFICIENT_PERMISSIONS")
      const missing = yield* post("/v1/keys.verifyKey", { key: "x", apiId: "api_nope" }, keys.admin)
      expect(missing.status).toBe(404)
      const unknownKey = yield* request("/v1/keys.getKey?keyId=key_nope", { key: keys.admin })
      expect(unknownKey.status).toBe(404)
    }))

  it.effect("disables a customer: every key of its identity verifies as UNAUTHORIZED until enabled again", () =>
    Effect.gen(function*() {
      const first = (yield* post("/v1/keys.createKey", { apiId: "api_a1", externalId: "user_77" }, keys.admin)).body
      const second = (yield* post("/v1/keys.createKey", { apiId: "api_a1", externalId: "user_77" }, keys.admin)).body
      const other = (yield* post("/v1/keys.createKey", { apiId: "api_a1", externalId: "user_78" }, keys.admin)).body
      const code = (key: string) =>
        Effect.map(post("/v1/keys.verifyKey", { key }, keys.admin), (reply) => reply.body.code)
      // Remembered first (the answers come from memory), then changed.
      expect([yield* code(first.key), yield* code(second.key), yield* code(other.key)]).toEqual([
        "VALID",
        "VALID",
        "VALID"
      ])
      const identity = yield* request("/v1/identities.getIdentity?externalId=user_77", { key: keys.admin })
      expect(identity.status).toBe(200)
      expect(identity.body).toMatchObject({ id: expect.stringMatching(/^id_/), externalId: "user_77", enabled: true })
      const disabled = yield* post(
        "/v1/identities.updateIdentity",
        { externalId: "user_77", enabled: false },
        keys.admin
      )
      expect(disabled.body).toEqual({ ...identity.body, enabled: false })
      expect([yield* code(first.key), yield* code(second.key), yield* code(other.key)]).toEqual([
        "UNAUTHORIZED",
        "UNAUTHORIZED",
        "VALID"
      ])
      yield* post("/v1/identities.updateIdentity", { externalId: "user_77", enabled: true }, keys.admin)
      expect(yield* code(first.key)).toBe("VALID")
      // Unknown identities, bad bodies and missing permissions.
      const unknown = yield* post("/v1/identities.updateIdentity", { externalId: "nobody", enabled: false }, keys.admin)
      expect(unknown.status).toBe(404)
      expect(unknown.body.error.message).toMatch(/^externalId: no identity "nobody"/)
      const bad = yield* post("/v1/identities.updateIdentity", { externalId: "user_77", enabled: "no" }, keys.admin)
      expect(bad.status).toBe(400)
      expect(bad.body.error.message).toMatch(/^enabled: must be true or false/)
      const refused = yield* post(
        "/v1/identities.updateIdentity",
        { externalId: "user_77", enabled: false },
        keys.reader
      )
      expect(refused.status).toBe(403)
      const unread = yield* request("/v1/identities.getIdentity?externalId=user_77", { key: keys.reader })
      expect(unread.status).toBe(403)
      expect(yield* code(first.key)).toBe("VALID")
    }))

  it.effect("auth.whoami answers the calling key's workspace, id and permissions; a bad key is a 401", () =>
    Effect.gen(function*() {
      const me = yield* request("/v1/auth.whoami", { key: keys.reader })
      expect(me.status).toBe(200)
      expect(me.body).toEqual({
        workspaceId: expect.any(String),
        rootKeyId: expect.any(String),
        permissions: ["api.*.read_api"]
      })
      expect((yield* request("/v1/auth.whoami", { key: "sk_unknown" })).status).toBe(401)
    }))
})
