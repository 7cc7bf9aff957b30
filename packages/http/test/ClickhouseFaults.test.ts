import { afterAll, describe, expect, layer } from "@effect/vitest"
import { VerificationStore } from "@keymeter/core/Storage"
import { ClickhouseVerificationStore } from "@keymeter/storage-clickhouse"
import { MemoryCatalog, MemoryRatelimitStore } from "@keymeter/storage-memory"
import { ClickhouseTestServer } from "@keymeter/testing"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import { connect, createServer, type Server, type Socket } from "node:net"
import * as TestServer from "./TestServer.js"
import { keys, post, request } from "./TestServer.js"

/** A TCP proxy in front of the ClickHouse server that can be cut (an outage) and restored. */
const makeProxy = async (target: URL) => {
  const sockets = new Set<Socket>()
  let server: Server | undefined
  const listen = (port: number) =>
    new Promise<number>((resolve) => {
      server = createServer((client) => {
        const upstream = connect(Number(target.port), target.hostname)
        sockets.add(client).add(upstream)
        client.pipe(upstream).pipe(client)
        for (const socket of [client, upstream]) {
          socket.on("error", () => {
            client.destroy()
            upstream.destroy()
          })
          socket.on("close", () => sockets.delete(socket))
        }
      })
      server.listen(port, "127.0.0.1", () => resolve((server!.address() as { port: number }).port))
    })
  const port = await listen(0)
  return {
    url: `http://127.0.0.1:${port}`,
    cut: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server!.close(() => resolve())
      }),
    restore: () => listen(port).then(() => undefined)
  }
}

const skip = ClickhouseTestServer.skip()
const proxy = skip === undefined ? await makeProxy(new URL(ClickhouseTestServer.url!)) : undefined
afterAll(() => proxy?.cut())

const batch = (prefix: string, n: number) => ({
  verifications: Array.from({ length: n }, (_, i) => ({ apiId: "api_a1", keyId: `${prefix}_${i}`, outcome: "valid" }))
})
const total = Effect.map(
  request("/v1/analytics.getVerifications?apiId=api_a1&start=0", { key: keys.admin }),
  (reply) => (reply.status === 200 ? (reply.body[0]?.total ?? 0) as number : reply)
)

describe.skipIf(skip !== undefined)("ClickHouse faults", () => {
  layer(
    // Built only when the suite runs: without a server there is no proxy.
    TestServer.layer(
      Layer.suspend(() =>
        Layer.mergeAll(
          MemoryCatalog.layer,
          MemoryRatelimitStore.layer,
          Layer.scoped(
            VerificationStore,
            Effect.flatMap(
              ClickhouseTestServer.freshDatabase({ through: proxy!.url }),
              (url) => ClickhouseVerificationStore.make({ url })
            )
          )
        )
      )
    ).pipe(
      Layer.provide(Logger.minimumLogLevel(LogLevel.None))
    ),
    { excludeTestServices: true }
  )("HTTP on ClickHouse when ClickHouse is unreachable", (it) => {
    it.effect("answers 503 for reads and writes, stores nothing unacknowledged, and recovers", () =>
      Effect.gen(function*() {
        expect((yield* post("/v1/analytics.recordVerifications", batch("before", 100), keys.admin)).status).toBe(200)
        expect(yield* total).toBe(100)
        yield* Effect.promise(() => proxy!.cut())
        const read = yield* request("/v1/analytics.getVerifications?apiId=api_a1&start=0", { key: keys.admin })
        expect(read.status).toBe(503)
        expect(read.body.error.code).toBe("SERVICE_UNAVAILABLE")
        expect(JSON.stringify(read.body)).not.toMatch(/127\.0\.0\.1|ECONN|ClickHouse/i)
        const write = yield* post("/v1/analytics.recordVerifications", batch("during", 500), keys.admin)
        expect(write.status).toBe(503)
        // The catalog is elsewhere: overrides keep working during the outage.
        const override = yield* post(
          "/v1/ratelimits.setOverride",
          { namespaceName: "email", identifier: "user_1", limit: 5, duration: 60_000 },
          keys.admin
        )
        expect(override.status).toBe(200)
        yield* Effect.promise(() => proxy!.restore())
        // Only acknowledged batches count: the refused one was not stored, and can be sent again.
        expect(yield* total).toBe(100)
        expect((yield* post("/v1/analytics.recordVerifications", batch("during", 500), keys.admin)).status).toBe(200)
        expect(yield* total).toBe(600)
      }))
  })
})
