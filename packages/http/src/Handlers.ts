/**
 * Route handlers: read the wire input (query strings by the route's input struct, JSON bodies as
 * objects), call the core services as the authenticated principal, and map domain failures to
 * wire errors. Core validates the values.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Apis } from "@keymeter/core/Apis"
import { Identities } from "@keymeter/core/Identities"
import { ExternalIdInput, KeyIdInput, ListKeysInput } from "@keymeter/core/Key"
import { Keys } from "@keymeter/core/Keys"
import { GetOverrideInput, ListOverridesInput } from "@keymeter/core/Override"
import { Overrides } from "@keymeter/core/Overrides"
import type { Principal } from "@keymeter/core/Permission"
import * as Windows from "@keymeter/core/Windows"
import * as Effect from "effect/Effect"
import { Api, CurrentPrincipal } from "./Api.js"
import type { DomainError } from "./Errors.js"
import { mapDomain } from "./Errors.js"
import { HotRoutes, readQuery } from "./HotRoutes.js"
import * as IdempotencyKey from "./internal/IdempotencyKey.js"
import * as JsonBody from "./internal/JsonBody.js"
import * as UrlParams from "./internal/UrlParams.js"

const getOverrideQuery = UrlParams.reader(GetOverrideInput)
const listOverridesQuery = UrlParams.reader(ListOverridesInput)

/**
 * An answer core built already in its wire form (plain JSON values, fields in the order of the
 * contract's schema), sent without HttpApi encoding it again through the schema: that encoding
 * was a fifth of a day-series request's time. A test holds the bytes to the contract's encoding.
 */
export const wire = (body: unknown) => HttpServerResponse.unsafeJson(body)

/** Handlers of the analytics routes. */
export const AnalyticsLive = HttpApiBuilder.group(Api, "analytics", (handlers) =>
  Effect.gen(function*() {
    const routes = yield* HotRoutes
    return handlers
      .handle("getVerifications", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const query = yield* readQuery(yield* HttpServerRequest.ParsedSearchParams)
          return wire(yield* routes.getVerifications(principal, query))
        }).pipe(mapDomain))
      .handleRaw("recordVerifications", ({ request }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const body = yield* JsonBody.readObject(request)
          return wire(
            yield* mapDomain(routes.recordVerifications(principal, body, IdempotencyKey.read(request.headers)))
          )
        }))
  }))

/** Handlers of the rate-limit routes. */
export const RatelimitsLive = HttpApiBuilder.group(Api, "ratelimits", (handlers) =>
  Effect.gen(function*() {
    const overrides = yield* Overrides
    const routes = yield* HotRoutes
    return handlers
      .handleRaw("setOverride", ({ request }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const body = yield* JsonBody.readObject(request)
          const override = yield* mapDomain(overrides.set(principal, body, IdempotencyKey.read(request.headers)))
          return { overrideId: override.id }
        }))
      .handle("getOverride", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          return yield* overrides.get(principal, yield* getOverrideQuery)
        }).pipe(mapDomain))
      .handle("listOverrides", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          return yield* overrides.list(principal, yield* listOverridesQuery)
        }).pipe(mapDomain))
      .handleRaw("deleteOverride", ({ request }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const body = yield* JsonBody.readObject(request)
          return yield* mapDomain(overrides.delete(principal, body))
        }))
      .handle(
        "listNamespaces",
        () => Effect.flatMap(CurrentPrincipal, (principal) => mapDomain(overrides.namespaces(principal)))
      )
      .handleRaw("limit", ({ request }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const body = yield* JsonBody.readObject(request)
          return wire(yield* mapDomain(routes.limit(principal, body)))
        }))
  }))

/** Handlers of the api routes. */
export const ApisLive = HttpApiBuilder.group(Api, "apis", (handlers) =>
  Effect.gen(function*() {
    const apis = yield* Apis
    return handlers
      .handleRaw("createApi", ({ request }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const body = yield* JsonBody.readObject(request)
          return yield* mapDomain(apis.create(principal, body, IdempotencyKey.read(request.headers)))
        }))
      .handle("listApis", () => Effect.flatMap(CurrentPrincipal, (principal) => mapDomain(apis.list(principal))))
  }))

const getKeyQuery = UrlParams.reader(KeyIdInput)
const listKeysQuery = UrlParams.reader(ListKeysInput)

/** Handlers of the key routes. */
export const KeysLive = HttpApiBuilder.group(Api, "keys", (handlers) =>
  Effect.gen(function*() {
    const keys = yield* Keys
    const routes = yield* HotRoutes
    const withBody = <A>(
      request: HttpServerRequest.HttpServerRequest,
      act: (principal: Principal, body: Record<string, unknown>) => Effect.Effect<A, DomainError>
    ) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        return yield* mapDomain(act(principal, yield* JsonBody.readObject(request)))
      })
    return handlers
      .handleRaw("createKey", ({ request }) =>
        withBody(request, (principal, body) =>
          keys.create(principal, body, IdempotencyKey.read(request.headers))))
      .handleRaw("verifyKey", ({ request }) =>
        withBody(request, (principal, body) =>
          routes.verifyKey(principal, body)).pipe(Effect.map(wire)))
      .handle("getKey", () =>
        Effect.gen(function*() {
          return yield* keys.get(yield* CurrentPrincipal, yield* getKeyQuery)
        }).pipe(mapDomain))
      .handle("listKeys", () =>
        Effect.gen(function*() {
          return yield* keys.list(yield* CurrentPrincipal, yield* listKeysQuery)
        }).pipe(mapDomain))
      .handleRaw("updateKey", ({ request }) =>
        withBody(request, (principal, body) =>
          keys.update(principal, body)))
      .handleRaw("deleteKey", ({ request }) => withBody(request, (principal, body) => keys.delete(principal, body)))
      .handleRaw("updateCredits", ({ request }) =>
        withBody(request, (principal, body) =>
          keys.updateCredits(principal, body, IdempotencyKey.read(request.headers))))
  }))

const getIdentityQuery = UrlParams.reader(ExternalIdInput)

/** Handlers of the identity routes. */
export const IdentitiesLive = HttpApiBuilder.group(Api, "identities", (handlers) =>
  Effect.gen(function*() {
    const identities = yield* Identities
    return handlers
      .handle("getIdentity", () =>
        Effect.gen(function*() {
          return yield* identities.get(yield* CurrentPrincipal, yield* getIdentityQuery)
        }).pipe(mapDomain))
      .handleRaw("updateIdentity", ({ request }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          return yield* mapDomain(identities.update(principal, yield* JsonBody.readObject(request)))
        }).pipe(Effect.map(wire)))
  }))

/** Handlers of the routes about the calling key. */
export const AuthLive = HttpApiBuilder.group(
  Api,
  "auth",
  (handlers) =>
    handlers.handle("whoami", () =>
      Effect.map(CurrentPrincipal, (principal) => ({
        workspaceId: principal.workspaceId,
        rootKeyId: principal.rootKeyId,
        permissions: principal.permissions
      })))
)

/** Handler of `liveness`: answers while the server runs, naming where its limits live. */
export const LivenessLive = HttpApiBuilder.group(
  Api,
  "liveness",
  (handlers) =>
    handlers.handle("liveness", () =>
      Effect.map(Windows.Windows, (windows) => ({
        status: "ok",
        services: {
          metrics: "none",
          logger: "stderr",
          ratelimit: windows.shared ? "shared" : "local",
          usagelimit: "keymeter"
        }
      })))
)
