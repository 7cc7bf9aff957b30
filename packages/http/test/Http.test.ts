import { expect, layer } from "@effect/vitest"
import { MemoryStorage } from "@keymeter/storage-memory"
import * as Effect from "effect/Effect"
import type { Reply } from "./TestServer.js"
import * as TestServer from "./TestServer.js"
import { keys, post, request } from "./TestServer.js"

const HOUR = 3_600_000
const at = (iso: string) => Date.parse(iso)
const T0 = at("2025-01-01T00:00:00Z")

/** Asserts the error envelope: code, status, request id header equal to the body's. */
const expectError = (reply: Reply, status: number, code: string, message?: RegExp) => {
  expect(reply.status, JSON.stringify(reply.body)).toBe(status)
  expect(Object.keys(reply.body)).toEqual(["error"])
  expect(Object.keys(reply.body.error).sort()).toEqual(["code", "docs", "message", "requestId"])
  expect(reply.body.error.code).toBe(code)
  expect(reply.body.error.docs).toBe(`/docs/errors/${code}`)
  expect(reply.body.error.requestId).toMatch(/^req_[0-9A-Z]{26}$/)
  expect(reply.headers.get("x-request-id")).toBe(reply.body.error.requestId)
  if (message) expect(reply.body.error.message).toMatch(message)
}

const query = (params: Record<string, string | Array<string>>) => {
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(params)) {
    for (const v of Array.isArray(value) ? value : [value]) search.append(name, v)
  }
  return `/v1/analytics.getVerifications?${search}`
}

