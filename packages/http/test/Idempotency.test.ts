/**
 * `Idempotency-Key` on the wire, on memory and on SQLite: a retry after an answer, a retry after
 * the connection was cut before the answer, the same key with another body, many requests with one
 * key at once, bad keys, and the window.
 */
import { describe, expect, layer, type Vitest } from "@effect/vitest"
import { MemoryStorage } from "@keymeter/storage-memory"
import { SqliteStorage } from "@keymeter/storage-sqlite"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import { mkdtempSync } from "node:fs"
import { connect } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as TestServer from "./TestServer.js"
import { BaseUrl, keys, request } from "./TestServer.js"

const RECORD = "/v1/analytics.recordVerifications"

const batch = (keyId: string, n: number) => ({
  verifications: Array.from({ length: n }, (_, i) => ({ apiId: "api_a1", keyId, outcome: "valid", time: i }))
})

/** POSTs `body` with an `Idempotency-Key` (raw header values, so doubled and quoted ones too). */
const keyed = (path: string, body: unknown, key: string | ReadonlyArray<string>, root: string = keys.admin) => {
  const headers = new Headers({ "content-type": "application/json" })
  for (const value of typeof key === "string" ? [key] : key) headers.append("idempotency-key", value)
  return request(path, { method: "POST", headers, body: JSON.stringify(body), key: root })
}

const total = (keyId: string) =>
  Effect.map(
    request(`/v1/analytics.getVerifications?apiId=api_a1&keyId=${keyId}`, { key: keys.reader }),
    (reply) => reply.body[0].total as number
  )

/** Sends a keyed request over a raw socket and hangs up as soon as it is written, before any answer. */
const sendAndHangUp = (path: string, body: unknown, key: string) =>
  Effect.gen(function*() {
    const { port } = new URL(yield* BaseUrl)
    const text = JSON.stringify(body)
    yield* Effect.async<void>((resume) => {
      const socket = connect(Number(port), "127.0.0.1", () => {
        socket.end(
          `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${keys.admin}\r\n` +
            `Content-Type: application/json\r\nIdempotency-Key: ${key}\r\nContent-Length: ${
              Buffer.byteLength(text)
            }\r\n\r\n` +
            text,
          () => {
            socket.destroy()
            resume(Effect.void)
          }
        )
      })
    })
  })

