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
export const sendsBody = (headers: Readonly<Record<string, string | Array<string> | undefined>>) =>
  headers["transfer-encoding"] !== undefined ||
  (headers["content-length"] !== undefined && headers["content-length"] !== "0")

/** Which budget a request counts against. */
export type Budget = "uploads" | "others"

/** The counts of one server, shared by every path a request may take through it. */
export interface Budgets {
  readonly max: number
  /** Takes a slot of `budget`; false when it is full. */
  readonly enter: (budget: Budget) => boolean
  readonly leave: (budget: Budget) => void
}

/** Empty counts with room for `max` requests in each budget. */
export const makeBudgets = (max: number): Budgets => {
  const inFlight = { uploads: 0, others: 0 }
  return {
    max,
    enter: (budget) => {
      if (inFlight[budget] >= max) return false
      inFlight[budget]++
      return true
    },
    leave: (budget) => {
      inFlight[budget]--
    }
  }
}

/** The 429 past the limit: its message and headers. */
export const shed = (budgets: Budgets, budget: Budget) => ({
  message: `The server is at its limit of ${budgets.max} requests in flight; retry in a second`,
  // An unread body would otherwise keep the connection busy (Node drains it) until the request
  // deadline: a slow client would hold a socket without holding a slot.
  headers: budget === "uploads"
    ? { "retry-after": "1", connection: "close" } as Record<string, string>
    : { "retry-after": "1" } as Record<string, string>
})

/** A middleware on `budgets` (a number: counts of its own, one per server). Runs inside the request context. */
export const middleware = (budgets: Budgets | number) => {
  const counts = typeof budgets === "number" ? makeBudgets(budgets) : budgets
  return <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R | HttpServerRequest.HttpServerRequest> =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const budget: Budget = sendsBody(request.headers) ? "uploads" : "others"
      if (!counts.enter(budget)) {
        const { headers, message } = shed(counts, budget)
        return respond("RATE_LIMITED", message, headers)
      }
      return Effect.ensuring(app, Effect.sync(() => counts.leave(budget)))
    })
}
