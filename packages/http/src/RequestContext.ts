/**
 * Per-request values that the HTTP machinery itself must read (error encoding runs outside the
 * handlers): the request id and the base URL of the error documentation. They live in a FiberRef
 * set by the outermost middleware.
 */
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Ids from "@keymeter/core/Ids"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import { globalValue } from "effect/GlobalValue"
import * as SafeHeaders from "./SafeHeaders.js"
import * as Problem from "./v2/Problem.js"

/** What every response and error body of one request refers to. */
export interface RequestContext {
  readonly requestId: string
  /** Base of the `docs` links in error bodies, without a trailing slash. */
  readonly docsUrl: string
  /** The envelope its errors are answered in: the dialect of its path. */
  readonly dialect: Problem.Dialect
}

/** The current request's context; outside a request, a placeholder. */
export const CurrentRequestContext = globalValue(
  Symbol.for("@keymeter/http/CurrentRequestContext"),
  () => FiberRef.unsafeMake<RequestContext>({ requestId: "req_unknown", docsUrl: "/docs", dialect: "v1" })
)

/** Reads the current request's context. */
export const current: Effect.Effect<RequestContext> = FiberRef.get(CurrentRequestContext)

/** The base of the `docs` links for a configured `docsUrl` (default `/docs`), without a trailing slash. */
export const docsBase = (docsUrl: string | undefined): string => (docsUrl ?? "/docs").replace(/\/+$/, "")

/** A new request id. */
export const makeRequestId = (): string => Ids.make(Ids.Prefix.request)

/**
 * The outermost middleware: gives the request an id, sets `X-Request-Id` on whatever response
 * leaves, and scopes the context to the request fiber. The router writes its responses before
 * this middleware regains control, hence the pre-response handler; a response made in front of
 * the router (the in-flight limit's) comes back here and gets the header directly.
 */
export const middleware =
  (options: { readonly docsUrl: string }) =>
  <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R | HttpServerRequest.HttpServerRequest> =>
    Effect.gen(function*() {
      const requestId = makeRequestId()
      const dialect = Problem.dialectOf((yield* HttpServerRequest.HttpServerRequest).url.split("?")[0]!)
      yield* HttpApp.appendPreResponseHandler((request, response) =>
        Effect.succeed(HttpServerResponse.setHeaders(response, {
          ...SafeHeaders.of(request.url.split("?")[0]!),
          "x-request-id": requestId,
          // Every 429 says when to retry, whichever limit answered it.
          ...(response.status === 429 && response.headers["retry-after"] === undefined ? { "retry-after": "1" } : {})
        }))
      )
      const response = yield* Effect.locally(app, CurrentRequestContext, {
        requestId,
        docsUrl: options.docsUrl,
        dialect
      })
      return HttpServerResponse.setHeader(response, "x-request-id", requestId)
    })
