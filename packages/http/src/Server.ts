/**
 * The HTTP application as layers: routes, docs and fallbacks over the core services, and the
 * standalone Node server around them.
 */
import { NodeHttpServer } from "@effect/platform-node"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServer from "@effect/platform/HttpServer"
import type { ServeError } from "@effect/platform/HttpServerError"
import { MaxDatapoints, MaxReadsAtOnce } from "@keymeter/core/Analytics"
import type { StorageError } from "@keymeter/core/Errors"
import * as Idempotency from "@keymeter/core/Idempotency"
import * as Keymeter from "@keymeter/core/Keymeter"
import { KeyCacheCapacity } from "@keymeter/core/Keys"
import { RecorderDelay } from "@keymeter/core/Recorder"
import type { Storage } from "@keymeter/core/Storage"
import * as Windows from "@keymeter/core/Windows"
import { SqlAnalytics, SqlLimits } from "@keymeter/sql/SqlAnalytics"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { IncomingMessage, Server, ServerResponse } from "node:http"
import { Api } from "./Api.js"
import { AuthGate, MaxAuthFailures } from "./AuthGate.js"
import * as Authorization from "./Authorization.js"
import * as Docs from "./Docs.js"
import * as Fallback from "./Fallback.js"
import * as FastLane from "./FastLane.js"
import { HotRoutes } from "./HotRoutes.js"
import * as InFlightLimit from "./InFlightLimit.js"
import { MaxBodyBytes } from "./internal/JsonBody.js"
import * as NodeServer from "./NodeServer.js"
import * as RequestContext from "./RequestContext.js"
import * as Handlers from "./v1/Handlers.js"
import * as V2Handlers from "./v2/Handlers.js"

/** Limits and links of the HTTP application. */
export interface Options {
  /** Base of the `docs` links in error bodies (default `/docs`, served by this server). */
  readonly docsUrl?: string | undefined
  /** Largest request body in bytes (default 1 MiB). */
  readonly maxBodyBytes?: number | undefined
  /** Largest analytics answer before `limit` (default 100,000 datapoints). */
  readonly maxDatapoints?: number | undefined
  /** Unknown root keys one client (address) may send per minute; then 429 for the minute (default 100). */
  readonly maxAuthFailures?: number | undefined
  /** Analytics reads one workspace may have at work at once; more are answered 429 (default 8). */
  readonly maxAnalyticsReads?: number | undefined
  /**
   * Live rate-limit windows kept in this process, in all and per workspace (default 1,000,000
   * and 100,000); a new one past either is answered 429.
   */
  readonly maxWindows?: Windows.Capacity | undefined
  /** How long idempotency keys are remembered, in ms (default 24 hours, at most 30 days). */
  readonly idempotencyWindowMs?: number | undefined
  /** Longest a verification's event waits to be stored, in ms (default 100): what a crash can lose. */
  readonly recordDelayMs?: number | undefined
  /** Where rate-limit windows live (default: in this process); the Redis adapter's to share them. */
  readonly windows?: Layer.Layer<Windows.Windows, StorageError> | undefined
  /** Pages served beside the API (the dashboard): true when it answered the request. */
  readonly pages?: ((req: IncomingMessage, res: ServerResponse) => boolean) | undefined
  /** Keys verification keeps in memory (default 1,048,576). */
  readonly keyCacheSize?: number | undefined
  /** Requests served at once; more are answered 429 (default 256). */
  readonly maxInFlight?: number | undefined
  /** Time a client has to send its headers, in ms (default 10 s); the standalone server only. */
  readonly headersTimeoutMs?: number | undefined
  /** Time a client has to send its whole request, in ms (default 30 s); the standalone server only. */
  readonly requestTimeoutMs?: number | undefined
  /**
   * Budgets of SQL analytics queries (defaults: 10 s, 100,000,000 rows scanned, 10,000 rows
   * answered, 256 MiB) and how many run at once on this server (default 4; more are answered 429).
   */
  readonly sqlLimits?: Partial<SqlLimits["Type"]> | undefined
}

/** The core services over the Storage, reading the options that concern them. */
export const DomainLive = (options: Options = {}) =>
  SqlAnalytics.Default.pipe(
    Layer.provide(Layer.succeed(SqlLimits, { ...SqlLimits.defaultValue(), ...options.sqlLimits })),
    Layer.provideMerge(Keymeter.layerWith(options.windows ?? Windows.layerLocal)),
    Layer.provide(Layer.succeed(MaxDatapoints, options.maxDatapoints ?? MaxDatapoints.defaultValue())),
    Layer.provide(Layer.succeed(MaxReadsAtOnce, options.maxAnalyticsReads ?? MaxReadsAtOnce.defaultValue())),
    Layer.provide(Layer.succeed(Windows.MaxWindows, options.maxWindows ?? Windows.MaxWindows.defaultValue())),
    Layer.provide(Layer.succeed(Idempotency.Window, options.idempotencyWindowMs ?? Idempotency.DEFAULT_WINDOW_MS)),
    Layer.provide(Layer.succeed(RecorderDelay, options.recordDelayMs ?? RecorderDelay.defaultValue())),
    Layer.provide(Layer.succeed(KeyCacheCapacity, options.keyCacheSize ?? KeyCacheCapacity.defaultValue()))
  )

