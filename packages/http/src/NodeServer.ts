/**
 * The Node `http.Server` keymeter serves on: deadlines for headers and for the whole request, and
 * what Node's parser refuses (malformed HTTP, headers over 16 KiB, a client too slow) answered in
 * the error envelope with an `X-Request-Id`, then the connection closed. Without this, Node writes
 * a bare 400/408/431 or resets the socket.
 */
import { createServer, type Server } from "node:http"
import type { Duplex } from "node:stream"
import type { Code } from "./Errors.js"
import { body, Codes } from "./Errors.js"
import { docsBase, makeRequestId } from "./RequestContext.js"

/** Deadlines and links of the server. */
export interface Options {
  /** Time a client has to send its headers, in ms (default 10 s). */
  readonly headersTimeoutMs?: number | undefined
  /** Time a client has to send its whole request, headers and body, in ms (default 30 s). */
  readonly requestTimeoutMs?: number | undefined
  /** Base of the `docs` links in error bodies. */
  readonly docsUrl?: string | undefined
}

/** Default of {@link Options.headersTimeoutMs}. */
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000

/** Default of {@link Options.requestTimeoutMs}: a 1 MiB body at 35 KB/s still arrives in time. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000

/** What the answer to each parser error says. */
const answerOf = (error: NodeJS.ErrnoException): { readonly code: Code; readonly message: string } => {
  switch (error.code) {
    case "HPE_HEADER_OVERFLOW":
      return { code: "HEADERS_TOO_LARGE", message: "The request's headers are over 16 KiB" }
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return { code: "REQUEST_TIMEOUT", message: "The request did not arrive in time; the connection is closed" }
    case "HPE_UNEXPECTED_CONTENT_LENGTH":
    case "HPE_INVALID_CONTENT_LENGTH":
      return { code: "BAD_REQUEST", message: "Content-Length is invalid, repeated, or given with chunked encoding" }
    case "HPE_INVALID_CHUNK_SIZE":
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
    case "HPE_INVALID_TRANSFER_ENCODING":
      return { code: "BAD_REQUEST", message: "The chunked body is malformed" }
    default:
      return { code: "BAD_REQUEST", message: "The request is not valid HTTP/1.1" }
  }
}

const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: "Bad Request",
  408: "Request Timeout",
  431: "Request Header Fields Too Large"
}

/** Answers a request Node's parser refused, in the envelope, and closes the connection. */
const onClientError = (docsUrl: string) => (error: NodeJS.ErrnoException, socket: Duplex) => {
  if (error.code === "ECONNRESET" || !socket.writable) return socket.destroy()
  const { code, message } = answerOf(error)
  const status = Codes[code].status
  const requestId = makeRequestId()
  const json = JSON.stringify(body(code, message, { requestId, docsUrl }))
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? "Error"}\r\n` +
      "content-type: application/json\r\n" +
      `content-length: ${Buffer.byteLength(json)}\r\n` +
      `x-request-id: ${requestId}\r\n` +
      "connection: close\r\n\r\n" + json
  )
}

/** A Node server with keymeter's deadlines and protocol-error answers. */
export const make = (options: Options = {}): Server => {
  const requestTimeout = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS
  const server = createServer({
    // Node requires the headers' deadline to be at most the whole request's.
    headersTimeout: Math.min(options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS, requestTimeout),
    requestTimeout,
    // How often Node checks those deadlines (its default, 30 s, would let a slow client linger).
    connectionsCheckingInterval: 1_000
  })
  server.on("clientError", onClientError(docsBase(options.docsUrl)))
  return server
}
