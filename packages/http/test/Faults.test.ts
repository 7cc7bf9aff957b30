import { expect, layer } from "@effect/vitest"
import { StorageError } from "@keymeter/core/Errors"
import { VerificationStore } from "@keymeter/core/Storage"
import { MemoryCatalog, MemoryRatelimitStore, MemoryVerificationStore } from "@keymeter/storage-memory"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as TestServer from "./TestServer.js"
import { keys, post, request } from "./TestServer.js"

/** Switches that make the verification store misbehave. */
const faults = { dieOnRead: false, failOnWrite: false }

const SECRET = "/var/lib/secret/keymeter.db"

const FaultyVerifications = Layer.sync(VerificationStore, () => {
  const base = MemoryVerificationStore.make()
  return VerificationStore.of({
    append: (events, receipt) =>
      faults.failOnWrite
        ? Effect.fail(new StorageError({ message: `SQLITE_FULL: database or disk is full (${SECRET})` }))
        : base.append(events, receipt),
    findReceipt: base.findReceipt,
    aggregate: (query) =>
      faults.dieOnRead ? Effect.die(new Error(`boom while reading ${SECRET}`)) : base.aggregate(query)
  })
})

const storage = Layer.mergeAll(FaultyVerifications, MemoryRatelimitStore.layer, MemoryCatalog.layer)
const path = "/v1/analytics.getVerifications?apiId=api_a1&start=0"
const batch = { verifications: [{ apiId: "api_a1", keyId: "k", outcome: "valid" }] }

layer(
  // The failures are logged on purpose; keep the test output quiet.
  TestServer.layer(storage).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.None))),
  { excludeTestServices: true }
)("HTTP when storage fails", (it) => {
  it.effect("answers a defect with 500 in the envelope, leaking nothing, and recovers", () =>
    Effect.gen(function*() {
      faults.dieOnRead = true
      const reply = yield* request(path, { key: keys.admin })
      faults.dieOnRead = false
      expect(reply.status).toBe(500)
      expect(reply.body.error.code).toBe("INTERNAL_SERVER_ERROR")
      expect(reply.body.error.requestId).toBe(reply.headers.get("x-request-id"))
      const text = JSON.stringify(reply.body)
      expect(text).not.toContain("boom")
      expect(text).not.toContain(SECRET)
      expect(text).not.toMatch(/at .*\.ts/)
      expect((yield* request(path, { key: keys.admin })).status).toBe(200)
    }))

  it.effect("answers a failing write with 503, stores nothing of it, and recovers", () =>
    Effect.gen(function*() {
      expect((yield* post("/v1/analytics.recordVerifications", batch, keys.admin)).status).toBe(200)
      faults.failOnWrite = true
      const reply = yield* post("/v1/analytics.recordVerifications", batch, keys.admin)
      faults.failOnWrite = false
      expect(reply.status).toBe(503)
      expect(reply.body.error.code).toBe("SERVICE_UNAVAILABLE")
      expect(JSON.stringify(reply.body)).not.toContain(SECRET)
      expect((yield* request(path, { key: keys.admin })).body[0].total).toBe(1)
      expect((yield* post("/v1/analytics.recordVerifications", batch, keys.admin)).status).toBe(200)
      expect((yield* request(path, { key: keys.admin })).body[0].total).toBe(2)
    }))
})
