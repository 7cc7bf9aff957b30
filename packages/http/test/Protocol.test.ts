import { expect, layer } from "@effect/vitest"
import { MemoryStorage } from "@keymeter/storage-memory"
import * as Effect from "effect/Effect"
import { connect } from "node:net"
import * as TestServer from "./TestServer.js"
import { BaseUrl, keys, request } from "./TestServer.js"

/**
 * Sends `raw` bytes on a fresh connection, then (after `pauseMs`, if given) `rest`; resolves with
 * everything the server sent back before it closed the connection.
 */
const exchange = (raw: string, options: { readonly rest?: string; readonly pauseMs?: number } = {}) =>
  Effect.flatMap(BaseUrl, (base) =>
    Effect.promise(() =>
      new Promise<string>((resolve) => {
        let answer = ""
        const socket = connect(Number(new URL(base).port), "127.0.0.1", () => {
          socket.write(raw)
          if (options.rest !== undefined) {
            setTimeout(() => socket.writable && socket.write(options.rest!), options.pauseMs ?? 0)
          }
        })
        socket.on("data", (chunk) => (answer += chunk.toString()))
        socket.on("error", () => {})
        socket.on("close", () => resolve(answer))
      })
    ))

/** The status, the request id header and the envelope of a raw answer. */
const parse = (answer: string) => {
  const [head, body] = answer.split("\r\n\r\n")
  const status = Number(head!.split(" ")[1])
  const requestId = /^x-request-id: (\S+)$/im.exec(head!)?.[1]
  return { status, requestId, closes: /^connection: close$/im.test(head!), body: JSON.parse(body!) }
}

const expectEnvelope = (answer: string, status: number, code: string) => {
  const reply = parse(answer)
  expect(reply.status, answer).toBe(status)
  expect(reply.body.error.code).toBe(code)
  expect(reply.requestId).toMatch(/^req_[0-9A-Z]{26}$/)
  expect(reply.body.error.requestId).toBe(reply.requestId)
  expect(reply.closes).toBe(true)
  expect(reply.body.error.message).not.toMatch(/ at |\/node_modules\/|\.ts:/)
}

const HEAD = `Host: 127.0.0.1\r\nAuthorization: Bearer ${keys.admin}\r\n`

/** The start of a JSON POST to createApi, up to the headers given. */
const CREATE_API = `POST /v1/apis.createApi HTTP/1.1\r\n${HEAD}Content-Type: application/json\r\n`

