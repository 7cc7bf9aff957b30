/**
 * The catalog's permissions and roles in SQL (part of `SqlCatalog`): removing one also takes it
 * from the keys and roles that hold it, in one transaction.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { StorageError } from "@keymeter/core/Errors"
import type { Catalog } from "@keymeter/core/Storage"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { PermissionRow, RoleRow } from "./CatalogRows.js"
import { first, permissionValues, roleValues, toPermission, toRole } from "./CatalogRows.js"

type Methods = Pick<
  Catalog["Type"],
  | "putPermission"
  | "getPermission"
  | "findPermissions"
  | "listPermissions"
  | "deletePermission"
  | "putRole"
  | "getRole"
  | "findRoles"
  | "listRoles"
  | "deleteRole"
>

/**
 * A `LIKE` pattern (escaped by backslashes) matching a JSON array's text that holds `value`: it narrows
 * the rows, and each row's array is then checked exactly.
 */
const containing = (value: string) => `%${JSON.stringify(value).replace(/[\\%_]/g, (c) => `\\${c}`)}%`

export const make = (
  sql: SqlClient.SqlClient,
  run: <A, R>(effect: Effect.Effect<A, SqlError, R>) => Effect.Effect<A, StorageError, R>
): Methods => ({
  putPermission: (permission) =>
    run(Effect.map(
      sql<{ id: string }>`INSERT INTO permissions ${sql.insert(permissionValues(permission))}
        ON CONFLICT DO NOTHING RETURNING id`,
      (rows) => rows.length > 0 ? "created" as const : "conflict" as const
    )),
  getPermission: (workspaceId, id) =>
    run(Effect.map(
      sql<PermissionRow>`SELECT * FROM permissions WHERE id = ${id} AND workspace_id = ${workspaceId}`,
      (rows) => Option.map(first(rows), toPermission)
    )),
  findPermissions: (workspaceId, names) =>
    names.length === 0 ? Effect.succeed([]) : run(Effect.map(
      sql<PermissionRow>`SELECT * FROM permissions WHERE workspace_id = ${workspaceId}
        AND (${sql.in("slug", names)} OR ${sql.in("name", names)}) ORDER BY id`,
      (rows) => rows.map(toPermission)
    )),
  listPermissions: (workspaceId) =>
    run(Effect.map(
      sql<PermissionRow>`SELECT * FROM permissions WHERE workspace_id = ${workspaceId} ORDER BY id`,
      (rows) => rows.map(toPermission)
    )),
  deletePermission: (workspaceId, id) =>
    run(sql.withTransaction(Effect.gen(function*() {
      const [row] = yield* sql<PermissionRow>`DELETE FROM permissions
        WHERE id = ${id} AND workspace_id = ${workspaceId} RETURNING *`
      if (row === undefined) return false
      const pattern = containing(row.slug)
      const keys = yield* sql<{ id: string; permissions: string }>`SELECT id, permissions FROM keys
        WHERE workspace_id = ${workspaceId} AND permissions LIKE ${pattern} ESCAPE '\\'`
      for (const key of keys) {
        const permissions = (JSON.parse(key.permissions) as Array<string>).filter((p) => p !== row.slug)
        yield* sql`UPDATE keys SET permissions = ${JSON.stringify(permissions)} WHERE id = ${key.id}`
      }
      const roles = yield* sql<{ id: string; permissions: string }>`SELECT id, permissions FROM roles
        WHERE workspace_id = ${workspaceId} AND permissions LIKE ${pattern} ESCAPE '\\'`
      for (const role of roles) {
        const permissions = (JSON.parse(role.permissions) as Array<string>).filter((p) => p !== row.slug)
        yield* sql`UPDATE roles SET permissions = ${JSON.stringify(permissions)} WHERE id = ${role.id}`
      }
      return true
    }))),
  putRole: (role) =>
    run(Effect.map(
      sql<{ id: string }>`INSERT INTO roles ${sql.insert(roleValues(role))} ON CONFLICT DO NOTHING RETURNING id`,
      (rows) => rows.length > 0 ? "created" as const : "conflict" as const
    )),
  getRole: (workspaceId, id) =>
    run(Effect.map(
      sql<RoleRow>`SELECT * FROM roles WHERE id = ${id} AND workspace_id = ${workspaceId}`,
      (rows) => Option.map(first(rows), toRole)
    )),
  findRoles: (workspaceId, names) =>
    names.length === 0 ? Effect.succeed([]) : run(Effect.map(
      sql<RoleRow>`SELECT * FROM roles WHERE workspace_id = ${workspaceId} AND ${sql.in("name", names)}
        ORDER BY id`,
      (rows) => rows.map(toRole)
    )),
  listRoles: (workspaceId) =>
    run(Effect.map(
      sql<RoleRow>`SELECT * FROM roles WHERE workspace_id = ${workspaceId} ORDER BY id`,
      (rows) => rows.map(toRole)
    )),
  deleteRole: (workspaceId, id) =>
    run(sql.withTransaction(Effect.gen(function*() {
      const deleted = yield* sql<{ id: string }>`DELETE FROM roles
        WHERE id = ${id} AND workspace_id = ${workspaceId} RETURNING id`
      if (deleted.length === 0) return false
      const pattern = containing(id)
      const keys = yield* sql<{ id: string; roles: string }>`SELECT id, roles FROM keys
        WHERE workspace_id = ${workspaceId} AND roles LIKE ${pattern} ESCAPE '\\'`
      for (const key of keys) {
        const roles = (JSON.parse(key.roles) as Array<string>).filter((r) => r !== id)
        yield* sql`UPDATE keys SET roles = ${roles.length > 0 ? JSON.stringify(roles) : null} WHERE id = ${key.id}`
      }
      return true
    })))
})
