/**
 * The `Authorization` middleware: checks the `Bearer` scheme, then the key (through `AuthGate`).
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { AuthGate } from "./AuthGate.js"
import { HttpError, mapDomain } from "./Errors.js"
import { Authorization } from "./v1/Api.js"
import { AuthorizationV2 } from "./v2/Api.js"
import { mapV2 } from "./v2/Errors.js"

const BEARER = /^Bearer[ \t]+([^\s]+)[ \t]*$/i

/** The root key of an `Authorization` header, or the 401 its absence or form gets. */
export const bearer = (header: string | undefined): string | HttpError => {
  if (header === undefined || header.trim() === "") return MISSING
  const match = BEARER.exec(header)
  return match === null ? MALFORMED : match[1]!
}

// Built once: refusing a request must be cheap.
const MISSING = new HttpError({
  code: "UNAUTHORIZED",
  message: "Missing root key: send the header Authorization: Bearer <root key>"
})
const MALFORMED = new HttpError({
  code: "UNAUTHORIZED",
  message: "The Authorization header must be: Bearer <root key>"
})

/** Authenticates every /v1 request before anything else is looked at. */
export const layer: Layer.Layer<Authorization, never, AuthGate> = Layer.effect(
  Authorization,
  Effect.gen(function*() {
    const gate = yield* AuthGate
    return Authorization.of({
      rootKey: () =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const key = bearer(request.headers["authorization"])
          if (typeof key !== "string") return yield* key
          return yield* mapDomain(gate.authenticate(Option.getOrUndefined(request.remoteAddress), key))
        })
    })
  })
)

/** Authenticates every /v2 request before anything else is looked at, failing in v2's body. */
export const layerV2: Layer.Layer<AuthorizationV2, never, AuthGate> = Layer.effect(
  AuthorizationV2,
  Effect.gen(function*() {
    const gate = yield* AuthGate
    return AuthorizationV2.of({
      rootKey: () =>
        mapV2(Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const key = bearer(request.headers["authorization"])
          if (typeof key !== "string") return yield* key
          return yield* gate.authenticate(Option.getOrUndefined(request.remoteAddress), key)
        }))
    })
  })
)
