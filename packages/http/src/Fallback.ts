/**
 * Failures no route schema describes, put in the envelope: unknown routes (404), a known route
 * with the wrong method (405, with Allow), and defects (500, logged, nothing leaked).
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpApp from "@effect/platform/HttpApp"
import type { RouteNotFound } from "@effect/platform/HttpServerError"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import { Api } from "./Api.js"
import { respond } from "./Errors.js"

/** Methods of every fixed path the server answers. */
const knownRoutes = (() => {
  const routes = new Map<string, Set<string>>()
  const add = (path: string, method: string) => {
    let methods = routes.get(path)
    if (methods === undefined) routes.set(path, methods = new Set())
    methods.add(method)
  }
  HttpApi.reflect(Api, {
    onGroup() {},
    onEndpoint({ endpoint }) {
      add(endpoint.path, endpoint.method)
    }
  })
  add("/docs", "GET")
  add("/openapi.json", "GET")
  return routes
})()

const methodsOf = (path: string): Set<string> | undefined =>
  knownRoutes.get(path) ?? (path.startsWith("/docs/errors/") ? new Set(["GET"]) : undefined)

/** Registers the fallback as an HttpApi middleware: inside error encoding, inside the request context. */
export const layer = HttpApiBuilder.middleware((app) =>
  (app as HttpApp.Default<RouteNotFound>).pipe(
    Effect.catchTag("RouteNotFound", (error) => {
      const method = error.request.method
      const path = error.request.url.split("?")[0]!
      const methods = methodsOf(path)
      if (methods !== undefined && !methods.has(method)) {
        const allow = [...methods].join(", ")
        return respond("METHOD_NOT_ALLOWED", `${method} is not allowed on ${path}; use ${allow}`, { allow })
      }
      return respond("NOT_FOUND", `No route for ${method} ${path}`)
    }),
    Effect.catchAllCause((cause) => {
      // Typed failures go on to the route's error schemas; interruptions are the server's business.
      if (!Cause.isDie(cause)) return Effect.failCause(cause)
      const defect = Cause.squash(cause)
      // A body that cannot be read or parsed is the client's fault.
      if (HttpServerError.isServerError(defect) && defect._tag === "RequestError") {
        return respond("BAD_REQUEST", "body: could not be read or parsed")
      }
      return Effect.zipRight(
        Effect.logError("unhandled defect", cause),
        respond("INTERNAL_SERVER_ERROR", "Internal server error; it was logged with this request id")
      )
    })
  )
)
