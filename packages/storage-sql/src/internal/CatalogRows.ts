/**
 * The catalog's rows as the SQL databases return them, and their mappers to and from the domain
 * model (`SqlCatalog` runs the statements).
 */
import type { KeyRatelimit, Refill } from "@keymeter/core/Key"
import { Identity, Key } from "@keymeter/core/Key"
import { Override } from "@keymeter/core/Override"
import { KeyPermission, Role } from "@keymeter/core/Role"
import { RootKey } from "@keymeter/core/RootKey"
import * as Option from "effect/Option"

/** A boolean column: SQLite's 1 or 0, PostgreSQL's boolean. */
export type Bool = number | boolean

/** An integer column: node-postgres reads int8 as a string (ms timestamps and counts fit a double). */
export type Int8 = number | string

/** The first row of an answer, if any. */
export const first = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])

export interface RootKeyRow {
  readonly id: string
  readonly workspace_id: string
  readonly name: string
  readonly hash: string
  readonly permissions: string
  readonly created_at: Int8
  readonly expires_at: Int8 | null
  readonly disabled: Bool
}

export const toRootKey = (row: RootKeyRow) =>
  new RootKey({
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    hash: row.hash,
    permissions: JSON.parse(row.permissions) as Array<string>,
    createdAt: Number(row.created_at),
    ...(row.expires_at !== null ? { expiresAt: Number(row.expires_at) } : {}),
    disabled: Boolean(row.disabled)
  })

export interface OverrideRow {
  readonly id: string
  readonly namespace_id: string
  readonly identifier: string
  readonly limit: Int8
  readonly duration: Int8
  readonly async: Bool
  readonly created_at: Int8
  readonly updated_at: Int8
}

/** An override row as the domain model. */
export const toOverride = (row: OverrideRow) =>
  new Override({
    id: row.id,
    namespaceId: row.namespace_id,
    identifier: row.identifier,
    limit: Number(row.limit),
    duration: Number(row.duration),
    async: Boolean(row.async),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at)
    // Every field converted above to its type: checked once more, it cost ~2% of a setOverride.
  }, { disableValidation: true })

export interface IdentityRow {
  readonly id: string
  readonly workspace_id: string
  readonly external_id: string
  readonly enabled: Bool
  readonly meta: string | null
  readonly ratelimits: string
  readonly created_at: Int8
}

export const toIdentity = (row: IdentityRow) => {
  const ratelimits = JSON.parse(row.ratelimits) as Array<KeyRatelimit>
  return new Identity({
    id: row.id,
    workspaceId: row.workspace_id,
    externalId: row.external_id,
    enabled: Boolean(row.enabled),
    ...(row.meta !== null ? { meta: JSON.parse(row.meta) as Record<string, unknown> } : {}),
    ...(ratelimits.length > 0 ? { ratelimits } : {}),
    createdAt: Number(row.created_at)
  }, { disableValidation: true })
}

/** An identity's columns. */
export const identityValues = (identity: Identity, bool: (value: boolean) => boolean | number) => ({
  id: identity.id,
  workspace_id: identity.workspaceId,
  external_id: identity.externalId,
  enabled: bool(identity.enabled),
  meta: identity.meta !== undefined ? JSON.stringify(identity.meta) : null,
  ratelimits: JSON.stringify(identity.ratelimits ?? []),
  created_at: identity.createdAt
})

export interface KeyRow {
  readonly id: string
  readonly workspace_id: string
  readonly api_id: string
  readonly hash: string
  readonly start: string
  readonly name: string | null
  readonly meta: string | null
  readonly permissions: string
  readonly enabled: Bool
  readonly expires: Int8 | null
  readonly credited: Bool
  readonly refill: string | null
  readonly ratelimits: string
  readonly identity_id: string | null
  readonly environment: string | null
  readonly roles: string | null
  readonly created_at: Int8
  readonly updated_at: Int8
}

export const toKey = (row: KeyRow) =>
  new Key({
    id: row.id,
    workspaceId: row.workspace_id,
    apiId: row.api_id,
    hash: row.hash,
    start: row.start,
    ...(row.name !== null ? { name: row.name } : {}),
    ...(row.meta !== null ? { meta: JSON.parse(row.meta) as Record<string, unknown> } : {}),
    permissions: JSON.parse(row.permissions) as Array<string>,
    enabled: Boolean(row.enabled),
    ...(row.expires !== null ? { expires: Number(row.expires) } : {}),
    credited: Boolean(row.credited),
    ...(row.refill !== null ? { refill: JSON.parse(row.refill) as Refill } : {}),
    ratelimits: JSON.parse(row.ratelimits) as Array<KeyRatelimit>,
    ...(row.identity_id !== null ? { identityId: row.identity_id } : {}),
    ...(row.environment !== null ? { environment: row.environment } : {}),
    ...(row.roles !== null ? { roles: JSON.parse(row.roles) as Array<string> } : {}),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at)
  }, { disableValidation: true })

/** A key's columns, in the order of the `keys` table. */
export const keyValues = (key: Key, bool: (value: boolean) => boolean | number) => ({
  id: key.id,
  workspace_id: key.workspaceId,
  api_id: key.apiId,
  hash: key.hash,
  start: key.start,
  name: key.name ?? null,
  meta: key.meta !== undefined ? JSON.stringify(key.meta) : null,
  permissions: JSON.stringify(key.permissions),
  enabled: bool(key.enabled),
  expires: key.expires ?? null,
  credited: bool(key.credited),
  refill: key.refill !== undefined ? JSON.stringify(key.refill) : null,
  ratelimits: JSON.stringify(key.ratelimits),
  identity_id: key.identityId ?? null,
  environment: key.environment ?? null,
  roles: key.roles !== undefined && key.roles.length > 0 ? JSON.stringify(key.roles) : null,
  created_at: key.createdAt,
  updated_at: key.updatedAt
})

export interface PermissionRow {
  readonly id: string
  readonly workspace_id: string
  readonly name: string
  readonly slug: string
  readonly description: string | null
  readonly created_at: Int8
}

export const toPermission = (row: PermissionRow) =>
  new KeyPermission({
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    slug: row.slug,
    ...(row.description !== null ? { description: row.description } : {}),
    createdAt: Number(row.created_at)
  }, { disableValidation: true })

export const permissionValues = (permission: KeyPermission) => ({
  id: permission.id,
  workspace_id: permission.workspaceId,
  name: permission.name,
  slug: permission.slug,
  description: permission.description ?? null,
  created_at: permission.createdAt
})

export interface RoleRow {
  readonly id: string
  readonly workspace_id: string
  readonly name: string
  readonly description: string | null
  readonly permissions: string
  readonly created_at: Int8
}

export const toRole = (row: RoleRow) =>
  new Role({
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    ...(row.description !== null ? { description: row.description } : {}),
    permissions: JSON.parse(row.permissions) as Array<string>,
    createdAt: Number(row.created_at)
  }, { disableValidation: true })

export const roleValues = (role: Role) => ({
  id: role.id,
  workspace_id: role.workspaceId,
  name: role.name,
  description: role.description ?? null,
  permissions: JSON.stringify(role.permissions),
  created_at: role.createdAt
})
