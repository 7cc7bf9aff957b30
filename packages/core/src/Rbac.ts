/**
 * The permissions and roles of a workspace (Unkey's RBAC; see `Role`): created, read, listed (whole
 * or by page) and deleted here, and resolved for the keys that hold them (`Keys`). Deleting one
 * takes it from every key and role holding it, at once on every server (the catalog's revision
 * moves). A permission is named by its id or its slug, a role by its id or its name, in every
 * dialect.
 *
 * A role's permissions are set when it is created: the catalog has no operation that changes a
 * stored role (deleting and making it again would take it from every key holding it).
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { Auth } from "./Auth.js"
import * as Cursor from "./Cursor.js"
import { Conflict, InsufficientPermissions, NotFound, ValidationError } from "./Errors.js"
import * as Ids from "./Ids.js"
import * as Span from "./internal/Span.js"
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
    const decodePagePermissions = Validation.decode(RoleModel.PagePermissionsInput)
    const decodePageRoles = Validation.decode(RoleModel.PageRolesInput)

    const may = (principal: Principal, permission: ReadonlyArray<string>) =>
      Exit.isSuccess(auth.authorize(principal, permission))

    /** The id a page's cursor continues after; refused when the cursor is not one `listing` gave this workspace. */
    const cursorAfter = (principal: Principal, text: string | undefined, id: RegExp, listing: string) => {
      const cursor = text === undefined ? undefined : Cursor.decode(text, id)
      return cursor === null || (cursor !== undefined && cursor.scope !== principal.workspaceId)
        ? Effect.fail(new ValidationError({ message: `cursor: is not a cursor ${listing} returned` }))
        : Effect.succeed(cursor?.after)
    }

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
      }).pipe(Span.span("Rbac.createPermission"))

    /** The permission of `permissionId`: the one with that id, else (keymeter's) the one with that slug. */
    const permissionFor = (principal: Principal, permissionId: string) =>
      Effect.gen(function*() {
        const byId = yield* catalog.getPermission(principal.workspaceId, permissionId)
        if (Option.isSome(byId)) return byId.value
        const bySlug = (yield* catalog.findPermissions(principal.workspaceId, [permissionId]))
          .find((p) => p.slug === permissionId)
        if (bySlug !== undefined) return bySlug
        return yield* new NotFound({
          message: `permissionId: no permission ${JSON.stringify(permissionId)} in this workspace`
        })
      })

    /** A permission, by id or slug. */
    const getPermission = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const { permissionId } = yield* decodePermissionId(input)
        yield* auth.authorize(principal, Permission.required.readPermission())
        return RoleModel.toPermissionView(yield* permissionFor(principal, permissionId))
      }).pipe(Span.span("Rbac.getPermission"))

    const listPermissions = (principal: Principal) =>
      Effect.gen(function*() {
        yield* auth.authorize(principal, Permission.required.readPermission())
        return (yield* catalog.listPermissions(principal.workspaceId)).map(RoleModel.toPermissionView)
      }).pipe(Span.span("Rbac.listPermissions"))

    /**
     * A page of the workspace's permissions by id, those whose id, name, slug or description
     * contains `search` (ignoring case) when given.
     */
    const pagePermissions = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const request = yield* decodePagePermissions(input)
        yield* auth.authorize(principal, Permission.required.readPermission())
        const after = yield* cursorAfter(principal, request.cursor, PERMISSION_ID, "listPermissions")
        return page(
          principal,
          yield* catalog.listPermissions(principal.workspaceId),
          request,
          after,
          (p) => [p.id, p.name, p.slug, p.description],
          RoleModel.toPermissionView
        )
      }).pipe(Span.span("Rbac.pagePermissions"))

    /** Deletes a permission, by id or slug. */
    const deletePermission = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const { permissionId } = yield* decodePermissionId(input)
        yield* auth.authorize(principal, Permission.required.deletePermission())
        const permission = yield* permissionFor(principal, permissionId)
        // False when a concurrent request deleted it since.
        if (!(yield* catalog.deletePermission(principal.workspaceId, permission.id))) {
          return yield* new NotFound({
            message: `permissionId: no permission ${JSON.stringify(permissionId)} in this workspace`
          })
        }
        return {}
      }).pipe(Span.span("Rbac.deletePermission"))

    const roleTaken = (name: string) =>
      new Conflict({ message: `name: the workspace has a role named ${JSON.stringify(name)} already` })

    /** Stores a new role holding `permissions`; a name the workspace has already is a conflict. */
    const putRole = (
      principal: Principal,
      request: { readonly name: string; readonly description?: string | undefined },
      permissions: ReadonlyArray<KeyPermission>
    ) =>
      Effect.gen(function*() {
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
        if ((yield* catalog.putRole(role)) === "conflict") return yield* roleTaken(request.name)
        return role
      })

    /**
     * Creates a role holding the permissions it names by slug (or name); those the workspace has
     * not are made, as for a key (see `resolvePermissions`).
     */
    const createRole = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const request = yield* decodeRole(input)
        yield* auth.authorize(principal, Permission.required.createRole())
        const names = request.permissions ?? []
        if (names.length > 0) {
          yield* auth.authorize(principal, Permission.required.addPermissionToRole())
          // A name taken is refused before any permission is made for the role (putRole still
          // refuses one taken by a concurrent request).
          if ((yield* catalog.findRoles(principal.workspaceId, [request.name])).length > 0) {
            return yield* roleTaken(request.name)
          }
        }
        const permissions = names.length === 0 ? [] : yield* resolvePermissions(principal, names, "permissions")
        return RoleModel.toRoleView(yield* putRole(principal, request, permissions))
      }).pipe(Span.span("Rbac.createRole"))

    /** The role of `roleId`: the one with that id, else (keymeter's) the one with that name. */
    const roleFor = (principal: Principal, roleId: string) =>
      Effect.gen(function*() {
        const byId = yield* catalog.getRole(principal.workspaceId, roleId)
        if (Option.isSome(byId)) return byId.value
        const byName = (yield* catalog.findRoles(principal.workspaceId, [roleId])).find((r) => r.name === roleId)
        if (byName !== undefined) return byName
        return yield* new NotFound({ message: `roleId: no role ${JSON.stringify(roleId)} in this workspace` })
      })

    /** A role, by id or name. */
    const getRole = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const { roleId } = yield* decodeRoleId(input)
        yield* auth.authorize(principal, Permission.required.readRole())
        return RoleModel.toRoleView(yield* roleFor(principal, roleId))
      }).pipe(Span.span("Rbac.getRole"))

    const listRoles = (principal: Principal) =>
      Effect.gen(function*() {
        yield* auth.authorize(principal, Permission.required.readRole())
        return (yield* catalog.listRoles(principal.workspaceId)).map(RoleModel.toRoleView)
      }).pipe(Span.span("Rbac.listRoles"))

    /** A page of the workspace's roles by id, those whose id, name or description contains `search` (any case). */
    const pageRoles = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const request = yield* decodePageRoles(input)
        yield* auth.authorize(principal, Permission.required.readRole())
        const after = yield* cursorAfter(principal, request.cursor, ROLE_ID, "listRoles")
        return page(
          principal,
          yield* catalog.listRoles(principal.workspaceId),
          request,
          after,
          (r) => [r.id, r.name, r.description],
          RoleModel.toRoleView
        )
      }).pipe(Span.span("Rbac.pageRoles"))

    /** Deletes a role, by id or name. */
    const deleteRole = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const { roleId } = yield* decodeRoleId(input)
        yield* auth.authorize(principal, Permission.required.deleteRole())
        const role = yield* roleFor(principal, roleId)
        // False when a concurrent request deleted it since.
        if (!(yield* catalog.deleteRole(principal.workspaceId, role.id))) {
          return yield* new NotFound({ message: `roleId: no role ${JSON.stringify(roleId)} in this workspace` })
        }
        return {}
      }).pipe(Span.span("Rbac.deleteRole"))

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
            putRole(principal, { name }, []),
            "Conflict",
            () => Effect.map(catalog.findRoles(principal.workspaceId, [name]), (again) => again[0]!)
          )
          out.set(made.id, made)
        }
        return [...out.values()]
      })

    /**
     * Roles as answered with their permissions whole (Unkey v2's), not their slugs. For roles the
     * caller has just read: reading them checked its permission.
     */
    const expandRoles = (principal: Principal, roles: ReadonlyArray<typeof RoleModel.RoleView.Type>) =>
      Effect.gen(function*() {
        const slugs = [...new Set(roles.flatMap((role) => role.permissions))]
        const found = slugs.length === 0 ? [] : yield* catalog.findPermissions(principal.workspaceId, slugs)
        const bySlug = new Map(found.map((permission) => [permission.slug, permission]))
        return roles.map((role) => ({
          ...role,
          permissions: role.permissions.flatMap((slug) => {
            const permission = bySlug.get(slug)
            return permission === undefined ? [] : [RoleModel.toPermissionView(permission)]
          })
        }))
      })

    return {
      expandRoles,
      createPermission,
      getPermission,
      listPermissions,
      pagePermissions,
      deletePermission,
      createRole,
      getRole,
      listRoles,
      pageRoles,
      deleteRole,
      resolvePermissions,
      resolveRoles
    } as const
  })
}) {}