layer(TestServer.layer(MemoryStorage.layer, { headersTimeoutMs: 1_000, requestTimeoutMs: 1_500 }))(
  "malformed HTTP",
  (it) => {
    it.effect("answers what Node's parser refuses in the envelope, with a request id, and closes", () =>
      Effect.gen(function*() {
        expectEnvelope(yield* exchange("GARBAGE\r\n\r\n"), 400, "BAD_REQUEST")
        expectEnvelope(
          yield* exchange(`GET /v1/analytics.getVerifications HTTP/1.1\r\n${HEAD}X-Big: ${"a".repeat(20_000)}\r\n\r\n`),
          431,
          "HEADERS_TOO_LARGE"
        )
        expectEnvelope(
          yield* exchange(
            CREATE_API +
              "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}"
          ),
          400,
          "BAD_REQUEST"
        )
        expectEnvelope(
          yield* exchange(
            CREATE_API +
              "Content-Length: abc\r\n\r\n{}"
          ),
          400,
          "BAD_REQUEST"
        )
        expectEnvelope(
          yield* exchange(
            CREATE_API +
              "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"
          ),
          400,
          "BAD_REQUEST"
        )
        // The server still serves.
        expect((yield* request("/v1/analytics.getVerifications?apiId=api_a1", { key: keys.reader })).status).toBe(200)
      }))

    it.effect("answers what Node would answer bare, or not at all, in the envelope too (a corpus of raw requests)", () =>
      Effect.gen(function*() {
        const corpus: ReadonlyArray<readonly [string, number, string]> = [
          // Node answers 417 itself to an expectation other than 100-continue.
          [
            `GET /v1/analytics.getVerifications?apiId=api_a1 HTTP/1.1\r\n${HEAD}Expect: something-else\r\n\r\n`,
            417,
            "EXPECTATION_FAILED"
          ],
          [`${CREATE_API}Expect: 200-ok\r\nContent-Length: 2\r\n\r\n{}`, 417, "EXPECTATION_FAILED"],
          // HTTP/1.1 without Host: Node answers a bare 400.
          [
            `GET /v1/analytics.getVerifications?apiId=api_a1 HTTP/1.1\r\nAuthorization: Bearer ${keys.admin}\r\n\r\n`,
            400,
            "BAD_REQUEST"
          ],
          // CONNECT: Node closes the socket without a word.
          ["CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n", 405, "METHOD_NOT_ALLOWED"],
          // Methods keymeter does not serve, known to Node or not, on known paths and others.
          [`DELETE /v1/apis.createApi HTTP/1.1\r\n${HEAD}\r\n`, 405, "METHOD_NOT_ALLOWED"],
          [`PROPFIND / HTTP/1.1\r\n${HEAD}\r\n`, 405, "METHOD_NOT_ALLOWED"],
          [`PATCH /v1/keys.updateKey HTTP/1.1\r\n${HEAD}Content-Length: 2\r\n\r\n{}`, 405, "METHOD_NOT_ALLOWED"],
          [`BREW /pot HTTP/1.1\r\n${HEAD}\r\n`, 405, "METHOD_NOT_ALLOWED"],
          ["GET /v1/analytics.getVerifications HTTP/9.9\r\nHost: x\r\n\r\n", 400, "BAD_REQUEST"],
          ["GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n", 400, "BAD_REQUEST"]
        ]
        for (const [raw, status, code] of corpus) {
          const answer = yield* exchange(raw)
          expect(answer, raw).not.toBe("")
          expectEnvelope(answer, status, code)
          if (status === 405) expect(answer).toMatch(/^allow: GET, HEAD, POST$/im)
        }
        // HTTP/1.0 may leave Host out.
        const old = parse(
          yield* exchange(
            `GET /v1/analytics.getVerifications?apiId=api_a1 HTTP/1.0\r\nAuthorization: Bearer ${keys.admin}\r\n\r\n`
          )
        )
        expect(old.status).toBe(200)
        expect((yield* request("/v1/analytics.getVerifications?apiId=api_a1", { key: keys.reader })).status).toBe(200)
      }))

    it.effect("marks every API answer not to be cached nor sniffed, and the docs not to be framed", () =>
      Effect.gen(function*() {
        const answers = [
          yield* request("/v1/analytics.getVerifications?apiId=api_a1", { key: keys.reader }),
          yield* request("/v1/analytics.getVerifications?apiId=api_a1", { key: "sk_nope" }),
          yield* request("/v1/apis.listApis", { key: keys.admin }),
          yield* request("/v1/nowhere", { key: keys.admin })
        ]
        for (const answer of answers) {
          expect(answer.headers.get("cache-control")).toBe("no-store")
          expect(answer.headers.get("x-content-type-options")).toBe("nosniff")
        }
        const raw = yield* exchange(`DELETE /v1/apis.createApi HTTP/1.1\r\n${HEAD}\r\n`)
        expect(raw).toMatch(/^cache-control: no-store$/im)
        expect(raw).toMatch(/^x-content-type-options: nosniff$/im)
        for (const page of ["/docs", "/docs/errors/BAD_REQUEST"]) {
          const docs = yield* request(page)
          expect(docs.status).toBe(200)
          expect(docs.headers.get("content-security-policy")).toMatch(/frame-ancestors 'none'/)
          expect(docs.headers.get("content-security-policy")).toMatch(/default-src 'none'/)
          expect(docs.headers.get("x-content-type-options")).toBe("nosniff")
        }
      }))

    it.effect("answers 408 to a client whose headers or body are too slow", () =>
      Effect.gen(function*() {
        // Headers that never end.
        expectEnvelope(
          yield* exchange(`GET /v1/analytics.getVerifications HTTP/1.1\r\n${HEAD}`),
          408,
          "REQUEST_TIMEOUT"
        )
        // A body that stops halfway.
        const body = JSON.stringify({ name: "slow" })
        expectEnvelope(
          yield* exchange(
            CREATE_API +
              `Content-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`
          ),
          408,
          "REQUEST_TIMEOUT"
        )
        expect((yield* request("/v1/analytics.getVerifications?apiId=api_a1", { key: keys.reader })).status).toBe(200)
      }))
  }
)
