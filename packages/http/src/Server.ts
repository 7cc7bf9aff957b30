/**
 * The HTTP application as layers: routes, docs and fallbacks over the core services, and the
 * standalone Node server around them.
 */
import { NodeHttpServer } from "@effect/platform-node"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServer from "@effect/platform/HttpServer"
import type { ServeError } from "@effect/platform/HttpServerError"
import { MaxDatapoints } from "@keymeter/core/Analytics"
import * as Idempotency from "@keymeter/core/Idempotency"
import * as Keymeter from "@keymeter/core/Keymeter"
import type { Catalog, VerificationStore } from "@keymeter/core/Storage"
import * as Layer from "effect/Layer"
import { Api } from "./Api.js"
import * as Authorization from "./Authorization.js"
import * as Docs from "./Docs.js"
import * as Fallback from "./Fallback.js"
import * as Handlers from "./Handlers.js"
import * as InFlightLimit from "./InFlightLimit.js"
import { MaxBodyBytes } from "./internal/JsonBody.js"
import * as NodeServer from "./NodeServer.js"
import * as RequestContext from "./RequestContext.js"

/** Limits and links of the HTTP application. */
export interface Options {
  /** Base of the `docs` links in error bodies (default `/docs`, served by this server). */
  readonly docsUrl?: string | undefined
  /** Largest request body in bytes (default 1 MiB). */
  readonly maxBodyBytes?: number | undefined
  /** Largest analytics answer before `limit` (default 100,000 datapoints). */
  readonly maxDatapoints?: number | undefined
  /** How long idempotency keys are remembered, in ms (default 24 hours, at most 30 days). */
  readonly idempotencyWindowMs?: number | undefined
  /** Requests served at once; more are answered 429 (default 256). */
  readonly maxInFlight?: number | undefined
  /** Time a client has to send its headers, in ms (default 10 s); the standalone server only. */
  readonly headersTimeoutMs?: number | undefined
  /** Time a client has to send its whole request, in ms (default 30 s); the standalone server only. */
  readonly requestTimeoutMs?: number | undefined
}

/** The routes over the core services. */
export const ApiLive = (options: Options = {}) =>
  HttpApiBuilder.api(Api).pipe(
    Layer.provide([Handlers.AnalyticsLive, Handlers.RatelimitsLive, Handlers.ApisLive]),
    Layer.provide(Authorization.layer),
    Layer.provide(Layer.succeed(MaxBodyBytes, options.maxBodyBytes ?? MaxBodyBytes.defaultValue())),
    Layer.provideMerge(
      Keymeter.layer.pipe(
        Layer.provide(Layer.succeed(MaxDatapoints, options.maxDatapoints ?? MaxDatapoints.defaultValue())),
        Layer.provide(Layer.succeed(Idempotency.Window, options.idempotencyWindowMs ?? Idempotency.DEFAULT_WINDOW_MS))
      )
    )
  )

/**
 * The outermost middleware: request ids and the docs base of error bodies, then the in-flight
 * limit. Each call makes a new count: one per server.
 */
export const middleware = (options: Options = {}) => {
  const context = RequestContext.middleware({ docsUrl: (options.docsUrl ?? "/docs").replace(/\/+$/, "") })
  const limit = InFlightLimit.middleware(options.maxInFlight ?? InFlightLimit.DEFAULT_MAX_IN_FLIGHT)
  return <E, R>(app: HttpApp.Default<E, R>) => context(limit(app))
}

/**
 * Everything an `HttpServer` needs to serve keymeter: routes, docs, fallbacks. Requires the
 * Storage and an HttpServer.
 */
export const serve = (options: Options = {}) =>
  HttpApiBuilder.serve(middleware(options)).pipe(
    Layer.provide(Docs.layer),
    Layer.provide(Fallback.layer),
    Layer.provide(ApiLive(options))
  )

/** The standalone server: {@link serve} on a Node `http.Server` bound to `host:port`. */
export const layer = (
  options: Options & { readonly port: number; readonly host: string }
): Layer.Layer<never, ServeError, VerificationStore | Catalog> =>
  serve(options).pipe(
    HttpServer.withLogAddress,
    Layer.provide(NodeHttpServer.layer(() => NodeServer.make(options), { port: options.port, host: options.host }))
  )
