/**
 * What `Keys`' operations share: finding a key of the caller's workspace once its permission on
 * the key's api allows, the permissions and roles a change grants, the key as the routes show it,
 * and writing a changed key back.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { Auth } from "../Auth.js"
import * as Decision from "../Decision.js"
import { NotFound } from "../Errors.js"
import * as KeyModel from "../Key.js"
import { Key } from "../Key.js"
import type { Principal } from "../Permission.js"
import * as Permission from "../Permission.js"
import type { Named } from "../Rbac.js"
import { Rbac } from "../Rbac.js"
import { Catalog } from "../Storage.js"
import { KeyCache } from "./KeyCache.js"
import * as KnownApis from "./KnownApis.js"

/** The failure for a key the caller's workspace does not hold (or may not see). */
export const noKey = (keyId: string | undefined) =>
  new NotFound({ message: `keyId: no key ${JSON.stringify(keyId)} in this workspace` })

export const make = Effect.gen(function*() {
  const catalog = yield* Catalog
  const auth = yield* Auth
  const cache = yield* KeyCache
  const rbac = yield* Rbac
  const apis = KnownApis.make(catalog)

  /** Fails with NotFound unless the caller's workspace has the api. */
  const requireApi = (principal: Principal, apiId: string) => apis.require(principal.workspaceId, apiId)

  const identityOf = (key: Key) =>
    key.identityId === undefined
      ? Effect.succeed(undefined)
      : Effect.map(
        Decision.read(() =>
          cache.lookupIdentity(key.identityId!, () => catalog.getIdentity(key.workspaceId, key.identityId!))
        ),
        Option.getOrUndefined
      )

  /**
   * The key `keyId` of the caller's workspace, after checking `permission` on its api. A key of
   * an api the caller may not act on is answered as one that does not exist, so a narrow root key
   * learns nothing of other apis' keys; a root key holding the permission for no api at all is
   * refused outright (it could not act on any key).
   */
  const keyFor = (
    principal: Principal,
    keyId: string | undefined,
    permission: (apiId: string) => ReadonlyArray<string>,
    missing?: string
  ) =>
    Effect.gen(function*() {
      const action = permission("*")[0]!.slice("api.*.".length)
      const onSomeApi = principal.permissions.some((p) =>
        p === "*" || (p.startsWith("api.") && p.endsWith(`.${action}`))
      )
      if (!onSomeApi) yield* auth.authorize(principal, permission("*"))
      const key = keyId === undefined ? Option.none() : yield* catalog.getKey(principal.workspaceId, keyId)
      if (Option.isNone(key) || Exit.isFailure(auth.authorize(principal, permission(key.value.apiId)))) {
        return yield* (missing === undefined ? noKey(keyId) : new NotFound({ message: missing }))
      }
      return key.value
    })

  /**
   * The key `keyId` of the caller's workspace, for the routes that change what it holds, once
   * `required` of its api allows the change (a key of an api the caller may not change is refused
   * as such, not hidden).
   */
  const keyIn = (principal: Principal, keyId: string, required: (apiId: string) => ReadonlyArray<string>) =>
    Effect.gen(function*() {
      const found = yield* catalog.getKey(principal.workspaceId, keyId)
      if (Option.isNone(found)) return yield* noKey(keyId)
      yield* auth.authorize(principal, required(found.value.apiId))
      return found.value
    })

  /** The names of the roles `ids` (those that still exist). */
  const roleNames = (workspaceId: string, ids: ReadonlyArray<string> | undefined) =>
    ids === undefined || ids.length === 0
      ? Effect.succeed([] as Array<string>)
      : Effect.map(
        Effect.forEach(ids, (id) => catalog.getRole(workspaceId, id)),
        (roles) => roles.flatMap((role) => Option.isSome(role) ? [role.value.name] : [])
      )

  /** The key as the routes answer it: its identity, balance and roles' names. */
  const view = (key: Key) =>
    Effect.gen(function*() {
      const identity = yield* identityOf(key)
      const credits = key.credited ? Option.getOrUndefined(yield* catalog.getCredits(key.id)) : undefined
      return KeyModel.toView(key, identity, credits, yield* roleNames(key.workspaceId, key.roles))
    })

  /**
   * The slugs and role ids a key of `apiId` is given by a change naming `permissions` and
   * `roles`, each checked (see `Permission.required.addPermissionToKey`: the RBAC permission, or
   * that of the key operation `via`), and what does not exist created as `Rbac` allows.
   */
  const grants = (
    principal: Principal,
    apiId: string,
    via: Permission.KeyOperation,
    permissions: ReadonlyArray<Named> | undefined,
    roles: ReadonlyArray<Named> | undefined
  ) =>
    Effect.gen(function*() {
      if (permissions !== undefined && permissions.length > 0) {
        yield* auth.authorize(principal, Permission.required.addPermissionToKey(apiId, via))
      }
      if (roles !== undefined && roles.length > 0) {
        yield* auth.authorize(principal, Permission.required.addRoleToKey(apiId, via))
      }
      const slugs = permissions === undefined
        ? undefined
        : (yield* rbac.resolvePermissions(principal, permissions, "permissions")).map((p) => p.slug)
      const roleIds = roles === undefined
        ? undefined
        : (yield* rbac.resolveRoles(principal, roles, "roles")).map((r) => r.id)
      return { slugs, roleIds }
    })

  /** `key` with `fields` changed, written back (its credits kept); NotFound when it is gone. */
  const replace = (key: Key, fields: Partial<ConstructorParameters<typeof Key>[0]>, now: number) =>
    Effect.gen(function*() {
      const next: Record<string, unknown> = { ...key, ...fields, updatedAt: now }
      if (Array.isArray(next.roles) && next.roles.length === 0) delete next.roles
      const updated = new Key(next as ConstructorParameters<typeof Key>[0])
      if (!(yield* cache.write({ hashes: [key.hash] }, catalog.replaceKey(updated, "keep")))) {
        return yield* noKey(key.id)
      }
      return updated
    })

  return { requireApi, keyFor, keyIn, view, grants, replace } as const
})
