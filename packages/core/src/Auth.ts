/**
 * The Auth port: from a root key secret to a {@link Principal}, and the permission check.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type { StorageError } from "./Errors.js"
import { InsufficientPermissions, KeyForbidden, Unauthenticated } from "./Errors.js"
import type { Principal } from "./Permission.js"
import * as Permission from "./Permission.js"
import * as RootKey from "./RootKey.js"
import { Catalog } from "./Storage.js"

/** Authenticates root keys and checks permissions. */
export class Auth extends Context.Tag("@keymeter/core/Auth")<
  Auth,
  {
    /** The principal of a root key secret; an empty secret means no credentials were sent. */
    readonly authenticate: (
      secret: Redacted.Redacted<string>
    ) => Effect.Effect<Principal, Unauthenticated | KeyForbidden | StorageError>
    /** Succeeds when the principal holds any of `anyOf` (or `*`). */
    readonly authorize: (
      principal: Principal,
      anyOf: ReadonlyArray<string>
    ) => Effect.Effect<void, InsufficientPermissions>
  }
>() {}

/** A principal holding every permission in `workspaceId`: what the embedded library acts as. */
export const system = (workspaceId: string): Principal => ({ workspaceId, rootKeyId: "system", permissions: ["*"] })

/** Root keys looked up by hash in the catalog. */
export const make = Effect.gen(function*() {
  const catalog = yield* Catalog
  return Auth.of({
    authenticate: (secret) =>
      Effect.gen(function*() {
        const value = Redacted.value(secret)
        if (value === "") {
          return yield* new Unauthenticated({
            message: "Missing root key: send the header Authorization: Bearer <root key>"
          })
        }
        const found = yield* catalog.findRootKeyByHash(RootKey.hash(value))
        if (Option.isNone(found)) {
          return yield* new Unauthenticated({ message: "The root key is not valid" })
        }
        const key = found.value
        if (key.disabled) return yield* new KeyForbidden({ message: "The root key is disabled" })
        if (key.expiresAt !== undefined && key.expiresAt <= (yield* Clock.currentTimeMillis)) {
          return yield* new KeyForbidden({
            message: `The root key expired at ${new Date(key.expiresAt).toISOString()}`
          })
        }
        return { workspaceId: key.workspaceId, rootKeyId: key.id, permissions: key.permissions }
      }),
    authorize: (principal, anyOf) =>
      Permission.allows(principal.permissions, anyOf)
        ? Effect.void
        : Effect.fail(InsufficientPermissions.anyOf(anyOf))
  })
})

/** {@link make} as a layer. */
export const layer: Layer.Layer<Auth, never, Catalog> = Layer.effect(Auth, make)
