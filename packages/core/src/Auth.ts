/**
 * The Auth port: from a root key secret to a {@link Principal}, and the permission check.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type { StorageError } from "./Errors.js"
import { InsufficientPermissions, KeyForbidden, Unauthenticated } from "./Errors.js"
import { CatalogCache } from "./internal/CatalogCache.js"
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
    /**
     * What {@link authenticate} would answer for a non-empty secret, when that is known without
     * I/O (the key was looked up since root keys last changed); undefined otherwise. For request
     * paths that answer without running an effect.
     */
    readonly peek: (secret: string) => Either.Either<Principal, Unauthenticated | KeyForbidden> | undefined
  }
>() {}

/** A principal holding every permission in `workspaceId`: what the embedded library acts as. */
export const system = (workspaceId: string): Principal => ({ workspaceId, rootKeyId: "system", permissions: ["*"] })

// The refusals of unknown keys are built once: a bad key must be cheap to refuse, and an error
// value costs a stack trace and a schema check each time it is made.
const MISSING = new Unauthenticated({ message: "Missing root key: send the header Authorization: Bearer <root key>" })
const UNKNOWN = new Unauthenticated({ message: "The root key is not valid" })

const DISABLED = new KeyForbidden({ message: "The root key is disabled" })

/** A lookup of a root key hash: the key and its principal, or nothing found. */
interface Lookup {
  readonly key: RootKey.RootKey | undefined
  readonly principal: Principal | undefined
}

/**
 * Root keys looked up by hash in the catalog. Lookups are remembered while the catalog's
 * {@link Catalog} `revision` holds, so a revoked, disabled or new key counts from the next
 * request on; expiry is checked against the clock every time.
 */
export const make = Effect.gen(function*() {
  const catalog = yield* Catalog
  const clock = yield* Effect.clock
  const lookups = new CatalogCache<Lookup>(catalog.revision)

  const judge = (lookup: Lookup): Either.Either<Principal, Unauthenticated | KeyForbidden> => {
    const key = lookup.key
    if (key === undefined) return Either.left(UNKNOWN)
    if (key.disabled) return Either.left(DISABLED)
    if (key.expiresAt !== undefined && key.expiresAt <= clock.unsafeCurrentTimeMillis()) {
      return Either.left(
        new KeyForbidden({ message: `The root key expired at ${new Date(key.expiresAt).toISOString()}` })
      )
    }
    return Either.right(lookup.principal!)
  }

  const lookUp = (hash: string) =>
    lookups.get(
      hash,
      Effect.map(catalog.findRootKeyByHash(hash), (found): Lookup => {
        const key = Option.getOrUndefined(found)
        return {
          key,
          principal: key && { workspaceId: key.workspaceId, rootKeyId: key.id, permissions: key.permissions }
        }
      })
    )

  return Auth.of({
    authenticate: (secret) =>
      Effect.suspend(() => {
        const value = Redacted.value(secret)
        if (value === "") return Effect.fail(MISSING)
        return Effect.flatMap(lookUp(RootKey.hash(value)), judge)
      }),
    authorize: (principal, anyOf) =>
      Permission.allows(principal.permissions, anyOf)
        ? Effect.void
        : Effect.fail(InsufficientPermissions.anyOf(anyOf)),
    peek: (secret) => {
      const lookup = lookups.peek(RootKey.hash(secret))
      return lookup === undefined ? undefined : judge(lookup)
    }
  })
})

/** {@link make} as a layer. */
export const layer: Layer.Layer<Auth, never, Catalog> = Layer.effect(Auth, make)
