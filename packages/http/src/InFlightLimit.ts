/**
 * The server's protective limit: at most so many requests in flight. Each holds up to a body's
 * worth of memory (1 MiB by default) while it is read and stored, so a flood of large uploads
 * could otherwise exhaust the process; requests beyond the limit are answered 429 RATE_LIMITED
 * at once, with `Retry-After`, before their bodies are read.
 */
import type * as HttpApp from "@effect/platform/HttpApp"
import * as Effect from "effect/Effect"
import { respond } from "./Errors.js"

/** Default of the limit: far above what two cores serve concurrently, well below memory trouble. */
export const DEFAULT_MAX_IN_FLIGHT = 256

/** A middleware holding its own count: one per server. Runs inside the request context. */
export const middleware = (maxInFlight: number) => {
  let inFlight = 0
  return <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
    Effect.suspend(() => {
      if (inFlight >= maxInFlight) {
        return respond(
          "RATE_LIMITED",
          `The server is at its limit of ${maxInFlight} requests in flight; retry in a second`,
          { "retry-after": "1" }
        )
      }
      inFlight++
      return Effect.ensuring(app, Effect.sync(() => inFlight--))
    })
}
