/**
 * The Auth port: from a root key secret to a {@link Principal}, and the permission check.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as CatalogPart from "./CatalogPart.js"
import * as Decision from "./Decision.js"
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
    /**
     * The principal of a root key secret; an empty secret means no credentials were sent. Decided
     * when called (see `Decision`): an Exit when the key's lookup is remembered.
     */
    readonly authenticate: (
      secret: Redacted.Redacted<string>
    ) => Effect.Effect<Principal, Unauthenticated | KeyForbidden | StorageError>
    /**
     * Whether `secret` was a valid root key when last looked up, whatever changed since: lets a
     * client past its budget of unknown keys (the http layer's) keep using its real ones.
     */
    readonly wasValid: (secret: string) => boolean
    /** Succeeds when the principal holds any of `anyOf` (or `*`): decided at once, an Exit. */
    readonly authorize: (
      principal: Principal,
      anyOf: ReadonlyArray<string>
    ) => Exit.Exit<void, InsufficientPermissions>
  }
>() {}

/** A principal holding every permission in `workspaceId`: what the embedded library acts as. */
export const system = (workspaceId: string): Principal => ({ workspaceId, rootKeyId: "system", permissions: ["*"] })

// The refusals of unknown keys are built once: a bad key must be cheap to refuse, and an error
// value costs a stack trace and a schema check each time it is made.
const MISSING = Exit.fail(
  new Unauthenticated({ message: "Missing root key: send the header Authorization: Bearer <root key>" })
)
const UNKNOWN = Exit.fail(new Unauthenticated({ message: "The root key is not valid" }))
const DISABLED = Exit.fail(new KeyForbidden({ message: "The root key is disabled" }))

/** A lookup of a root key hash: the key and its principal, or nothing found. */
interface Lookup {
  readonly key: RootKey.RootKey | undefined
  /** Its principal as an answer, made once. */
  readonly principal: Exit.Exit<Principal> | undefined
}

/**
 * Root keys looked up by hash in the catalog. Lookups are remembered while the catalog's
 * {@link Catalog} `revision` holds, so a revoked, disabled or new key counts from the next
 * request on; expiry is checked against the clock every time.
 */
export const make = Effect.gen(function*() {
  const catalog = yield* Catalog
  const clock = yield* Effect.clock
  const lookups = new CatalogCache<Lookup>(CatalogPart.revisionOf(catalog, "rootKeys"))

  const judge = (lookup: Lookup): Exit.Exit<Principal, Unauthenticated | KeyForbidden> => {
    const key = lookup.key
    if (key === undefined) return UNKNOWN
    if (key.disabled) return DISABLED
    if (key.expiresAt !== undefined && key.expiresAt <= clock.unsafeCurrentTimeMillis()) {
      return Exit.fail(
        new KeyForbidden({ message: `The root key expired at ${new Date(key.expiresAt).toISOString()}` })
      )
    }
    return lookup.principal!
  }

  const read = (hash: string) =>
    Effect.map(catalog.findRootKeyByHash(hash), (found): Lookup => {
      const key = Option.getOrUndefined(found)
      if (key === undefined) return { key, principal: undefined }
      const principal = { workspaceId: key.workspaceId, rootKeyId: key.id, permissions: key.permissions }
      return { key, principal: Exit.succeed(principal) }
    })

  return Auth.of({
    authenticate: (secret) => {
      const value = Redacted.value(secret)
      if (value === "") return MISSING
      const hash = RootKey.hash(value)
      return Decision.make<Principal, Unauthenticated | KeyForbidden | StorageError, never>(() => {
        const lookup = lookups.lookup(hash, () => read(hash))
        return lookup instanceof Decision.Missing ? lookup : judge(lookup)
      })
    },
    wasValid: (secret) => lookups.hint(RootKey.hash(secret))?.key !== undefined,
    authorize: (principal, anyOf) =>
      Permission.allows(principal.permissions, anyOf)
        ? Exit.void
        : Exit.fail(InsufficientPermissions.anyOf(anyOf))
  })
})

/** {@link make} as a layer. */
export const layer: Layer.Layer<Auth, never, Catalog> = Layer.effect(Auth, make)
