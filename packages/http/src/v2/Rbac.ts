/**
 * Unkey v2's permissions and roles on the wire (`/v2/permissions.*`), as `@unkey/api@2.5.1` types
 * them, and their mappers onto core's `Rbac`: a permission is named by its id or slug, a role by its
 * id or name, and a role answers its permissions whole.
 */
import { CreatePermissionInput, CreateRoleInput, PermissionView } from "@keymeter/core/Role"
import * as Validation from "@keymeter/core/Validation"
import * as Schema from "effect/Schema"

/** Body of `permissions.createPermission`: v2 requires the slug. */
export const CreatePermissionRequest = Schema.Struct({
  name: CreatePermissionInput.fields.name,
  slug: CreatePermissionInput.fields.slug.from,
  description: CreatePermissionInput.fields.description
}).annotations({ identifier: "V2CreatePermissionRequest" })

/** Body of `permissions.getPermission` and `deletePermission`. */
export const PermissionRequest = Schema.Struct({
  permission: Validation.boundedString("a permission id or slug", 1, 255)
}).annotations({ identifier: "V2PermissionRequest" })

/** Body of `permissions.createRole`: its permissions by slug, made when missing. */
export const CreateRoleRequest = CreateRoleInput.annotations({ identifier: "V2CreateRoleRequest" })

/** Body of `permissions.getRole` and `deleteRole`. */
export const RoleRequest = Schema.Struct({
  role: Validation.boundedString("a role id or name", 1, 255)
}).annotations({ identifier: "V2RoleRequest" })

/** Body of `permissions.listPermissions` and `listRoles`. */
export const ListRequest = Schema.Struct({
  limit: Schema.optional(
    Validation.expected(Schema.Number.pipe(Schema.int(), Schema.between(1, 100)), "must be an integer from 1 to 100")
  ),
  cursor: Schema.optional(Validation.boundedString("a cursor", 1, 1024)),
  search: Schema.optional(Validation.boundedString("a search", 1, 255))
}).annotations({ identifier: "V2ListRequest" })

/** A permission as v2 answers it. */
export const Permission = PermissionView.annotations({ identifier: "V2Permission" })

/** A role as v2 answers it: its permissions whole. */
export const Role = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  description: Schema.optional(Schema.String),
  permissions: Schema.optional(Schema.Array(Permission))
}).annotations({ identifier: "V2Role" })
