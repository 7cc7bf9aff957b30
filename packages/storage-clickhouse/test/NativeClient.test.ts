import { describe, expect, it } from "@effect/vitest"
import { ClickhouseTestServer } from "@keymeter/testing"
import * as Effect from "effect/Effect"
import * as net from "node:net"
import * as NativeClient from "../src/internal/NativeClient.js"

const options = (port: number, overrides: Partial<NativeClient.Options> = {}): NativeClient.Options => ({
  secure: false,
  host: "127.0.0.1",
  port,
  database: "default",
  username: "default",
  password: "",
  requestTimeoutMs: 10_000,
  ...overrides
})

/**
 * A TCP proxy in front of the test server's native port that closes, without an answer, the first
 * `resets` queries arriving on a kept connection (its third write: hello, a query, this one), as a
 * server closing an idle connection just as the client picks it does.
 */
const resettingProxy = (resets: number) =>
  Effect.acquireRelease(
    Effect.promise(() => {
      const proxy = { port: 0, resets: 0, connections: 0 }
      const sockets = new Set<net.Socket>()
      const server = net.createServer((client) => {
        proxy.connections++
        sockets.add(client)
        const upstream = net.connect(ClickhouseTestServer.nativePort!, "127.0.0.1")
        sockets.add(upstream)
        let writes = 0
        client.on("data", (chunk) => {
          if (++writes >= 3 && proxy.resets < resets) {
            proxy.resets++
            client.destroy()
            upstream.destroy()
            return
          }
          upstream.write(chunk)
        })
        upstream.on("data", (chunk) => client.write(chunk))
        client.on("error", () => upstream.destroy())
        upstream.on("error", () => client.destroy())
        client.on("close", () => upstream.destroy())
        upstream.on("close", () => client.destroy())
      })
      return new Promise<{ proxy: typeof proxy; server: net.Server; sockets: Set<net.Socket> }>((resolve) =>
        server.listen(0, "127.0.0.1", () => {
          proxy.port = (server.address() as net.AddressInfo).port
          resolve({ proxy, server, sockets })
        })
      )
    }),
    ({ server, sockets }) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          for (const socket of sockets) socket.destroy()
          server.close(() => resolve())
        })
      )
  ).pipe(Effect.map(({ proxy }) => proxy))

const numbers = (blocks: ReadonlyArray<{ readonly columns: ReadonlyArray<unknown> }>) =>
  blocks.flatMap((block) => Array.from(block.columns[0] as Float64Array))

describe.skipIf(ClickhouseTestServer.skip() !== undefined)("NativeClient against a real ClickHouse", () => {
  it.scoped("answers queries side by side on connections it keeps, each its own answer", () =>
    Effect.gen(function*() {
      const proxy = yield* resettingProxy(0)
      const client = NativeClient.make(options(proxy.port))
      yield* Effect.addFinalizer(() => Effect.sync(client.close))
      const answers = yield* Effect.promise(() =>
        Promise.all(
          Array.from(
            { length: 8 },
            (_, i) => client.select(`SELECT number * ${i} FROM system.numbers LIMIT ${1000 * (i + 1)}`)
          )
        )
      )
      answers.forEach((blocks, i) =>
        expect(numbers(blocks), `query ${i}`).toEqual(Array.from({ length: 1000 * (i + 1) }, (_, n) => n * i))
      )
      expect(proxy.connections).toBe(8)
      // One after another, a kept connection serves each.
      for (let i = 0; i < 20; i++) {
        expect(numbers(yield* Effect.promise(() => client.select(`SELECT ${i}`)))).toEqual([i])
      }
      expect(proxy.connections).toBe(8)
    }))

  it.scoped("fails with ClickHouse's exception, and serves the next query on the same connection", () =>
    Effect.gen(function*() {
      const proxy = yield* resettingProxy(0)
      const client = NativeClient.make(options(proxy.port))
      yield* Effect.addFinalizer(() => Effect.sync(client.close))
      const error = yield* Effect.promise(() => client.select("SELECT nosuch FROM system.one").catch((e) => e))
      expect(error).toBeInstanceOf(NativeClient.ServerException)
      expect((error as NativeClient.ServerException).code).toBe(47)
      expect(String(error)).toMatch(/^Error: Code: 47\. DB::Exception: .*nosuch/)
      expect(numbers(yield* Effect.promise(() => client.select("SELECT 3")))).toEqual([3])
      expect(proxy.connections).toBe(1)
    }))

  it.scoped("sends a query again when its kept connection was closed, up to three times", () =>
    Effect.gen(function*() {
      const proxy = yield* resettingProxy(NativeClient.RESENDS)
      const client = NativeClient.make(options(proxy.port))
      yield* Effect.addFinalizer(() => Effect.sync(client.close))
      for (let i = 0; i < 5; i++) {
        expect(numbers(yield* Effect.promise(() => client.select(`SELECT ${i}`)))).toEqual([i])
      }
      expect(proxy.resets).toBe(NativeClient.RESENDS)
    }))

  it.scoped("fails past its time budget, closing that connection, and serves on", () =>
    Effect.gen(function*() {
      const proxy = yield* resettingProxy(0)
      const client = NativeClient.make(options(proxy.port, { requestTimeoutMs: 300 }))
      yield* Effect.addFinalizer(() => Effect.sync(client.close))
      const started = performance.now()
      yield* Effect.promise(() => expect(client.select("SELECT sleep(2)")).rejects.toThrow(/Timeout/))
      expect(performance.now() - started).toBeLessThan(1500)
      expect(numbers(yield* Effect.promise(() => client.select("SELECT 4")))).toEqual([4])
      expect(proxy.connections).toBe(2)
    }))

  it.effect("refuses wrong credentials and an unreachable server with their causes", () =>
    Effect.promise(async () => {
      const wrong = NativeClient.make(options(ClickhouseTestServer.nativePort!, { password: "not-it" }))
      await expect(wrong.select("SELECT 1")).rejects.toThrow(/Code: \d+\. DB::Exception: .*(password|Authentication)/i)
      wrong.close()
      const free = await new Promise<number>((resolve) => {
        const server = net.createServer().listen(0, "127.0.0.1", () => {
          const { port } = server.address() as net.AddressInfo
          server.close(() => resolve(port))
        })
      })
      const nowhere = NativeClient.make(options(free))
      await expect(nowhere.select("SELECT 1")).rejects.toMatchObject({ code: "ECONNREFUSED" })
      nowhere.close()
    }))
})