/** The routes over the core services (`domain`: to share one instance with other layers). */
export const ApiLive = (options: Options = {}, domain = DomainLive(options)) =>
  HttpApiBuilder.api(Api).pipe(
    Layer.provide([
      Handlers.AnalyticsLive,
      Handlers.RatelimitsLive,
      Handlers.ApisLive,
      Handlers.KeysLive,
      Handlers.IdentitiesLive,
      Handlers.PermissionsLive,
      Handlers.MigrationsLive,
      Handlers.AuthLive,
      Handlers.LivenessLive,
      V2Handlers.KeysLive,
      V2Handlers.ApisLive,
      V2Handlers.IdentitiesLive,
      V2Handlers.PermissionsLive,
      V2Handlers.RatelimitLive,
      V2Handlers.AnalyticsLive
    ]),
    Layer.provide([Authorization.layer, Authorization.layerV2]),
    Layer.provide(Layer.succeed(MaxBodyBytes, options.maxBodyBytes ?? MaxBodyBytes.defaultValue())),
    Layer.provideMerge(Layer.merge(HotRoutes.Default, AuthGate.Default)),
    Layer.provide(Layer.succeed(MaxAuthFailures, options.maxAuthFailures ?? MaxAuthFailures.defaultValue())),
    Layer.provideMerge(domain)
  )

/**
 * The whole application a Node handler serves ({@link makeNodeHandler}): the routes, docs and
 * fallbacks on a router, over the core services. Requires the Storage.
 */
export const AppLive = (options: Options = {}) =>
  Layer.mergeAll(Docs.layer, Fallback.layer).pipe(
    Layer.provideMerge(ApiLive(options)),
    Layer.provideMerge(
      Layer.mergeAll(HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer, NodeHttpServer.layerContext)
    )
  )

/**
 * The outermost middleware: request ids and the docs base of error bodies, then the in-flight
 * limit. Without `budgets`, each call makes new counts: one per server.
 */
export const middleware = (options: Options = {}, budgets?: InFlightLimit.Budgets) => {
  const context = RequestContext.middleware({ docsUrl: RequestContext.docsBase(options.docsUrl) })
  const limit = InFlightLimit.middleware(budgets ?? options.maxInFlight ?? InFlightLimit.DEFAULT_MAX_IN_FLIGHT)
  return <E, R>(app: HttpApp.Default<E, R>) => context(limit(app))
}

/**
 * The HttpApi pipeline alone, for an `HttpServer` of any platform: routes, docs, fallbacks.
 * Requires the Storage and an HttpServer. (On Node, {@link serveNode} serves the hot routes
 * faster.)
 */
export const serve = (options: Options = {}) =>
  HttpApiBuilder.serve(middleware(options)).pipe(
    Layer.provide(Docs.layer),
    Layer.provide(Fallback.layer),
    Layer.provide(ApiLive(options))
  )

/**
 * A Node `(req, res)` handler serving keymeter: the pages (the dashboard), the fast lane for the
 * hot routes (see `FastLane`), and the pipeline for everything else and for what the lane
 * hands back, sharing one set of in-flight counts. What the standalone server listens with and
 * what an embedder mounts in a server of its own; needs {@link AppLive} in context.
 */
export const makeNodeHandler = (options: Options = {}) =>
  Effect.gen(function*() {
    const budgets = InFlightLimit.makeBudgets(options.maxInFlight ?? InFlightLimit.DEFAULT_MAX_IN_FLIGHT)
    const app = yield* HttpApiBuilder.httpApp
    const pipeline = yield* NodeHttpServer.makeHandler(app, middleware(options, budgets))
    const lane = FastLane.make({
      runtime: yield* Effect.runtime<FastLane.Services>(),
      budgets,
      docsUrl: RequestContext.docsBase(options.docsUrl),
      maxBodyBytes: options.maxBodyBytes ?? MaxBodyBytes.defaultValue()
    })
    const screen = NodeServer.screen(RequestContext.docsBase(options.docsUrl))
    return (req: IncomingMessage, res: ServerResponse): void => {
      if (screen(req, res) || options.pages?.(req, res)) return
      if (!lane(req, res, () => pipeline(req, res))) pipeline(req, res)
    }
  })

/**
 * {@link makeNodeHandler} as the request listener of a Node `http.Server` (made by
 * `NodeServer.make`, listening through `NodeHttpServer.layer`): what the standalone server and the
 * tests serve. Requires the Storage.
 */
export const serveNode = (server: Server, options: Options = {}) =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const handler = yield* makeNodeHandler(options)
    server.on("request", handler)
    yield* Effect.addFinalizer(() => Effect.sync(() => server.off("request", handler)))
  })).pipe(Layer.provide(AppLive(options)))

/** The standalone server: {@link serveNode} on a Node `http.Server` bound to `host:port`. */
export const layer = (
  options: Options & NodeServer.Options & { readonly port: number; readonly host: string }
): Layer.Layer<never, ServeError | StorageError, Storage> =>
  Layer.unwrapEffect(Effect.sync(() => {
    const server = NodeServer.make(options)
    return serveNode(server, options).pipe(
      HttpServer.withLogAddress,
      Layer.provide(NodeHttpServer.layer(() => server, { port: options.port, host: options.host }))
    )
  }))
