/**
 * The Node `http.Server` keymeter serves on: deadlines for headers and for the whole request, and
 * what Node's parser refuses (malformed HTTP, headers over 16 KiB, a client too slow) answered in
 * the error envelope with an `X-Request-Id`, then the connection closed. Without this, Node writes
 * a bare 400/408/431 or resets the socket. Likewise `Expect` other than 100-continue (417),
 * `CONNECT` and any method keymeter serves on no route (405), and HTTP/1.1 without `Host` (400).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { Duplex } from "node:stream"
import type { Code } from "./Errors.js"
import { body, Codes } from "./Errors.js"
import { docsBase, makeRequestId } from "./RequestContext.js"
import * as SafeHeaders from "./SafeHeaders.js"

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

/** The methods keymeter serves; any other is answered 405 whatever the path. */
export const ALLOW = "GET, HEAD, POST"
const SERVED = new Set(["GET", "HEAD", "POST"])

const methodRefused = (method: string) => ({
  code: "METHOD_NOT_ALLOWED" as const,
  message: `${method.slice(0, 32)} is not served here; use ${ALLOW}`
})

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
  405: "Method Not Allowed",
  408: "Request Timeout",
  417: "Expectation Failed",
  431: "Request Header Fields Too Large"
}

/** An answer in the envelope, written on the socket itself, then the connection closed. */
const endSocket = (socket: Duplex, docsUrl: string, code: Code, message: string) => {
  const status = Codes[code].status
  const requestId = makeRequestId()
  const json = JSON.stringify(body(code, message, { requestId, docsUrl }))
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? "Error"}\r\n` +
      "content-type: application/json\r\n" +
      Object.entries(SafeHeaders.API).map(([name, value]) => `${name}: ${value}\r\n`).join("") +
      `content-length: ${Buffer.byteLength(json)}\r\n` +
      `x-request-id: ${requestId}\r\n` +
      (status === 405 ? `allow: ${ALLOW}\r\n` : "") +
      "connection: close\r\n\r\n" + json
  )
  // What the client still sends (the rest of an oversized header, say) is read and dropped until
  // it closes its side: a socket closed with unread data is reset, and a reset can reach the
  // client before the answer does. Its reading ends with the client, or after a grace period.
  socket.removeAllListeners("data")
  socket.resume()
  setTimeout(() => socket.destroy(), DRAIN_MS).unref()
}

/** Longest an answered connection is kept reading what its client still sends. */
const DRAIN_MS = 2_000

/** An answer in the envelope to a request Node parsed, then the connection closed. */
const endResponse = (res: ServerResponse, docsUrl: string, code: Code, message: string) => {
  const requestId = makeRequestId()
  const json = JSON.stringify(body(code, message, { requestId, docsUrl }))
  res.shouldKeepAlive = false
  res.writeHead(Codes[code].status, {
    ...SafeHeaders.API,
    "content-type": "application/json",
    "content-length": Buffer.byteLength(json),
    "x-request-id": requestId,
    ...(code === "METHOD_NOT_ALLOWED" ? { allow: ALLOW } : {}),
    connection: "close"
  })
  res.end(json)
}

/** Answers a request Node's parser refused, in the envelope, and closes the connection. */
const onClientError = (docsUrl: string) => (error: NodeJS.ErrnoException, socket: Duplex) => {
  if (error.code === "ECONNRESET" || !socket.writable) return socket.destroy()
  // A request line of a method Node does not know ("BREW /pot HTTP/1.1") is refused as a method.
  const line = /^([A-Z][A-Z0-9_-]{0,31}) \S+ HTTP\/1\.[01]\r?\n/.exec(
    error.code === "HPE_INVALID_METHOD" ? String((error as { rawPacket?: unknown }).rawPacket ?? "") : ""
  )
  const { code, message } = line !== null ? methodRefused(line[1]!) : answerOf(error)
  endSocket(socket, docsUrl, code, message)
}

/**
 * What no route of keymeter should see, answered in the envelope: a method it serves on no route
 * (405) and an HTTP/1.1 request without `Host` (400; the server lets it through Node for this).
 * True when answered. First in the request handler, so a mounted handler refuses them too.
 */
export const screen = (docsUrl: string) => (req: IncomingMessage, res: ServerResponse): boolean => {
  const method = req.method ?? ""
  if (!SERVED.has(method)) {
    const { code, message } = methodRefused(method)
    endResponse(res, docsUrl, code, message)
    return true
  }
  if (req.headers.host === undefined && req.httpVersionMajor === 1 && req.httpVersionMinor >= 1) {
    endResponse(res, docsUrl, "BAD_REQUEST", "An HTTP/1.1 request needs a Host header")
    return true
  }
  return false
}

/** A Node server with keymeter's deadlines and protocol-error answers. */
export const make = (options: Options = {}): Server => {
  const requestTimeout = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS
  const docsUrl = docsBase(options.docsUrl)
  const server = createServer({
    // Node requires the headers' deadline to be at most the whole request's.
    headersTimeout: Math.min(options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS, requestTimeout),
    requestTimeout,
    // How often Node checks those deadlines (its default, 30 s, would let a slow client linger).
    connectionsCheckingInterval: 1_000,
    // Node would answer a bare 400; `screen` answers it in the envelope.
    requireHostHeader: false
  })
  server.on("clientError", onClientError(docsUrl))
  // With a listener, Node leaves these to us rather than answering bare (417) or closing (CONNECT).
  server.on(
    "checkExpectation",
    (req: IncomingMessage, res: ServerResponse) =>
      endResponse(res, docsUrl, "EXPECTATION_FAILED", "Only Expect: 100-continue is supported")
  )
  server.on("connect", (req: IncomingMessage, socket: Duplex) => {
    const { code, message } = methodRefused(req.method ?? "CONNECT")
    endSocket(socket, docsUrl, code, message)
  })
  return server
}