/** The ids of permissions and roles, as their page cursors hold them. */
const PERMISSION_ID = /^perm_[0-9A-Z]{26}$/
const ROLE_ID = /^role_[0-9A-Z]{26}$/

/**
 * One page of `all`: in id order, after `after`, those one of whose `fields` contains `search`
 * (ignoring case) when given; `cursor` continues after its last item, only when more follow.
 */
const page = <A extends { readonly id: string }, V>(
  principal: Principal,
  all: ReadonlyArray<A>,
  request: { readonly limit?: number | undefined; readonly search?: string | undefined },
  after: string | undefined,
  fields: (item: A) => ReadonlyArray<string | undefined>,
  view: (item: A) => V
): { readonly items: Array<V>; readonly cursor?: string } => {
  const needle = request.search?.toLowerCase()
  const limit = request.limit ?? RoleModel.MAX_RBAC_PAGE
  // Sorted here, as cursors compare ids as JavaScript strings (a database's collation may not).
  const matches = [...all].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).filter((item) =>
    (after === undefined || item.id > after) &&
    (needle === undefined || fields(item).some((field) => field?.toLowerCase().includes(needle) === true))
  )
  const items = matches.slice(0, limit)
  return {
    items: items.map(view),
    ...(matches.length > limit ? { cursor: Cursor.encode(principal.workspaceId, items[items.length - 1]!.id) } : {})
  }
}
