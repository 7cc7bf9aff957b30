import { expect, layer } from "@effect/vitest"
import { MemoryStorage } from "@keymeter/storage-memory"
import * as Effect from "effect/Effect"
import { connect, type Socket } from "node:net"
import * as TestServer from "./TestServer.js"
import { BaseUrl, keys, post, request } from "./TestServer.js"

const EVENTS = 100
const body = JSON.stringify({
  verifications: Array.from(
    { length: EVENTS },
    (_, i) => ({ apiId: "api_a1", keyId: `key_${i % 5}`, outcome: "valid" })
  )
})
const total = Effect.map(
  request("/v1/analytics.getVerifications?apiId=api_a1", { key: keys.reader }),
  (reply) => reply.body[0].total as number
)

/**
 * A recordVerifications request whose body stops after a few bytes: in flight until `finish`.
 * It asks to close the connection after the answer, unless `keepAlive`.
 */
const upload = (keepAlive: boolean) =>
  Effect.gen(function*() {
    const { port } = new URL(yield* BaseUrl)
    const socket = yield* Effect.acquireRelease(
      Effect.async<Socket>((resume) => {
        const socket: Socket = connect(Number(port), "127.0.0.1", () => resume(Effect.succeed(socket)))
      }),
      (socket) => Effect.sync(() => socket.destroy())
    )
    socket.write(
      `POST /v1/analytics.recordVerifications HTTP/1.1\r\nHost: 127.0.0.1\r\n${
        keepAlive ? "" : "Connection: close\r\n"
      }` +
        `Authorization: Bearer ${keys.recorder}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n` +
        body.slice(0, 10)
    )
    let answer = ""
    socket.on("data", (chunk) => (answer += chunk.toString()))
    const ended = new Promise<void>((resolve) => socket.on("close", () => resolve()))
    /** Sends the rest of the body; resolves with the status of the answer. */
    const finish = Effect.promise(async () => {
      socket.write(body.slice(10))
      await ended
      return Number(answer.slice("HTTP/1.1 ".length, "HTTP/1.1 ".length + 3))
    })
    /** Resolves with the whole answer once the server closes the connection, with no more sent. */
    const closedByServer = Effect.promise(() => ended.then(() => answer))
    return { finish, closedByServer }
  })

const slowUpload = upload(false)

layer(TestServer.layer(MemoryStorage.layer, { maxInFlight: 2 }), { excludeTestServices: true })(
  "in-flight limit",
  (it) => {
    it.scoped("answers 429 RATE_LIMITED beyond the limit, before reading the body, and frees every slot", () =>
      Effect.gen(function*() {
        const first = yield* slowUpload
        const second = yield* slowUpload
        yield* Effect.sleep("200 millis") // both requests reach their handlers
        const shed = yield* post("/v1/analytics.recordVerifications", body, keys.recorder)
        expect(shed.status).toBe(429)
        expect(shed.body.error.code).toBe("RATE_LIMITED")
        expect(shed.body.error.message).toMatch(/limit of 2 requests in flight/)
        expect(shed.body.error.requestId).toBe(shed.headers.get("x-request-id"))
        expect(shed.headers.get("retry-after")).toBe("1")
        // Slow uploads fill their own budget only: a read is served.
        expect((yield* request("/v1/analytics.getVerifications?apiId=api_a1", { key: keys.reader })).status).toBe(200)

        expect(yield* first.finish).toBe(200)
        expect(yield* second.finish).toBe(200)
        expect(yield* total).toBe(2 * EVENTS)

        // Slots come back after answers of every kind: one at a time, nothing is shed.
        for (let i = 0; i < 5; i++) {
          expect((yield* post("/v1/analytics.recordVerifications", { verifications: [] }, keys.recorder)).status).toBe(
            400
          )
          expect((yield* request("/v1/analytics.getVerifications?apiId=api_a1")).status).toBe(401)
          expect((yield* request("/v1/nothing.here")).status).toBe(404)
          expect((yield* post("/v1/analytics.recordVerifications", body, keys.recorder)).status).toBe(200)
        }
        expect(yield* total).toBe(7 * EVENTS)
      }))

    it.scoped("leaves readers served while many slow uploads with a valid key fill the upload budget", () =>
      Effect.gen(function*() {
        const uploads = yield* Effect.all(Array.from({ length: 12 }, () => slowUpload))
        yield* Effect.sleep("200 millis")
        for (let i = 0; i < 20; i++) {
          expect((yield* request("/v1/analytics.getVerifications?apiId=api_a1", { key: keys.reader })).status).toBe(200)
        }
        // Two of the twelve got slots; the other ten were answered 429 at once.
        const statuses = yield* Effect.all(uploads.map((upload) => upload.finish))
        expect(statuses.filter((status) => status === 200).length).toBe(2)
        expect(statuses.filter((status) => status === 429).length).toBe(10)
      }))

    it.scoped("closes the connection of an upload it sheds, rather than draining a slow body", () =>
      Effect.gen(function*() {
        const held = yield* Effect.all([slowUpload, slowUpload])
        yield* Effect.sleep("200 millis")
        const shed = yield* upload(true)
        // Still sending nothing more: the server answers and hangs up by itself.
        const answer = yield* shed.closedByServer.pipe(Effect.timeout("5 seconds"))
        expect(answer).toMatch(/^HTTP\/1\.1 429 /)
        expect(answer.toLowerCase()).toContain("\r\nconnection: close\r\n")
        for (const upload of held) expect(yield* upload.finish).toBe(200)
      }))
  }
)
