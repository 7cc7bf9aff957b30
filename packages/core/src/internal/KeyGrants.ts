/**
 * The permissions and roles a key holds itself, added, set or removed (`Keys`'
 * `changePermissions` and `changeRoles`).
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as KeyModel from "../Key.js"
import type { Principal } from "../Permission.js"
import * as Permission from "../Permission.js"
import { Rbac } from "../Rbac.js"
import * as RoleModel from "../Role.js"
import { Catalog } from "../Storage.js"
import * as Validation from "../Validation.js"
import type * as KeyAccess from "./KeyAccess.js"
import * as Span from "./Span.js"

type Access = Effect.Effect.Success<typeof KeyAccess.make>

/** What a key holds after `op` with `named`: those added (once each), `named` alone, or those left. */
const changed = (op: "add" | "set" | "remove", held: ReadonlyArray<string>, named: ReadonlyArray<string>) =>
  op === "set" ? named : op === "add" ? [...new Set([...held, ...named])] : held.filter((x) => !named.includes(x))

/** What a change asks of each permission or role it names: given, replaced by, or taken. */
const allowedFor = (op: "add" | "set" | "remove", add: ReadonlyArray<string>, remove: ReadonlyArray<string>) =>
  op === "add" ? add : op === "remove" ? remove : [...add, ...remove]

export const make = (access: Access) =>
  Effect.gen(function*() {
    const catalog = yield* Catalog
    const rbac = yield* Rbac
    const { keyIn, replace } = access
    const decodeKeyPermissions = Validation.decode(KeyModel.KeyPermissionsInput)
    const decodeKeyRoles = Validation.decode(KeyModel.KeyRolesInput)

    /**
     * Adds, sets or removes the permissions a key holds itself; answers all it then holds. Adding
     * and setting need `Permission.required.addPermissionToKey`, removing (and setting away)
     * `removePermissionFromKey`, of the key's api.
     */
    const changePermissions = (principal: Principal, op: "add" | "set" | "remove", input: unknown) =>
      Effect.gen(function*() {
        const request = yield* decodeKeyPermissions(input)
        const key = yield* keyIn(principal, request.keyId, (apiId) =>
          allowedFor(
            op,
            Permission.required.addPermissionToKey(apiId, "update_key"),
            Permission.required.removePermissionFromKey(apiId)
          ))
        const named = op === "remove"
          ? request.permissions.map(({ create: _, ...ref }) => ref)
          : request.permissions
        const slugs = (yield* rbac.resolvePermissions(principal, named, "permissions")).map((p) => p.slug)
        const next = changed(op, key.permissions, slugs)
        yield* replace(key, { permissions: next }, yield* Clock.currentTimeMillis)
        const held = next.length === 0 ? [] : yield* catalog.findPermissions(principal.workspaceId, next)
        return next.flatMap((slug) => {
          const permission = held.find((p) => p.slug === slug)
          return permission === undefined ? [] : [RoleModel.toPermissionView(permission)]
        })
      }).pipe(Span.span("Keys.changePermissions"))

    /** Adds, sets or removes a key's roles, as {@link changePermissions} its permissions. */
    const changeRoles = (principal: Principal, op: "add" | "set" | "remove", input: unknown) =>
      Effect.gen(function*() {
        const request = yield* decodeKeyRoles(input)
        const key = yield* keyIn(principal, request.keyId, (apiId) =>
          allowedFor(
            op,
            Permission.required.addRoleToKey(apiId, "update_key"),
            Permission.required.removeRoleFromKey(apiId)
          ))
        const named = op === "remove" ? request.roles.map(({ create: _, ...ref }) => ref) : request.roles
        const roles = yield* rbac.resolveRoles(principal, named, "roles")
        const ids = roles.map((r) => r.id)
        const next = changed(op, key.roles ?? [], ids)
        yield* replace(key, { roles: next }, yield* Clock.currentTimeMillis)
        if (next.length === 0) return []
        const all = yield* catalog.listRoles(principal.workspaceId)
        return next.flatMap((id) => {
          const role = all.find((r) => r.id === id)
          return role === undefined ? [] : [RoleModel.toRoleView(role)]
        })
      }).pipe(Span.span("Keys.changeRoles"))

    return { changePermissions, changeRoles } as const
  })
