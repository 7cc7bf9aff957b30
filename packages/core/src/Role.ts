/**
 * Role-based access for the keys keymeter issues (Unkey's RBAC): a workspace's permissions (what
 * a key may do, by slug) and roles (named sets of permissions). A key holds permissions directly
 * and through its roles; `keys.verifyKey`'s permission queries match all of them.
 */
import * as Schema from "effect/Schema"
import { MAX_PERMISSION_LENGTH } from "./PermissionQuery.js"
import { boundedString } from "./Validation.js"

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
const PermissionId = boundedString("a permission id", 1, 255)
const RoleId = boundedString("a role id", 1, 255)

/** Body of `permissions.createPermission`. */
export const CreatePermissionInput = Schema.Struct({
  name: Name,
  slug: Schema.optional(Name),
  description: Schema.optional(Description)
}).annotations({ identifier: "CreatePermissionInput" })
export type CreatePermissionInput = Schema.Schema.Type<typeof CreatePermissionInput>

/** Body of `permissions.createRole`: `permissions` (slugs of existing permissions) is keymeter's. */
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

/** Query of `permissions.getPermission`; body of `permissions.deletePermission`. */
export const PermissionIdInput = Schema.Struct({ permissionId: PermissionId }).annotations({
  identifier: "PermissionIdInput"
})

/** Query of `permissions.getRole`; body of `permissions.deleteRole`. */
export const RoleIdInput = Schema.Struct({ roleId: RoleId }).annotations({ identifier: "RoleIdInput" })

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
