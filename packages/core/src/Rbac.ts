/**
 * The permissions and roles of a workspace (Unkey's RBAC; see `Role`): created, read, listed and
 * deleted here, and resolved for the keys that hold them (`Keys`). Deleting one takes it from
 * every key and role holding it, at once on every server (the catalog's revision moves).
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { Auth } from "./Auth.js"
import { Conflict, InsufficientPermissions, NotFound } from "./Errors.js"
import * as Ids from "./Ids.js"
import type { Principal } from "./Permission.js"
import * as Permission from "./Permission.js"
import type { Reference } from "./Role.js"
import * as RoleModel from "./Role.js"
import { KeyPermission, Role } from "./Role.js"
import { Catalog } from "./Storage.js"
import * as Validation from "./Validation.js"

/** How a key's change names a permission or role: a name (string) or a reference. */
export type Named = string | Reference

/** Manages a workspace's permissions and roles, and resolves those a key's change names. */
export class Rbac extends Effect.Service<Rbac>()("@keymeter/core/Rbac", {
  effect: Effect.gen(function*() {
    const catalog = yield* Catalog
    const auth = yield* Auth
    const decodePermission = Validation.decode(RoleModel.CreatePermissionInput)
    const decodeRole = Validation.decode(RoleModel.CreateRoleInput)
    const decodePermissionId = Validation.decode(RoleModel.PermissionIdInput)
    const decodeRoleId = Validation.decode(RoleModel.RoleIdInput)

    const may = (principal: Principal, permission: ReadonlyArray<string>) =>
      Exit.isSuccess(auth.authorize(principal, permission))

    /** Stores a new permission; a name or slug the workspace has already is a conflict. */
    const putPermission = (principal: Principal, request: RoleModel.CreatePermissionInput) =>
      Effect.gen(function*() {
        const permission = new KeyPermission({
          id: Ids.make(Ids.Prefix.permission, yield* Clock.currentTimeMillis),
          workspaceId: principal.workspaceId,
          name: request.name,
          slug: request.slug ?? request.name,
          ...(request.description !== undefined && request.description !== ""
            ? { description: request.description }
            : {}),
          createdAt: yield* Clock.currentTimeMillis
        })
        if ((yield* catalog.putPermission(permission)) === "conflict") {
          return yield* new Conflict({
            message: `name: the workspace has a permission named ${JSON.stringify(request.name)} or with the slug ` +
              `${JSON.stringify(permission.slug)} already`
          })
        }
        return permission
      })

    const createPermission = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const request = yield* decodePermission(input)
        yield* auth.authorize(principal, Permission.required.createPermission())
        return RoleModel.toPermissionView(yield* putPermission(principal, request))
      }).pipe(Effect.withSpan("Rbac.createPermission"))

    const permissionFor = (principal: Principal, permissionId: string) =>
      Effect.flatMap(catalog.getPermission(principal.workspaceId, permissionId), (found) =>
        Option.isNone(found)
          ? Effect.fail(
            new NotFound({ message: `permissionId: no permission ${JSON.stringify(permissionId)} in this workspace` })
          )
          : Effect.succeed(found.value))

    const getPermission = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const { permissionId } = yield* decodePermissionId(input)
        yield* auth.authorize(principal, Permission.required.readPermission())
        return RoleModel.toPermissionView(yield* permissionFor(principal, permissionId))
      }).pipe(Effect.withSpan("Rbac.getPermission"))

    const listPermissions = (principal: Principal) =>
      Effect.gen(function*() {
        yield* auth.authorize(principal, Permission.required.readPermission())
        return (yield* catalog.listPermissions(principal.workspaceId)).map(RoleModel.toPermissionView)
      }).pipe(Effect.withSpan("Rbac.listPermissions"))

    const deletePermission = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const { permissionId } = yield* decodePermissionId(input)
        yield* auth.authorize(principal, Permission.required.deletePermission())
        if (!(yield* catalog.deletePermission(principal.workspaceId, permissionId))) {
          return yield* new NotFound({
            message: `permissionId: no permission ${JSON.stringify(permissionId)} in this workspace`
          })
        }
        return {}
      }).pipe(Effect.withSpan("Rbac.deletePermission"))

    /** Stores a new role holding existing permissions; a name the workspace has already is a conflict. */
    const putRole = (principal: Principal, request: RoleModel.CreateRoleInput) =>
      Effect.gen(function*() {
        const names = request.permissions ?? []
        const permissions = names.length === 0 ? [] : yield* catalog.findPermissions(principal.workspaceId, names)
        const missing = names.filter((name) => !permissions.some((p) => p.slug === name || p.name === name))
        if (missing.length > 0) {
          return yield* new NotFound({
            message: `permissions: no permission ${JSON.stringify(missing[0])} in this workspace`
          })
        }
        const now = yield* Clock.currentTimeMillis
        const role = new Role({
          id: Ids.make(Ids.Prefix.role, now),
          workspaceId: principal.workspaceId,
          name: request.name,
          ...(request.description !== undefined && request.description !== ""
            ? { description: request.description }
            : {}),
          permissions: [...new Set(permissions.map((p) => p.slug))],
          createdAt: now
        })
        if ((yield* catalog.putRole(role)) === "conflict") {
          return yield* new Conflict({
            message: `name: the workspace has a role named ${JSON.stringify(request.name)} already`
          })
        }
        return role
      })

    const createRole = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const request = yield* decodeRole(input)
        yield* auth.authorize(principal, Permission.required.createRole())
        if ((request.permissions ?? []).length > 0) {
          yield* auth.authorize(principal, Permission.required.addPermissionToRole())
        }
        return RoleModel.toRoleView(yield* putRole(principal, request))
      }).pipe(Effect.withSpan("Rbac.createRole"))

    const getRole = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const { roleId } = yield* decodeRoleId(input)
        yield* auth.authorize(principal, Permission.required.readRole())
        const role = yield* catalog.getRole(principal.workspaceId, roleId)
        if (Option.isNone(role)) {
          return yield* new NotFound({ message: `roleId: no role ${JSON.stringify(roleId)} in this workspace` })
        }
        return RoleModel.toRoleView(role.value)
      }).pipe(Effect.withSpan("Rbac.getRole"))

    const listRoles = (principal: Principal) =>
      Effect.gen(function*() {
        yield* auth.authorize(principal, Permission.required.readRole())
        return (yield* catalog.listRoles(principal.workspaceId)).map(RoleModel.toRoleView)
      }).pipe(Effect.withSpan("Rbac.listRoles"))

    const deleteRole = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const { roleId } = yield* decodeRoleId(input)
        yield* auth.authorize(principal, Permission.required.deleteRole())
        if (!(yield* catalog.deleteRole(principal.workspaceId, roleId))) {
          return yield* new NotFound({ message: `roleId: no role ${JSON.stringify(roleId)} in this workspace` })
        }
        return {}
      }).pipe(Effect.withSpan("Rbac.deleteRole"))

    /**
     * The permissions `named` names, in the caller's workspace. One named by a string that does
     * not exist is created when the caller holds `rbac.*.create_permission` (refused otherwise);
     * one named by a reference only with `create: true` (and that permission); an id that names
     * none is not found. `field` words the errors.
     */
    const resolvePermissions = (principal: Principal, named: ReadonlyArray<Named>, field: string) =>
      Effect.gen(function*() {
        const out = new Map<string, KeyPermission>()
        const byName: Array<{ readonly i: number; readonly name: string; readonly create: boolean | "if allowed" }> = []
        for (const [i, n] of named.entries()) {
          if (typeof n === "string") byName.push({ i, name: n, create: "if allowed" })
          else if (n.id === undefined) byName.push({ i, name: (n.slug ?? n.name)!, create: n.create === true })
        }
        const found = yield* catalog.findPermissions(principal.workspaceId, byName.map((n) => n.name))
        for (const [i, n] of named.entries()) {
          if (typeof n === "string" || n.id === undefined) continue
          const permission = yield* catalog.getPermission(principal.workspaceId, n.id)
          if (Option.isNone(permission)) {
            return yield* new NotFound({ message: `${field}[${i}].id: no permission ${JSON.stringify(n.id)}` })
          }
          out.set(permission.value.id, permission.value)
        }
        for (const n of byName) {
          const existing = found.find((p) => p.slug === n.name) ?? found.find((p) => p.name === n.name)
          if (existing !== undefined) {
            out.set(existing.id, existing)
            continue
          }
          const path = typeof named[n.i] === "string" ? `${field}[${n.i}]` : `${field}[${n.i}].name`
          if (n.create === false) {
            return yield* new NotFound({
              message: `${path}: no permission ${JSON.stringify(n.name)} in this workspace (create: true makes it)`
            })
          }
          if (!may(principal, Permission.required.createPermission())) {
            return yield* new InsufficientPermissions({
              message: `${path}: no permission ${JSON.stringify(n.name)} in this workspace; creating it needs ` +
                "rbac.*.create_permission",
              required: Permission.required.createPermission()
            })
          }
          // Made here unless a concurrent request made it first.
          const made = yield* Effect.catchTag(
            putPermission(principal, { name: n.name }),
            "Conflict",
            () =>
              Effect.flatMap(
                catalog.findPermissions(principal.workspaceId, [n.name]),
                (again) => Effect.succeed(again.find((p) => p.slug === n.name) ?? again[0]!)
              )
          )
          out.set(made.id, made)
        }
        return [...out.values()]
      })

    /**
     * The roles `named` names, in the caller's workspace. A role that does not exist is not found,
     * unless named by a reference with `create: true` and the caller holds `rbac.*.create_role`.
     */
    const resolveRoles = (principal: Principal, named: ReadonlyArray<Named>, field: string) =>
      Effect.gen(function*() {
        const out = new Map<string, Role>()
        const names = named.flatMap((n) => typeof n === "string" ? [n] : n.id === undefined ? [n.name ?? n.slug!] : [])
        const found = yield* catalog.findRoles(principal.workspaceId, names)
        for (const [i, n] of named.entries()) {
          if (typeof n !== "string" && n.id !== undefined) {
            const role = yield* catalog.getRole(principal.workspaceId, n.id)
            if (Option.isNone(role)) {
              return yield* new NotFound({ message: `${field}[${i}].id: no role ${JSON.stringify(n.id)}` })
            }
            out.set(role.value.id, role.value)
            continue
          }
          const name = typeof n === "string" ? n : (n.name ?? n.slug)!
          const existing = found.find((r) => r.name === name)
          if (existing !== undefined) {
            out.set(existing.id, existing)
            continue
          }
          const path = typeof n === "string" ? `${field}[${i}]` : `${field}[${i}].name`
          if (typeof n === "string" || n.create !== true) {
            return yield* new NotFound({ message: `${path}: no role ${JSON.stringify(name)} in this workspace` })
          }
          yield* auth.authorize(principal, Permission.required.createRole())
          const made = yield* Effect.catchTag(
            putRole(principal, { name }),
            "Conflict",
            () => Effect.map(catalog.findRoles(principal.workspaceId, [name]), (again) => again[0]!)
          )
          out.set(made.id, made)
        }
        return [...out.values()]
      })

    return {
      createPermission,
      getPermission,
      listPermissions,
      deletePermission,
      createRole,
      getRole,
      listRoles,
      deleteRole,
      resolvePermissions,
      resolveRoles
    } as const
  })
}) {}
