import * as SqlClient from "@effect/sql/SqlClient"
import { expect, layer } from "@effect/vitest"
import { SqliteStorage } from "@keymeter/storage-sqlite"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as TestServer from "./TestServer.js"
import { keys, post, request } from "./TestServer.js"

const filename = join(mkdtempSync(join(tmpdir(), "keymeter-full-")), "keymeter.db")
const batch = (prefix: string, n: number) => ({
  verifications: Array.from({ length: n }, (_, i) => ({
    apiId: "api_a1",
    keyId: `${prefix}_${i}`,
    outcome: "valid",
    tags: [`tag_${prefix}_${i % 50}`]
  }))
})
const total = Effect.map(
  request("/v1/analytics.getVerifications?apiId=api_a1&start=0", { key: keys.admin }),
  (reply) => reply.body[0].total as number
)

layer(
  TestServer.layer(SqliteStorage.layer({ filename })).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.None))),
  { excludeTestServices: true }
)("HTTP on SQLite when the disk is full", (it) => {
  it.effect("answers 503, keeps what was stored, and recovers once there is room", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      expect((yield* post("/v1/analytics.recordVerifications", batch("before", 100), keys.admin)).status).toBe(200)
      // The disk is full: the file may not grow past its current size.
      const [[pages]] = yield* sql.unsafe("PRAGMA page_count").values
      yield* sql.unsafe(`PRAGMA max_page_count = ${pages}`)
      const full = yield* post("/v1/analytics.recordVerifications", batch("during", 5000), keys.admin)
      expect(full.status).toBe(503)
      expect(full.body.error.code).toBe("SERVICE_UNAVAILABLE")
      expect(JSON.stringify(full.body)).not.toMatch(/SQLITE|keymeter\.db|full/i)
      expect(yield* total).toBe(100)
      // Room again: the same batch goes in, once.
      yield* sql.unsafe("PRAGMA max_page_count = 1073741823")
      expect((yield* post("/v1/analytics.recordVerifications", batch("during", 5000), keys.admin)).status).toBe(200)
      expect(yield* total).toBe(5100)
    }))
})
