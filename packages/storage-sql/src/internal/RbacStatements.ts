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
): Methods => {
  /**
   * Takes `value` from the JSON array in `column` of the workspace's rows of `table` that hold it,
   * leaving `empty` where nothing is left. Rows are narrowed by {@link containing}, then checked exactly.
   */
  const removeFromHolders = (
    table: "keys" | "roles",
    column: "permissions" | "roles",
    workspaceId: string,
    value: string,
    empty: "[]" | null
  ) =>
    Effect.gen(function*() {
      const holders = yield* sql<{ id: string; list: string }>`SELECT id, ${sql(column)} AS list FROM ${sql(table)}
        WHERE workspace_id = ${workspaceId} AND ${sql(column)} LIKE ${containing(value)} ESCAPE '\\'`
      for (const holder of holders) {
        const left = (JSON.parse(holder.list) as Array<string>).filter((held) => held !== value)
        yield* sql`UPDATE ${sql(table)} SET ${sql(column)} = ${left.length > 0 ? JSON.stringify(left) : empty}
          WHERE id = ${holder.id}`
      }
    })

  return {
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
        yield* removeFromHolders("keys", "permissions", workspaceId, row.slug, "[]")
        yield* removeFromHolders("roles", "permissions", workspaceId, row.slug, "[]")
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
        // A key holding no role keeps none (NULL), not an empty list.
        yield* removeFromHolders("keys", "roles", workspaceId, id, null)
        return true
      })))
  }
}
