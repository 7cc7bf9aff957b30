import { describe, expect, it } from "@effect/vitest"
import { ClickhouseTestServer } from "@keymeter/testing"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as http from "node:http"
import type { Socket } from "node:net"
import * as Connection from "../src/internal/Connection.js"
import * as Database from "../src/internal/Database.js"
import * as Select from "../src/internal/Select.js"

/**
 * An HTTP proxy in front of the test server that drops, without an answer, the first `resets`
 * requests arriving on a kept-alive connection, as a server does when its keep-alive timeout closes
 * a socket the client has just picked for its next request.
 */
const resettingProxy = (resets: number) =>
  Effect.acquireRelease(
    Effect.promise(() => {
      const target = new URL(ClickhouseTestServer.url!)
      const served = new WeakMap<Socket, number>()
      const proxy = { url: "", resets: 0, requests: 0 }
      const server = http.createServer((request, response) => {
        const before = served.get(request.socket) ?? 0
        served.set(request.socket, before + 1)
        proxy.requests++
        if (before > 0 && proxy.resets < resets) {
          proxy.resets++
          request.socket.destroy()
          return
        }
        const upstream = http.request({
          hostname: target.hostname,
          port: target.port,
          path: request.url,
          method: request.method,
          headers: { ...request.headers, connection: "keep-alive" }
        }, (answer) => {
          const { connection: _, "keep-alive": __, ...headers } = answer.headers
          response.writeHead(answer.statusCode!, headers)
          answer.pipe(response)
        })
        upstream.on("error", () => response.destroy())
        request.pipe(upstream)
      })
      return new Promise<{ readonly proxy: typeof proxy; readonly server: http.Server }>((resolve) =>
        server.listen(0, "127.0.0.1", () => {
          proxy.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`
          resolve({ proxy, server })
        })
      )
    }),
    ({ server }) =>
      Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve()))).pipe(
        Effect.zipLeft(Effect.sync(() => server.closeAllConnections()), { concurrent: true })
      )
  ).pipe(Effect.map(({ proxy }) => proxy))

describe.skipIf(ClickhouseTestServer.skip() !== undefined)(
  "Connection against a server that resets connections",
  () => {
    it.scoped("migrates a new database though kept-alive connections are reset under it", () =>
      Effect.gen(function*() {
        const proxy = yield* resettingProxy(Connection.RESENDS)
        const url = yield* ClickhouseTestServer.freshDatabase({ through: proxy.url })
        const { db } = yield* Database.open({ url })
        // Every reset landed on some statement; each was sent again.
        expect(proxy.resets).toBe(Connection.RESENDS)
        const tables = yield* db.query("SELECT name FROM system.tables WHERE database = currentDatabase()")
        expect(tables.map(([name]) => name)).toContain("verifications")
      }))

    it.scoped("sends a SELECT again after a reset, up to three times", () =>
      Effect.gen(function*() {
        const proxy = yield* resettingProxy(3)
        const db = Connection.make({ url: proxy.url, database: "default" })
        yield* Effect.addFinalizer(() => db.close)
        for (let i = 0; i < 5; i++) expect(yield* db.query(`SELECT ${i}`)).toEqual([[i]])
        expect(proxy.resets).toBe(3)
      }))

    it.scoped("does not send again a statement that is not marked idempotent", () =>
      Effect.gen(function*() {
        const proxy = yield* resettingProxy(1)
        const db = Connection.make({ url: proxy.url, database: "default" })
        yield* Effect.addFinalizer(() => db.close)
        yield* db.command("SELECT 1")
        const exit = yield* Effect.exit(db.command("SELECT 2"))
        expect(proxy.resets).toBe(1)
        expect(Exit.isFailure(exit) && JSON.stringify(exit.cause)).toMatch(/ClickHouse is unreachable/)
        yield* db.command("SELECT 3", { resend: true })
        expect(proxy.requests).toBe(3)
      }))
  }
)

describe.skipIf(ClickhouseTestServer.skip() !== undefined)("Connection's block answers", () => {
  for (const transport of ["http", "native"] as const) {
    it.scoped(`${transport}: an error midway fails the read, before or after the answer outgrew the memory buffer`, () =>
      Effect.gen(function*() {
        const db = Connection.make({
          url: ClickhouseTestServer.url!,
          database: "default",
          nativePort: transport === "native" ? ClickhouseTestServer.nativePort : undefined
        })
        yield* Effect.addFinalizer(() => db.close)
        const rows = 400_000
        // 9 bytes a row (UInt64, UInt8): 3.6 MB in all, past HTTP's buffer after ~116k rows, and
        // several blocks of 65,536 rows.
        const whole = yield* db.queryBlocks(
          `SELECT number, throwIf(number > ${rows * 10}) FROM system.numbers LIMIT ${rows}`
        )
        expect(whole.length).toBeGreaterThan(1)
        let sum = 0
        for (const block of whole) for (const n of block.columns[0] as Float64Array) sum += n
        expect(sum).toBe((rows * (rows - 1)) / 2)
        expect(rows * 9).toBeGreaterThan(Select.ANSWER_BUFFER_BYTES)
        for (const failAt of [1_000, rows - 1]) {
          const exit = yield* Effect.exit(
            db.queryBlocks(`SELECT number, throwIf(number = ${failAt}) FROM system.numbers LIMIT ${rows}`)
          )
          expect(Exit.isFailure(exit) && JSON.stringify(exit.cause), `failing at row ${failAt}`).toMatch(
            /ClickHouse: Code: 395/
          )
        }
        // The connection serves on after a failed read.
        expect((yield* db.queryBlocks("SELECT toUInt8(5)"))[0]!.columns[0]).toEqual(Float64Array.of(5))
      }))
  }
})
