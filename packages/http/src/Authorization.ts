/**
 * The `Authorization` middleware, on core's Auth port: checks the `Bearer` scheme, then the key.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Auth } from "@keymeter/core/Auth"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { Authorization } from "./Api.js"
import { HttpError, mapDomain } from "./Errors.js"

const BEARER = /^Bearer[ \t]+([^\s]+)[ \t]*$/i

/** Authenticates every /v1 request before anything else is looked at. */
export const layer: Layer.Layer<Authorization, never, Auth> = Layer.effect(
  Authorization,
  Effect.gen(function*() {
    const auth = yield* Auth
    return Authorization.of({
      rootKey: () =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const header = request.headers["authorization"]
          if (header === undefined || header.trim() === "") {
            return yield* new HttpError({
              code: "UNAUTHORIZED",
              message: "Missing root key: send the header Authorization: Bearer <root key>"
            })
          }
          const match = BEARER.exec(header)
          if (match === null) {
            return yield* new HttpError({
              code: "UNAUTHORIZED",
              message: "The Authorization header must be: Bearer <root key>"
            })
          }
          return yield* mapDomain(auth.authenticate(Redacted.make(match[1]!)))
        })
    })
  })
)