const suite = (it: Vitest.MethodsNonLive<BaseUrl>) => {
  it.effect("answers a retry of an answered batch with the same answer, and stores it once", () =>
    Effect.gen(function*() {
      const first = yield* keyed(RECORD, batch("k_retry", 3), "retry-1")
      const second = yield* keyed(RECORD, batch("k_retry", 3), "retry-1")
      expect([first.status, first.body]).toEqual([200, { recorded: 3 }])
      expect([second.status, second.body]).toEqual([200, { recorded: 3 }])
      expect(yield* total("k_retry")).toBe(3)
      // The IETF draft's form, a quoted string, names the same key.
      expect((yield* keyed(RECORD, batch("k_retry", 3), "\"retry-1\"")).body).toEqual({ recorded: 3 })
      expect(yield* total("k_retry")).toBe(3)
      // Without a key, the same batch is another batch.
      expect((yield* TestServer.post(RECORD, batch("k_retry", 3), keys.admin)).status).toBe(200)
      expect(yield* total("k_retry")).toBe(6)
    }))

  it.effect("stores a batch once when the connection was cut before the answer and the client retries", () =>
    Effect.gen(function*() {
      yield* sendAndHangUp(RECORD, batch("k_cut", 4), "cut-1")
      // Whether or not the first attempt was stored by now, the retry settles it: exactly once.
      const retry = yield* keyed(RECORD, batch("k_cut", 4), "cut-1")
      expect([retry.status, retry.body]).toEqual([200, { recorded: 4 }])
      // Let the first attempt finish, whichever of the two ran first.
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 200)))
      expect(yield* total("k_cut")).toBe(4)
      expect((yield* keyed(RECORD, batch("k_cut", 4), "cut-1")).body).toEqual({ recorded: 4 })
      expect(yield* total("k_cut")).toBe(4)
    }))

  it.effect("refuses the same key with another body, 422 IDEMPOTENCY_KEY_REUSED, storing nothing", () =>
    Effect.gen(function*() {
      expect((yield* keyed(RECORD, batch("k_reuse", 2), "reuse-1")).status).toBe(200)
      const other = yield* keyed(RECORD, batch("k_reuse", 5), "reuse-1")
      expect(other.status).toBe(422)
      expect(other.body.error.code).toBe("IDEMPOTENCY_KEY_REUSED")
      expect(other.body.error.message).toMatch(/^Idempotency-Key: this key was used with another request body at /)
      expect(other.body.error.requestId).toBe(other.headers.get("x-request-id"))
      // Another route under the key is another request too.
      const api = yield* keyed("/v1/apis.createApi", { name: "x" }, "reuse-1")
      expect([api.status, api.body.error.code]).toEqual([422, "IDEMPOTENCY_KEY_REUSED"])
      expect(api.body.error.message).toMatch(/used for recordVerifications/)
      expect(yield* total("k_reuse")).toBe(2)
    }))

  it.effect("stores a batch once when 20 requests with one key arrive at once; all get its answer", () =>
    Effect.gen(function*() {
      const replies = yield* Effect.all(
        Array.from({ length: 20 }, () => keyed(RECORD, batch("k_burst", 7), "burst-1")),
        { concurrency: "unbounded" }
      )
      expect(replies.map((r) => [r.status, r.body])).toEqual(replies.map(() => [200, { recorded: 7 }]))
      expect(yield* total("k_burst")).toBe(7)
    }))

  it.effect("scopes keys to the workspace", () =>
    Effect.gen(function*() {
      expect((yield* keyed(RECORD, batch("k_scope", 1), "scoped")).status).toBe(200)
      const other = yield* keyed(
        RECORD,
        { verifications: [{ apiId: "api_b1", keyId: "k_scope", outcome: "valid", time: 0 }] },
        "scoped",
        keys.otherAdmin
      )
      expect([other.status, other.body]).toEqual([200, { recorded: 1 }])
    }))

  it.effect("refuses a bad key with 400 naming the header, before storing anything", () =>
    Effect.gen(function*() {
      for (const bad of ["", "has space", "x".repeat(256), "quote\"inside", "é"]) {
        const reply = yield* keyed(RECORD, batch("k_bad", 1), bad)
        expect(reply.status, bad).toBe(400)
        expect(reply.body.error.message, bad).toMatch(/^Idempotency-Key: must be 1 to 255 visible ASCII characters/)
      }
      // Sent twice, the header's values arrive joined: refused, not half-read.
      const doubled = yield* keyed(RECORD, batch("k_bad", 1), ["a", "b"])
      expect(doubled.status).toBe(400)
      expect(yield* total("k_bad")).toBe(0)
      // The longest key is fine.
      expect((yield* keyed(RECORD, batch("k_bad", 1), "x".repeat(255))).status).toBe(200)
    }))

  it.effect("answers setOverride and createApi retries from the receipt", () =>
    Effect.gen(function*() {
      const body = { namespaceName: "email", identifier: "keyed_user", limit: 4, duration: 60_000 }
      const set = yield* keyed("/v1/ratelimits.setOverride", body, "override-1")
      expect(set.status).toBe(200)
      expect((yield* keyed("/v1/ratelimits.setOverride", body, "override-1")).body).toEqual(set.body)
      const changed = yield* keyed("/v1/ratelimits.setOverride", { ...body, limit: 9 }, "override-1")
      expect(changed.status).toBe(422)
      const read = yield* request("/v1/ratelimits.getOverride?namespaceName=email&identifier=keyed_user", {
        key: keys.admin
      })
      expect(read.body.limit).toBe(4)

      const api = yield* keyed("/v1/apis.createApi", { name: "keyed" }, "api-1")
      expect(api.status).toBe(200)
      expect((yield* keyed("/v1/apis.createApi", { name: "keyed" }, "api-1")).body).toEqual(api.body)
    }))

  it.effect("forgets a key once its window (24 hours) has passed", () =>
    Effect.gen(function*() {
      expect((yield* keyed(RECORD, batch("k_window", 2), "window-1")).status).toBe(200)
      yield* TestClock.adjust("23 hours")
      expect((yield* keyed(RECORD, batch("k_window", 2), "window-1")).body).toEqual({ recorded: 2 })
      expect(yield* total("k_window")).toBe(2)
      yield* TestClock.adjust("1 hour")
      // Remembered for exactly the window: now it is a new request, stored again.
      expect((yield* keyed(RECORD, batch("k_window", 2), "window-1")).status).toBe(200)
      expect(yield* total("k_window")).toBe(4)
    }))
}

describe("Idempotency-Key", () => {
  layer(TestServer.layer(MemoryStorage.layer))("on memory", suite)
  const filename = join(mkdtempSync(join(tmpdir(), "keymeter-idempotency-")), "k.db")
  // The window test moves the test clock a day: the writer idles by the hour rather than the second.
  layer(TestServer.layer(SqliteStorage.layer({ filename, compaction: { idleMs: 3_600_000 } })))("on SQLite", suite)
})
