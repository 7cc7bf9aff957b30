/**
 * The server's protective limit on requests in flight. Each holds up to a body's worth of memory
 * (1 MiB by default) while it is read and stored, so a flood of large uploads could otherwise
 * exhaust the process; requests beyond the limit are answered 429 RATE_LIMITED at once, with
 * `Retry-After`, before their bodies are read.
 *
 * Requests that send a body and requests that do not have a budget each: uploads arriving slowly
 * (a body has until the request deadline, see `NodeServer`) fill only their own, and reads go on
 * being served.
 */
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import { respond } from "./Errors.js"

/** Default of the limit: far above what two cores serve concurrently, well below memory trouble. */
export const DEFAULT_MAX_IN_FLIGHT = 256

/** True when the request sends a body (a length above zero, or chunks). */
const sendsBody = (headers: Readonly<Record<string, string | undefined>>) =>
  headers["transfer-encoding"] !== undefined ||
  (headers["content-length"] !== undefined && headers["content-length"] !== "0")

/** A middleware holding its own counts: one per server. Runs inside the request context. */
export const middleware = (maxInFlight: number) => {
  const inFlight = { uploads: 0, others: 0 }
  return <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R | HttpServerRequest.HttpServerRequest> =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const budget = sendsBody(request.headers) ? "uploads" : "others"
      if (inFlight[budget] >= maxInFlight) {
        return respond(
          "RATE_LIMITED",
          `The server is at its limit of ${maxInFlight} requests in flight; retry in a second`,
          // An unread body would otherwise keep the connection busy (Node drains it) until the
          // request deadline: a slow client would hold a socket without holding a slot.
          budget === "uploads" ? { "retry-after": "1", connection: "close" } : { "retry-after": "1" }
        )
      }
      inFlight[budget]++
      return Effect.ensuring(app, Effect.sync(() => inFlight[budget]--))
    })
}
