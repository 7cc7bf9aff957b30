/**
 * Role-based access for the keys keymeter issues (Unkey's RBAC): a workspace's permissions (what
 * a key may do, by slug) and roles (named sets of permissions). A key holds permissions directly
 * and through its roles; `keys.verifyKey`'s permission queries match all of them.
 */
import * as Schema from "effect/Schema"
import { MAX_PERMISSION_LENGTH } from "./PermissionQuery.js"
import { boundedString, expected } from "./Validation.js"

/** A permission of a workspace. Keys and roles hold it by its `slug`. */
export class KeyPermission extends Schema.Class<KeyPermission>("KeyPermission")({
  id: Schema.String,
  workspaceId: Schema.String,
  /** Unique in the workspace. */
  name: Schema.String,
  /** Unique in the workspace: what keys hold and verifications query (the name, unless given). */
  slug: Schema.String,
  description: Schema.optional(Schema.String),
  createdAt: Schema.Number
}) {}

/** A role of a workspace: a name for a set of permissions, by slug. */
export class Role extends Schema.Class<Role>("Role")({
  id: Schema.String,
  workspaceId: Schema.String,
  /** Unique in the workspace. */
  name: Schema.String,
  description: Schema.optional(Schema.String),
  permissions: Schema.Array(Schema.String),
  createdAt: Schema.Number
}) {}

/** Most roles a key holds, and permissions a role holds. */
export const MAX_ROLES = 100
export const MAX_ROLE_PERMISSIONS = 1000

const Name = boundedString("a name", 1, MAX_PERMISSION_LENGTH)
const Description = boundedString("a description", 0, 1024)
const PermissionId = boundedString("a permission id", 1, 255).annotations({
  description: "the permission's id, or (keymeter's) its slug"
})
const RoleId = boundedString("a role id", 1, 255).annotations({
  description: "the role's id, or (keymeter's) its name"
})

/** Body of `permissions.createPermission`. */
export const CreatePermissionInput = Schema.Struct({
  name: Name,
  slug: Schema.optional(Name),
  description: Schema.optional(Description)
}).annotations({ identifier: "CreatePermissionInput" })
export type CreatePermissionInput = Schema.Schema.Type<typeof CreatePermissionInput>

/**
 * Body of `permissions.createRole`: `permissions` (slugs; those the workspace has not are made, by
 * a caller allowed to create permissions) is keymeter's.
 */
export const CreateRoleInput = Schema.Struct({
  name: Name,
  description: Schema.optional(Description),
  permissions: Schema.optional(
    Schema.Array(Name).pipe(
      Schema.maxItems(MAX_ROLE_PERMISSIONS, { message: () => `must hold at most ${MAX_ROLE_PERMISSIONS} permissions` })
    )
  )
}).annotations({ identifier: "CreateRoleInput" })
export type CreateRoleInput = Schema.Schema.Type<typeof CreateRoleInput>

/**
 * Query of `permissions.getPermission`; body of `permissions.deletePermission`. `permissionId` is
 * an id, or else a slug (keymeter's; Unkey v2's deletePermission takes either).
 */
export const PermissionIdInput = Schema.Struct({ permissionId: PermissionId }).annotations({
  identifier: "PermissionIdInput"
})

/** Query of `permissions.getRole`; body of `permissions.deleteRole`. `roleId` is an id, or else a name. */
export const RoleIdInput = Schema.Struct({ roleId: RoleId }).annotations({ identifier: "RoleIdInput" })

/** Largest page of permissions or roles. */
export const MAX_RBAC_PAGE = 100

const pageInput = (what: string, fields: string, identifier: string) =>
  Schema.Struct({
    limit: Schema.optional(
      expected(
        Schema.Number.pipe(Schema.int(), Schema.between(1, MAX_RBAC_PAGE)),
        `must be an integer from 1 to ${MAX_RBAC_PAGE}`
      )
    ),
    cursor: Schema.optional(boundedString("a cursor", 1, 1024)),
    search: Schema.optional(
      boundedString("a search text", 1, 255).annotations({
        description: `only the ${what} whose ${fields} contains it, ignoring case`
      })
    )
  }).annotations({ identifier })

/** A page of the workspace's permissions, by id; `search` matches id, name, slug or description. */
export const PagePermissionsInput = pageInput("permissions", "id, name, slug or description", "PagePermissionsInput")
export type PagePermissionsInput = Schema.Schema.Type<typeof PagePermissionsInput>

/** A page of the workspace's roles, by id; `search` matches id, name or description. */
export const PageRolesInput = pageInput("roles", "id, name or description", "PageRolesInput")
export type PageRolesInput = Schema.Schema.Type<typeof PageRolesInput>

/**
 * A permission or role named in a key's change: by `id`, else by `slug` (permissions), else by
 * `name`; `create` makes a named one that does not exist yet (a root key holding the create
 * permission).
 */
export const Reference = Schema.Struct({
  id: Schema.optional(boundedString("an id", 1, 255)),
  name: Schema.optional(Name),
  slug: Schema.optional(Name),
  create: Schema.optional(Schema.Boolean)
}).pipe(
  Schema.filter((ref) =>
    ref.id !== undefined || ref.name !== undefined || ref.slug !== undefined ||
    { path: ["id"], message: "give id, or name" }
  )
).annotations({ identifier: "Reference" })
export type Reference = Schema.Schema.Type<typeof Reference>

export const References = (max: number, what: string) =>
  Schema.Array(Reference).pipe(Schema.maxItems(max, { message: () => `must hold at most ${max} ${what}` }))

/** A permission as answered. */
export const PermissionView = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  slug: Schema.String,
  description: Schema.optional(Schema.String)
}).annotations({ identifier: "PermissionView" })

export const toPermissionView = (permission: KeyPermission): typeof PermissionView.Type => ({
  id: permission.id,
  name: permission.name,
  slug: permission.slug,
  ...(permission.description !== undefined ? { description: permission.description } : {})
})

/** A role as answered, with its permissions' slugs (keymeter's). */
export const RoleView = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  description: Schema.optional(Schema.String),
  permissions: Schema.Array(Schema.String)
}).annotations({ identifier: "RoleView" })

export const toRoleView = (role: Role): typeof RoleView.Type => ({
  id: role.id,
  name: role.name,
  ...(role.description !== undefined ? { description: role.description } : {}),
  permissions: role.permissions
})

/** A page of permissions or roles: `cursor` (the next page's) only when more follow. */
const page = <A, I>(item: Schema.Schema<A, I>, identifier: string) =>
  Schema.Struct({ items: Schema.Array(item), cursor: Schema.optional(Schema.String) }).annotations({ identifier })

/** Answer of `Rbac.pagePermissions`. */
export const PermissionPage = page(PermissionView, "PermissionPage")

/** Answer of `Rbac.pageRoles`. */
export const RolePage = page(RoleView, "RolePage")
