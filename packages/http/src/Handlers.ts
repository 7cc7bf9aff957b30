/**
 * Route handlers: read the wire input, call the core services as the authenticated principal, and
 * map domain failures to wire errors.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Analytics } from "@keymeter/core/Analytics"
import { Apis } from "@keymeter/core/Apis"
import { Overrides } from "@keymeter/core/Overrides"
import { RateLimiter } from "@keymeter/core/RateLimiter"
import { Verifications } from "@keymeter/core/Verifications"
import * as Effect from "effect/Effect"
import { Api, CurrentPrincipal } from "./Api.js"
import { HttpError, mapDomain } from "./Errors.js"
import * as JsonBody from "./internal/JsonBody.js"
import * as QueryString from "./internal/QueryString.js"

const GET_VERIFICATIONS: Readonly<Record<string, QueryString.Kind>> = {
  apiId: "string",
  externalId: "string",
  keyId: "strings",
  tag: "strings",
  start: "integer",
  end: "integer",
  groupBy: "strings",
  limit: "integer",
  orderBy: "string",
  order: "string"
}

/** The query string of the current request, read by `spec`. */
const query = (spec: Readonly<Record<string, QueryString.Kind>>) =>
  Effect.flatMap(HttpServerRequest.ParsedSearchParams, (raw) => QueryString.parse(raw, spec))

/** The parsed body of `request` as an object holding only `fields`. */
const readObject = (request: HttpServerRequest.HttpServerRequest, fields: ReadonlyArray<string>) =>
  Effect.flatMap(JsonBody.read(request), (body) => {
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      const got = body === null ? "null" : Array.isArray(body) ? "an array" : typeof body
      return Effect.fail(new HttpError({ code: "BAD_REQUEST", message: `body: must be a JSON object, got ${got}` }))
    }
    const unknown = Object.keys(body).filter((key) => !fields.includes(key))
    if (unknown.length > 0) {
      return Effect.fail(
        new HttpError({ code: "BAD_REQUEST", message: unknown.map((k) => `${k}: is not a known field`).join("; ") })
      )
    }
    return Effect.succeed(body as Record<string, unknown>)
  })

/** Handlers of the analytics routes. */
export const AnalyticsLive = HttpApiBuilder.group(Api, "analytics", (handlers) =>
  Effect.gen(function*() {
    const analytics = yield* Analytics
    const verifications = yield* Verifications
    return handlers
      .handle("getVerifications", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          return yield* analytics.getVerifications(principal, yield* query(GET_VERIFICATIONS))
        }).pipe(mapDomain))
      .handleRaw("recordVerifications", ({ request }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const body = yield* readObject(request, ["verifications"])
          if (!("verifications" in body)) {
            return yield* new HttpError({ code: "BAD_REQUEST", message: "verifications: is required" })
          }
          return yield* mapDomain(verifications.record(principal, body.verifications))
        }))
  }))

const GET_OVERRIDE: Readonly<Record<string, QueryString.Kind>> = {
  namespaceId: "string",
  namespaceName: "string",
  identifier: "string",
  resolve: "boolean"
}

const LIST_OVERRIDES: Readonly<Record<string, QueryString.Kind>> = {
  namespaceId: "string",
  namespaceName: "string",
  limit: "integer",
  cursor: "string"
}

/** Handlers of the rate-limit routes. */
export const RatelimitsLive = HttpApiBuilder.group(Api, "ratelimits", (handlers) =>
  Effect.gen(function*() {
    const overrides = yield* Overrides
    const limiter = yield* RateLimiter
    return handlers
      .handleRaw("setOverride", ({ request }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const body = yield* JsonBody.read(request)
          const override = yield* mapDomain(overrides.set(principal, body))
          return { overrideId: override.id }
        }))
      .handle("getOverride", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          return yield* overrides.get(principal, yield* query(GET_OVERRIDE))
        }).pipe(mapDomain))
      .handle("listOverrides", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          return yield* overrides.list(principal, yield* query(LIST_OVERRIDES))
        }).pipe(mapDomain))
      .handleRaw("deleteOverride", ({ request }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const body = yield* JsonBody.read(request)
          return yield* mapDomain(overrides.delete(principal, body))
        }))
      .handleRaw("limit", ({ request }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const body = yield* JsonBody.read(request)
          return yield* mapDomain(limiter.limit(principal, body))
        }))
  }))

/** Handlers of the api routes. */
export const ApisLive = HttpApiBuilder.group(Api, "apis", (handlers) =>
  Effect.gen(function*() {
    const apis = yield* Apis
    return handlers.handleRaw("createApi", ({ request }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const body = yield* JsonBody.read(request)
        return yield* mapDomain(apis.create(principal, body))
      }))
  }))