layer(TestServer.layer(MemoryStorage.layer, { maxBodyBytes: 64 * 1024 }), { excludeTestServices: true })(
  "HTTP over a socket",
  (it) => {
    it.effect("records verifications and reads them back grouped by day", () =>
      Effect.gen(function*() {
        const recorded = yield* post("/v1/analytics.recordVerifications", {
          verifications: [
            { apiId: "api_a2", keyId: "k1", outcome: "valid", time: T0 + 13 * HOUR, tags: ["b", "a"] },
            { apiId: "api_a2", keyId: "k1", outcome: "rateLimited", time: T0 + 14 * HOUR },
            {
              apiId: "api_a2",
              keyId: "k2",
              outcome: "valid",
              time: T0 + 26 * HOUR,
              identity: { id: "i1", externalId: "user_1" }
            }
          ]
        }, keys.recorder)
        expect(recorded.status).toBe(200)
        expect(recorded.body).toEqual({ recorded: 3 })
        const days = yield* request(
          query({
            apiId: "api_a2",
            groupBy: "day",
            start: String(T0 + 13 * HOUR + 5 * 60_000),
            end: String(T0 + 26 * HOUR)
          }),
          { key: keys.reader }
        )
        expect(days.status).toBe(200)
        expect(days.headers.get("x-request-id")).toMatch(/^req_/)
        expect(days.body.map((p: any) => [p.time, p.total, p.valid, p.rateLimited])).toEqual([
          [T0, 2, 1, 1],
          [T0 + 24 * HOUR, 1, 1, 0]
        ])
        // end = 13:05 covers the whole 13:00 hour and nothing from 14:00.
        const [hour] =
          (yield* request(query({ apiId: "api_a2", start: String(T0), end: String(T0 + 13 * HOUR + 5 * 60_000) }), {
            key: keys.reader
          })).body
        expect(hour.total).toBe(1)
      }))

    it.effect("reads keyId and groupBy repeated or comma-joined (as Unkey's v1 client sends them), tags only repeated", () =>
      Effect.gen(function*() {
        const refused = yield* post("/v1/analytics.recordVerifications", {
          verifications: [{ apiId: "api_a1", keyId: "a,b", outcome: "valid", time: T0 }]
        }, keys.admin)
        expect(refused.status).toBe(400)
        expect(refused.body.error.message).toMatch(/^verifications\[0\]\.keyId: must not contain a comma/)
        yield* post("/v1/analytics.recordVerifications", {
          verifications: [
            { apiId: "api_a1", keyId: "a", outcome: "valid", time: T0, tags: ["x,y"] },
            { apiId: "api_a1", keyId: "b", outcome: "valid", time: T0, tags: ["x"] },
            { apiId: "api_a1", keyId: "c", outcome: "expired", time: T0, tags: ["x", "y"] }
          ]
        }, keys.admin)
        const total = (params: Record<string, string | Array<string>>) =>
          Effect.map(
            request(query({ apiId: "api_a1", start: "0", ...params }), { key: keys.reader }),
            (r) => r.body[0].total
          )
        expect(yield* total({ keyId: "a" })).toBe(1)
        expect(yield* total({ keyId: ["a", "b"] })).toBe(2)
        expect(yield* total({ keyId: "a,b" })).toBe(2)
        expect(yield* total({ keyId: ["a", "b,c"] })).toBe(3)
        // A tag may hold a comma: tag=x,y is the one tag "x,y"; two tags are two parameters.
        expect(yield* total({ tag: "x,y" })).toBe(1)
        expect(yield* total({ tag: ["x", "y"] })).toBe(1)
        const grouped = yield* request(
          query({ apiId: "api_a1", start: "0", groupBy: "key,day", orderBy: "total", order: "desc" }),
          { key: keys.reader }
        )
        expect(grouped.body.map((p: any) => p.keyId).sort()).toEqual(["a", "b", "c"])
        expect(grouped.body[0].time).toBe(Math.floor(T0 / 86_400_000) * 86_400_000)
        // An empty value counts as absent; so does an empty item of a comma-joined list.
        expect(yield* total({ keyId: "", end: "" })).toBe(3)
        expect(yield* total({ keyId: "a,,b," })).toBe(2)
      }))

    it.effect("answers 400 for every malformed parameter, naming it", () =>
      Effect.gen(function*() {
        const bad = (params: Record<string, string | Array<string>>) =>
          request(query({ apiId: "api_a1", ...params }), { key: keys.reader })
        expectError(yield* bad({ limit: "0" }), 400, "BAD_REQUEST", /^limit: must be an integer >= 1, got 0$/)
        for (const value of ["1e3", "12abc", "1.5", "-5", " 5", "0x10", "99999999999999999"]) {
          expectError(
            yield* bad({ start: value }),
            400,
            "BAD_REQUEST",
            /^start: must be an integer in plain decimal digits/
          )
        }
        expectError(yield* bad({ groupby: "day" }), 400, "BAD_REQUEST", /^groupby: is not a known parameter/)
        expectError(
          yield* bad({ groupBy: ["day", "hour"] }),
          400,
          "BAD_REQUEST",
          /^groupBy: at most one of hour, day, month/
        )
        expectError(yield* bad({ groupBy: ["tag", "tags"] }), 400, "BAD_REQUEST", /tag and tags cannot be combined/)
        expectError(yield* bad({ groupBy: "week" }), 400, "BAD_REQUEST", /^groupBy\[0\]: must be one of/)
        expectError(yield* bad({ orderBy: "time" }), 400, "BAD_REQUEST", /^orderBy: time needs a time unit/)
        expectError(yield* bad({ order: "up" }), 400, "BAD_REQUEST", /^order: must be asc or desc/)
        expectError(
          yield* bad({ start: "7200000", end: "3600000" }),
          400,
          "BAD_REQUEST",
          /^start: must not be after end/
        )
        expectError(yield* bad({ limit: ["1", "2"] }), 400, "BAD_REQUEST", /^limit: must be given once/)
        expectError(
          yield* request("/v1/analytics.getVerifications", { key: keys.reader }),
          400,
          "BAD_REQUEST",
          /^apiId: is required$/
        )
        expectError(yield* request(query({ apiId: "" }), { key: keys.reader }), 400, "BAD_REQUEST", /apiId/)
      }))

    it.effect("answers QUERY_TOO_LARGE when the answer would exceed the cap", () =>
      Effect.gen(function*() {
        const reply = yield* request(query({ apiId: "api_a1", groupBy: "hour", start: "0" }), { key: keys.reader })
        expectError(reply, 400, "QUERY_TOO_LARGE", /more than 100000 datapoints; narrow it/)
      }))

    it.effect("answers 401 for missing, malformed and unknown credentials", () =>
      Effect.gen(function*() {
        const path = query({ apiId: "api_a1" })
        expectError(yield* request(path), 401, "UNAUTHORIZED", /^Missing root key/)
        expectError(
          yield* request(path, { headers: { authorization: `Basic ${keys.admin}` } }),
          401,
          "UNAUTHORIZED",
          /must be: Bearer/
        )
        expectError(yield* request(path, { headers: { authorization: "Bearer" } }), 401, "UNAUTHORIZED")
        expectError(yield* request(path, { key: "sk_unknown" }), 401, "UNAUTHORIZED", /not valid/)
        expect((yield* request(path, { headers: { authorization: `bearer ${keys.admin}` } })).status).toBe(200)
      }))

    it.effect("answers 403 FORBIDDEN for disabled and expired keys", () =>
      Effect.gen(function*() {
        const path = query({ apiId: "api_a1" })
        expectError(yield* request(path, { key: keys.disabled }), 403, "FORBIDDEN", /disabled/)
        expectError(yield* request(path, { key: keys.expired }), 403, "FORBIDDEN", /expired/)
      }))

    it.effect("answers 403 INSUFFICIENT_PERMISSIONS listing the permissions that would do", () =>
      Effect.gen(function*() {
        expectError(
          yield* request(query({ apiId: "api_a2" }), { key: keys.readerOne }),
          403,
          "INSUFFICIENT_PERMISSIONS",
          /"api\.\*\.read_api", "api\.api_a2\.read_api"/
        )
        expect((yield* request(query({ apiId: "api_a1" }), { key: keys.readerOne })).status).toBe(200)
        expectError(
          yield* post("/v1/analytics.recordVerifications", {
            verifications: [
              { apiId: "api_a1", keyId: "k", outcome: "valid" },
              { apiId: "api_a2", keyId: "k", outcome: "valid" }
            ]
          }, keys.recorderOne),
          403,
          "INSUFFICIENT_PERMISSIONS",
          /api\.api_a2\.record_verifications/
        )
        expectError(
          yield* post("/v1/apis.createApi", { name: "x" }, keys.reader),
          403,
          "INSUFFICIENT_PERMISSIONS",
          /api\.\*\.create_api/
        )
        expectError(
          yield* post("/v1/ratelimits.setOverride", {
            namespaceId: "rlns_a2",
            identifier: "abc",
            limit: 1,
            duration: 1000
          }, keys.setterOne),
          403,
          "INSUFFICIENT_PERMISSIONS",
          /ratelimit\.rlns_a2\.set_override/
        )
        // Creating a namespace by name needs the workspace-wide permission.
        expectError(
          yield* post("/v1/ratelimits.setOverride", {
            namespaceName: "brand-new",
            identifier: "abc",
            limit: 1,
            duration: 1000
          }, keys.setterOne),
          403,
          "INSUFFICIENT_PERMISSIONS",
          /ratelimit\.\*\.set_override/
        )
        // The namespace permission also works when the namespace is named by name.
        expect(
          (yield* post("/v1/ratelimits.setOverride", {
            namespaceName: "email",
            identifier: "abc",
            limit: 1,
            duration: 1000
          }, keys.setterOne)).status
        )
          .toBe(200)
      }))

    it.effect("checks in order: 401, then 400, then 403, then 404", () =>
      Effect.gen(function*() {
        const invalid = query({ apiId: "api_unknown", limit: "0" })
        expectError(yield* request(invalid), 401, "UNAUTHORIZED")
        expectError(yield* request(invalid, { key: keys.nothing }), 400, "BAD_REQUEST")
        expectError(
          yield* request(query({ apiId: "api_unknown" }), { key: keys.nothing }),
          403,
          "INSUFFICIENT_PERMISSIONS"
        )
        expectError(
          yield* request(query({ apiId: "api_unknown" }), { key: keys.reader }),
          404,
          "NOT_FOUND",
          /apiId: no api "api_unknown"/
        )
        // Same order for a POST: credentials before media type, media type before permission.
        expectError(yield* request("/v1/ratelimits.setOverride", { method: "POST", body: "x" }), 401, "UNAUTHORIZED")
        expectError(
          yield* request("/v1/ratelimits.setOverride", { method: "POST", body: "x", key: keys.nothing }),
          415,
          "UNSUPPORTED_MEDIA_TYPE"
        )
        expectError(yield* post("/v1/ratelimits.setOverride", { identifier: "ab" }, keys.nothing), 400, "BAD_REQUEST")
        const unknownNs = { namespaceId: "rlns_missing", identifier: "abc", limit: 1, duration: 1000 }
        expectError(
          yield* post("/v1/ratelimits.setOverride", unknownNs, keys.setterOne),
          403,
          "INSUFFICIENT_PERMISSIONS"
        )
        expectError(
          yield* post("/v1/ratelimits.setOverride", unknownNs, keys.setter),
          404,
          "NOT_FOUND",
          /namespaceId: no namespace/
        )
        expectError(
          yield* post("/v1/analytics.recordVerifications", {
            verifications: [{ apiId: "api_zz", keyId: "k", outcome: "valid" }]
          }, keys.nothing),
          403,
          "INSUFFICIENT_PERMISSIONS"
        )
        expectError(
          yield* post("/v1/analytics.recordVerifications", {
            verifications: [{ apiId: "api_a1", keyId: "k", outcome: "valid" }, {
              apiId: "api_zz",
              keyId: "k",
              outcome: "valid"
            }]
          }, keys.recorder),
          404,
          "NOT_FOUND",
          /^verifications\[1\]\.apiId: no api "api_zz"/
        )
      }))

    it.effect("never shows another workspace's api, namespace or data", () =>
      Effect.gen(function*() {
        yield* post("/v1/analytics.recordVerifications", {
          verifications: [{ apiId: "api_b1", keyId: "secret_key", outcome: "valid", time: T0 }]
        }, keys.otherAdmin)
        // Workspace A cannot see B's api: 404, not 403, not zeros.
        expectError(yield* request(query({ apiId: "api_b1" }), { key: keys.admin }), 404, "NOT_FOUND")
        expectError(
          yield* post("/v1/analytics.recordVerifications", {
            verifications: [{ apiId: "api_b1", keyId: "k", outcome: "valid" }]
          }, keys.admin),
          404,
          "NOT_FOUND"
        )
        expectError(
          yield* post("/v1/ratelimits.setOverride", {
            namespaceId: "rlns_b1",
            identifier: "abc",
            limit: 1,
            duration: 1000
          }, keys.admin),
          404,
          "NOT_FOUND"
        )
        // B's key filtered on A's api finds nothing.
        const filtered = yield* request(query({ apiId: "api_a1", keyId: "secret_key", start: "0" }), {
          key: keys.admin
        })
        expect(filtered.body[0].total).toBe(0)
        // A namespace name resolves inside the caller's workspace only.
        const inA = yield* post("/v1/ratelimits.setOverride", {
          namespaceName: "email",
          identifier: "iso_user",
          limit: 1,
          duration: 1000
        }, keys.admin)
        const inB = yield* post("/v1/ratelimits.setOverride", {
          namespaceName: "email",
          identifier: "iso_user",
          limit: 2,
          duration: 1000
        }, keys.otherAdmin)
        expect(inA.body.overrideId).not.toBe(inB.body.overrideId)
        const inBwithId = yield* post("/v1/ratelimits.setOverride", {
          namespaceId: "rlns_b1",
          identifier: "iso_user",
          limit: 3,
          duration: 1000
        }, keys.otherAdmin)
        expect(inBwithId.body.overrideId).toBe(inB.body.overrideId)
      }))

    it.effect("sets overrides: same id on overwrite, validation without coercion", () =>
      Effect.gen(function*() {
        const body = { namespaceId: "rlns_a2", identifier: "user_*", limit: 10, duration: 60_000 }
        const first = yield* post("/v1/ratelimits.setOverride", body, keys.setter)
        expect(first.status).toBe(200)
        expect(first.body.overrideId).toMatch(/^rlor_[0-9A-Z]{26}$/)
        const again = yield* post("/v1/ratelimits.setOverride", { ...body, limit: 0, async: true }, keys.setter)
        expect(again.body).toEqual({ overrideId: first.body.overrideId })
        expectError(
          yield* post("/v1/ratelimits.setOverride", { ...body, limit: "5" }, keys.setter),
          400,
          "BAD_REQUEST",
          /^limit: must be an integer >= 0, got "5"$/
        )
        expectError(
          yield* post("/v1/ratelimits.setOverride", { ...body, limit: 1.5 }, keys.setter),
          400,
          "BAD_REQUEST",
          /^limit:/
        )
        expectError(
          yield* post("/v1/ratelimits.setOverride", { ...body, duration: 999 }, keys.setter),
          400,
          "BAD_REQUEST",
          /^duration:/
        )
        expectError(
          yield* post("/v1/ratelimits.setOverride", { ...body, identifier: "ab" }, keys.setter),
          400,
          "BAD_REQUEST",
          /^identifier:/
        )
        // JSON can carry a lone surrogate ("\ud800"); no storage could keep it as sent.
        expectError(
          yield* post("/v1/ratelimits.setOverride", { ...body, identifier: "user_\ud800" }, keys.setter),
          400,
          "BAD_REQUEST",
          /^identifier: must be well-formed Unicode, got a string with a lone UTF-16 surrogate$/
        )
        expectError(
          yield* post("/v1/ratelimits.setOverride", { ...body, extra: 1 }, keys.setter),
          400,
          "BAD_REQUEST",
          /^extra: is not a known field$/
        )
        expectError(
          yield* post("/v1/ratelimits.setOverride", { identifier: "abc", limit: 1, duration: 1000 }, keys.setter),
          400,
          "BAD_REQUEST",
          /either namespaceId or namespaceName/
        )
        expectError(
          yield* post("/v1/ratelimits.setOverride", { ...body, namespaceName: "email" }, keys.setter),
          400,
          "BAD_REQUEST",
          /^namespaceName: "email" does not name namespace rlns_a2/
        )
        expect(
          (yield* post("/v1/ratelimits.setOverride", { ...body, namespaceName: "sms" }, keys.setter)).body.overrideId
        )
          .toBe(first.body.overrideId)
      }))

    it.effect("rejects a whole batch for one bad item, naming its index", () =>
      Effect.gen(function*() {
        const before = (yield* request(query({ apiId: "api_a1", start: "0" }), { key: keys.admin })).body[0].total
        const reply = yield* post("/v1/analytics.recordVerifications", {
          verifications: [
            { apiId: "api_a1", keyId: "k", outcome: "valid" },
            { apiId: "api_a1", keyId: "k", outcome: "valid" },
            { apiId: "api_a1", keyId: "k", outcome: "valid" },
            { apiId: "api_a1", keyId: "k", outcome: "nope" }
          ]
        }, keys.recorder)
        expectError(reply, 400, "BAD_REQUEST", /^verifications\[3\]\.outcome: must be one of valid, notFound/)
        expectError(
          yield* post("/v1/analytics.recordVerifications", {
            verifications: [{ apiId: "api_a1", keyId: "k", outcome: "valid", time: Date.now() + 3_600_000 }]
          }, keys.recorder),
          400,
          "BAD_REQUEST",
          /^verifications\[0\]\.time: must be at most 60 s ahead/
        )
        expectError(
          yield* post("/v1/analytics.recordVerifications", { verifications: [] }, keys.recorder),
          400,
          "BAD_REQUEST",
          /at least 1/
        )
        expectError(
          yield* post("/v1/analytics.recordVerifications", {}, keys.recorder),
          400,
          "BAD_REQUEST",
          /^verifications: is required$/
        )
        expectError(
          yield* post("/v1/analytics.recordVerifications", [], keys.recorder),
          400,
          "BAD_REQUEST",
          /^body: must be a JSON object, got an array$/
        )
        const after = (yield* request(query({ apiId: "api_a1", start: "0" }), { key: keys.admin })).body[0].total
        expect(after).toBe(before)
      }))

    it.effect("answers 415 for a body that is not application/json", () =>
      Effect.gen(function*() {
        const path = "/v1/apis.createApi"
        const body = JSON.stringify({ name: "x" })
        expectError(
          yield* request(path, { method: "POST", body, headers: { "content-type": "text/plain" }, key: keys.admin }),
          415,
          "UNSUPPORTED_MEDIA_TYPE",
          /got "text\/plain"/
        )
        expectError(
          yield* request(path, { method: "POST", body: new Blob([body]), key: keys.admin }),
          415,
          "UNSUPPORTED_MEDIA_TYPE",
          /missing/
        )
        expect(
          (yield* request(path, {
            method: "POST",
            body,
            headers: { "content-type": "application/json; charset=utf-8" },
            key: keys.admin
          })).status
        ).toBe(200)
      }))

    it.effect("answers 413 for a body over the limit, declared or streamed", () =>
      Effect.gen(function*() {
        const big = JSON.stringify({ name: "x".repeat(70 * 1024) })
        expectError(yield* post("/v1/apis.createApi", big, keys.admin), 413, "PAYLOAD_TOO_LARGE", /at most 65536 bytes/)
        // Without Content-Length (chunked), the limit holds while reading.
        const stream = new ReadableStream({
          start(controller) {
            controller.enqueue(new TextEncoder().encode(big))
            controller.close()
          }
        })
        expectError(
          yield* request(
            "/v1/apis.createApi",
            {
              method: "POST",
              body: stream,
              headers: { "content-type": "application/json" },
              key: keys.admin,
              duplex: "half"
            } as RequestInit & { duplex: "half" }
          ),
          413,
          "PAYLOAD_TOO_LARGE"
        )
      }))

    it.effect("answers 400 for malformed JSON and an empty body", () =>
      Effect.gen(function*() {
        expectError(
          yield* post("/v1/ratelimits.setOverride", "{\"identifier\": ", keys.setter),
          400,
          "BAD_REQUEST",
          /^body: malformed JSON/
        )
        expectError(
          yield* post("/v1/ratelimits.setOverride", "", keys.setter),
          400,
          "BAD_REQUEST",
          /^body: must be a JSON object, got nothing$/
        )
        expectError(
          yield* post("/v1/ratelimits.setOverride", "null", keys.setter),
          400,
          "BAD_REQUEST",
          /^body: must be a JSON object, got null$/
        )
      }))

    it.effect("answers 400 for bodies nested deeper than 64 levels, on every POST route", () =>
      Effect.gen(function*() {
        const deep = (depth: number, leaf: string) => {
          let text = leaf
          for (let i = 0; i < depth; i++) text = i % 2 === 0 ? `[${text}]` : `{"a":${text}}`
          return text
        }
        const routes = [
          "/v1/ratelimits.setOverride",
          "/v1/ratelimits.deleteOverride",
          "/v1/ratelimits.limit",
          "/v1/apis.createApi",
          "/v1/analytics.recordVerifications"
        ]
        for (const route of routes) {
          for (const body of [deep(5000, "1"), `{"namespaceId":${deep(3000, "\"x\"")}}`]) {
            expectError(
              yield* post(route, body, keys.admin),
              400,
              "BAD_REQUEST",
              /^body: nests arrays and objects deeper than 64 levels/
            )
          }
          // A string holding brackets is not nesting.
          const reply = yield* post(route, JSON.stringify({ name: "[".repeat(100) }), keys.admin)
          expect(reply.status).not.toBe(500)
        }
        // 64 levels are accepted as JSON (and then refused by the schema, as any wrong shape).
        expectError(
          yield* post("/v1/apis.createApi", `{"name":${deep(63, "1")}}`, keys.admin),
          400,
          "BAD_REQUEST",
          /^name: /
        )
      }))

    it.effect("answers 404 for unknown routes and 405 with Allow for a wrong method", () =>
      Effect.gen(function*() {
        expectError(
          yield* request("/v1/analytics.nope", { key: keys.admin }),
          404,
          "NOT_FOUND",
          /No route for GET \/v1\/analytics.nope/
        )
        expectError(yield* request("/", {}), 404, "NOT_FOUND")
        const wrong = yield* request("/v1/ratelimits.setOverride", { key: keys.admin })
        expectError(wrong, 405, "METHOD_NOT_ALLOWED", /GET is not allowed on \/v1\/ratelimits.setOverride; use POST/)
        expect(wrong.headers.get("allow")).toBe("POST")
        const wrongGet = yield* post("/v1/analytics.getVerifications", {}, keys.admin)
        expectError(wrongGet, 405, "METHOD_NOT_ALLOWED")
        expect(wrongGet.headers.get("allow")).toBe("GET")
      }))

    it.effect("creates apis", () =>
      Effect.gen(function*() {
        const created = yield* post("/v1/apis.createApi", { name: "billing" }, keys.creator)
        expect(created.status).toBe(200)
        expect(created.body.apiId).toMatch(/^api_[0-9A-Z]{26}$/)
        expect((yield* request(query({ apiId: created.body.apiId }), { key: keys.admin })).body[0].total).toBe(0)
        expectError(
          yield* post("/v1/apis.createApi", { name: "" }, keys.creator),
          400,
          "BAD_REQUEST",
          /^name: must be a name of 1 to 255 characters/
        )
      }))

    it.effect("serves the OpenAPI document with the envelope, and offline docs", () =>
      Effect.gen(function*() {
        const spec = yield* request("/openapi.json")
        expect(spec.status).toBe(200)
        expect(spec.headers.get("x-request-id")).toMatch(/^req_/)
        const text = JSON.stringify(spec.body)
        expect(Object.keys(spec.body.paths).sort()).toEqual([
          "/v1/analytics.getRatelimits",
          "/v1/analytics.getVerifications",
          "/v1/analytics.recordVerifications",
          "/v1/apis.createApi",
          "/v1/apis.deleteApi",
          "/v1/apis.deleteKeys",
          "/v1/apis.getApi",
          "/v1/apis.listApis",
          "/v1/apis.listKeys",
          "/v1/auth.whoami",
          "/v1/identities.createIdentity",
          "/v1/identities.deleteIdentity",
          "/v1/identities.getIdentity",
          "/v1/identities.listIdentities",
          "/v1/identities.updateIdentity",
          "/v1/keys.addPermissions",
          "/v1/keys.addRoles",
          "/v1/keys.createKey",
          "/v1/keys.deleteKey",
          "/v1/keys.getKey",
          "/v1/keys.getVerifications",
          "/v1/keys.removePermissions",
          "/v1/keys.removeRoles",
          "/v1/keys.setPermissions",
          "/v1/keys.setRoles",
          "/v1/keys.updateKey",
          "/v1/keys.updateRemaining",
          "/v1/keys.verifyKey",
          "/v1/keys.whoami",
          "/v1/liveness",
          "/v1/migrations.createKeys",
          "/v1/permissions.createPermission",
          "/v1/permissions.createRole",
          "/v1/permissions.deletePermission",
          "/v1/permissions.deleteRole",
          "/v1/permissions.getPermission",
          "/v1/permissions.getRole",
          "/v1/permissions.listPermissions",
          "/v1/permissions.listRoles",
          "/v1/ratelimits.deleteOverride",
          "/v1/ratelimits.getOverride",
          "/v1/ratelimits.limit",
          "/v1/ratelimits.listNamespaces",
          "/v1/ratelimits.listOverrides",
          "/v1/ratelimits.setOverride",
          "/v2/analytics.getRatelimits",
          "/v2/analytics.getVerifications",
          "/v2/apis.createApi",
          "/v2/apis.deleteApi",
          "/v2/apis.getApi",
          "/v2/apis.listKeys",
          "/v2/identities.createIdentity",
          "/v2/identities.deleteIdentity",
          "/v2/identities.getIdentity",
          "/v2/identities.listIdentities",
          "/v2/identities.updateIdentity",
          "/v2/keys.addPermissions",
          "/v2/keys.addRoles",
          "/v2/keys.createKey",
          "/v2/keys.deleteKey",
          "/v2/keys.getKey",
          "/v2/keys.migrateKeys",
          "/v2/keys.removePermissions",
          "/v2/keys.removeRoles",
          "/v2/keys.rerollKey",
          "/v2/keys.setPermissions",
          "/v2/keys.setRoles",
          "/v2/keys.updateCredits",
          "/v2/keys.updateKey",
          "/v2/keys.verifyKey",
          "/v2/keys.whoami",
          "/v2/permissions.createPermission",
          "/v2/permissions.createRole",
          "/v2/permissions.deletePermission",
          "/v2/permissions.deleteRole",
          "/v2/permissions.getPermission",
          "/v2/permissions.getRole",
          "/v2/permissions.listPermissions",
          "/v2/permissions.listRoles",
          "/v2/ratelimit.deleteOverride",
          "/v2/ratelimit.getOverride",
          "/v2/ratelimit.limit",
          "/v2/ratelimit.listOverrides",
          "/v2/ratelimit.multiLimit",
          "/v2/ratelimit.setOverride"
        ])
        expect(text).not.toContain("HttpApiDecodeError")
        expect(text).not.toContain("_tag")
        const responses = spec.body.paths["/v1/ratelimits.setOverride"].post.responses
        expect(Object.keys(responses).sort()).toEqual([
          "200",
          "400",
          "401",
          "403",
          "404",
          "409",
          "413",
          "415",
          "422",
          "429",
          "500",
          "503"
        ])
        // /v2 documents Unkey v2's problem body: 400s with their issues, and where problem+json is sent.
        const createKey = JSON.stringify(spec.body.paths["/v2/keys.createKey"].post.responses)
        expect(createKey).toContain("\"required\":[\"title\",\"detail\",\"status\",\"type\",\"errors\"]")
        expect(JSON.stringify(spec.body.paths["/v2/identities.deleteIdentity"].post.responses["404"]))
          .toContain("application/problem+json")
        // The writes document the Idempotency-Key header.
        for (const path of ["/v1/analytics.recordVerifications", "/v1/ratelimits.setOverride", "/v1/apis.createApi"]) {
          const parameters: Array<{ name: string; in: string }> = spec.body.paths[path].post.parameters ?? []
          expect(parameters.map((p) => `${p.in}:${p.name}`), path).toContain("header:idempotency-key")
        }
        const docs = yield* request("/docs")
        expect(docs.status).toBe(200)
        expect(docs.body).toContain("swagger-ui")
        expect(docs.body).not.toMatch(/<script[^>]+src=["']https?:/)
        const page = yield* request("/docs/errors/QUERY_TOO_LARGE")
        expect(page.status).toBe(200)
        expect(page.body).toContain("datapoint cap")
        expectError(yield* request("/docs/errors/NOPE"), 404, "NOT_FOUND")
      }))
  }
)
