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
import type { StorageError } from "@keymeter/core/Errors"
import * as Idempotency from "@keymeter/core/Idempotency"
import * as Keymeter from "@keymeter/core/Keymeter"
import { KeyCacheCapacity } from "@keymeter/core/Keys"
import { RecorderDelay } from "@keymeter/core/Recorder"
import type { Catalog, VerificationStore } from "@keymeter/core/Storage"
import * as Windows from "@keymeter/core/Windows"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { IncomingMessage, Server, ServerResponse } from "node:http"
import { Api } from "./Api.js"
import * as Authorization from "./Authorization.js"
import * as Docs from "./Docs.js"
import * as Fallback from "./Fallback.js"
import * as Handlers from "./Handlers.js"
import * as InFlightLimit from "./InFlightLimit.js"
import * as FastLane from "./internal/FastLane.js"
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
}

/** The core services over the Storage, reading the options that concern them. */
export const DomainLive = (options: Options = {}) =>
  Keymeter.layerWith(options.windows ?? Windows.layerLocal).pipe(
    Layer.provide(Layer.succeed(MaxDatapoints, options.maxDatapoints ?? MaxDatapoints.defaultValue())),
    Layer.provide(Layer.succeed(Idempotency.Window, options.idempotencyWindowMs ?? Idempotency.DEFAULT_WINDOW_MS)),
    Layer.provide(Layer.succeed(RecorderDelay, options.recordDelayMs ?? RecorderDelay.defaultValue())),
    Layer.provide(Layer.succeed(KeyCacheCapacity, options.keyCacheSize ?? KeyCacheCapacity.defaultValue()))
  )

/** The routes over the core services (`domain`: the same layer as a fast lane's, to share one instance). */
export const ApiLive = (options: Options = {}, domain = DomainLive(options)) =>
  HttpApiBuilder.api(Api).pipe(
    Layer.provide([
      Handlers.AnalyticsLive,
      Handlers.RatelimitsLive,
      Handlers.ApisLive,
      Handlers.KeysLive,
      Handlers.IdentitiesLive,
      Handlers.AuthLive
    ]),
    Layer.provide(Authorization.layer),
    Layer.provide(Layer.succeed(MaxBodyBytes, options.maxBodyBytes ?? MaxBodyBytes.defaultValue())),
    Layer.provideMerge(domain)
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

/** What a server's pipeline and its fast lane share: one domain, one set of in-flight counts. */
interface Shared {
  readonly domain: ReturnType<typeof DomainLive>
  readonly budgets: InFlightLimit.Budgets
}

/**
 * Everything an `HttpServer` needs to serve keymeter: routes, docs, fallbacks. Requires the
 * Storage and an HttpServer.
 */
export const serve = (options: Options = {}, shared?: Shared) =>
  HttpApiBuilder.serve(middleware(options, shared?.budgets)).pipe(
    Layer.provide(Docs.layer),
    Layer.provide(Fallback.layer),
    Layer.provide(ApiLive(options, shared?.domain))
  )

/**
 * The fast lane on `server` (see `internal/FastLane`): its requests are taken before the
 * pipeline's listener sees them; those it does not take, or hands back, go on to it.
 */
const fastLane = (server: Server, options: Options, shared: Shared) =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const runtime = yield* Effect.runtime<FastLane.Services>()
    const take = FastLane.make({
      runtime,
      budgets: shared.budgets,
      docsUrl: RequestContext.docsBase(options.docsUrl),
      maxBodyBytes: options.maxBodyBytes ?? MaxBodyBytes.defaultValue()
    })
    const emit = server.emit as (event: string | symbol, ...args: Array<unknown>) => boolean
    const patched = function(this: Server, event: string | symbol, ...args: Array<unknown>): boolean {
      if (event === "request") {
        const [req, res] = args as [IncomingMessage, ServerResponse]
        if (options.pages?.(req, res)) return true
        if (take(req, res, () => emit.call(server, "request", req, res))) return true
      }
      return emit.call(this, event, ...args)
    }
    server.emit = patched as typeof server.emit
    yield* Effect.addFinalizer(() => Effect.sync(() => (server.emit = emit as typeof server.emit)))
  })).pipe(Layer.provide(shared.domain))

/**
 * {@link serve} for a Node `http.Server` (made by `NodeServer.make`), with the fast lane on it:
 * what the standalone server and the tests serve. Requires the Storage and the HttpServer over
 * that same `server`.
 */
export const serveNode = (server: Server, options: Options = {}) => {
  const shared: Shared = {
    domain: DomainLive(options),
    budgets: InFlightLimit.makeBudgets(options.maxInFlight ?? InFlightLimit.DEFAULT_MAX_IN_FLIGHT)
  }
  return Layer.merge(serve(options, shared), fastLane(server, options, shared))
}

/**
 * A Node `(req, res)` handler serving keymeter: the fast lane, and the pipeline for everything
 * else, sharing one set of in-flight counts. What an embedder mounts in a server of its own; needs
 * the HttpApi application's services (see `ApiLive`) in context.
 */
export const makeNodeHandler = (options: Options = {}) =>
  Effect.gen(function*() {
    const budgets = InFlightLimit.makeBudgets(options.maxInFlight ?? InFlightLimit.DEFAULT_MAX_IN_FLIGHT)
    const app = yield* HttpApiBuilder.httpApp
    const pipeline = yield* NodeHttpServer.makeHandler(app, middleware(options, budgets))
    const take = FastLane.make({
      runtime: yield* Effect.runtime<FastLane.Services>(),
      budgets,
      docsUrl: RequestContext.docsBase(options.docsUrl),
      maxBodyBytes: options.maxBodyBytes ?? MaxBodyBytes.defaultValue()
    })
    return (req: IncomingMessage, res: ServerResponse): void => {
      if (options.pages?.(req, res)) return
      if (!take(req, res, () => pipeline(req, res))) pipeline(req, res)
    }
  })

/** The standalone server: {@link serveNode} on a Node `http.Server` bound to `host:port`. */
export const layer = (
  options: Options & NodeServer.Options & { readonly port: number; readonly host: string }
): Layer.Layer<never, ServeError | StorageError, VerificationStore | Catalog> =>
  Layer.unwrapEffect(Effect.sync(() => {
    const server = NodeServer.make(options)
    return serveNode(server, options).pipe(
      HttpServer.withLogAddress,
      Layer.provide(NodeHttpServer.layer(() => server, { port: options.port, host: options.host }))
    )
  }))
