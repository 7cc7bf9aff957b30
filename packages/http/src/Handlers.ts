/**
 * Route handlers: read the wire input (query strings by the route's input struct, JSON bodies as
 * objects), call the core services as the authenticated principal, and map domain failures to
 * wire errors. Core validates the values.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Analytics } from "@keymeter/core/Analytics"
import { Apis } from "@keymeter/core/Apis"
import { Identities } from "@keymeter/core/Identities"
import { ExternalIdInput, KeyIdInput, ListKeysInput } from "@keymeter/core/Key"
import { Keys } from "@keymeter/core/Keys"
import { KeyVerifier } from "@keymeter/core/KeyVerifier"
import { GetOverrideInput, ListOverridesInput } from "@keymeter/core/Override"
import { Overrides } from "@keymeter/core/Overrides"
import type { Principal } from "@keymeter/core/Permission"
import { RateLimiter } from "@keymeter/core/RateLimiter"
import { RecordVerificationsInput } from "@keymeter/core/Verification"
import { VerificationQueryInput } from "@keymeter/core/VerificationQuery"
import { Verifications } from "@keymeter/core/Verifications"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { Api, CurrentPrincipal } from "./Api.js"
import type { DomainError } from "./Errors.js"
import { HttpError, mapDomain } from "./Errors.js"
import * as IdempotencyKey from "./internal/IdempotencyKey.js"
import * as JsonBody from "./internal/JsonBody.js"
import * as UrlParams from "./internal/UrlParams.js"

const getVerificationsQuery = UrlParams.reader(VerificationQueryInput)
const getOverrideQuery = UrlParams.reader(GetOverrideInput)
const listOverridesQuery = UrlParams.reader(ListOverridesInput)
const RECORD_FIELDS = Object.keys(RecordVerificationsInput.fields)

/**
 * The batch of a recordVerifications body, or the 400 its envelope gets. The batch itself is
 * validated by core's hand-written decoder (it must run at millions of events per second).
 */
export const recordBatch = (body: Record<string, unknown>): Either.Either<unknown, HttpError> => {
  const unknown = Object.keys(body).filter((key) => !RECORD_FIELDS.includes(key))
  if (unknown.length > 0) {
    return Either.left(
      new HttpError({ code: "BAD_REQUEST", message: unknown.map((k) => `${k}: is not a known field`).join("; ") })
    )
  }
  return "verifications" in body
    ? Either.right(body.verifications)
    : Either.left(new HttpError({ code: "BAD_REQUEST", message: "verifications: is required" }))
}

/**
 * An answer core built already in its wire form (plain JSON values, fields in the order of the
 * contract's schema), sent without HttpApi encoding it again through the schema: that encoding
 * was a fifth of a day-series request's time. A test holds the bytes to the contract's encoding.
 */
export const wire = (body: unknown) => HttpServerResponse.unsafeJson(body)

/** Handlers of the analytics routes. */
export const AnalyticsLive = HttpApiBuilder.group(Api, "analytics", (handlers) =>
  Effect.gen(function*() {
    const analytics = yield* Analytics
    const verifications = yield* Verifications
    return handlers
      .handle("getVerifications", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          return wire(yield* analytics.getVerifications(principal, yield* getVerificationsQuery))
        }).pipe(mapDomain))
      .handleRaw("recordVerifications", ({ request }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          // The batch is validated by core's hand-written decoder (it must run at millions of
          // events per second), so the envelope's fields are checked here.
          const batch = yield* recordBatch(yield* JsonBody.readObject(request))
          return wire(yield* mapDomain(verifications.record(principal, batch, IdempotencyKey.read(request.headers))))
        }))
  }))

/** Handlers of the rate-limit routes. */
export const RatelimitsLive = HttpApiBuilder.group(Api, "ratelimits", (handlers) =>
  Effect.gen(function*() {
    const overrides = yield* Overrides
    const limiter = yield* RateLimiter
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
          return wire(yield* mapDomain(limiter.limit(principal, body)))
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
    const verifier = yield* KeyVerifier
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
          verifier.verify(principal, body)).pipe(Effect.map(wire)))
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
