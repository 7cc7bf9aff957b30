/**
 * Permissions are exact strings, plus `*`, which grants everything. A `<id>` inside a permission is
 * the resource's id, never its name.
 */

/** The caller behind a request: a root key of a workspace. */
export interface Principal {
  readonly workspaceId: string
  readonly rootKeyId: string
  readonly permissions: ReadonlyArray<string>
}

/** True when `permissions` holds `*` or any of `anyOf`. */
export const allows = (permissions: ReadonlyArray<string>, anyOf: ReadonlyArray<string>): boolean =>
  permissions.some((p) => p === "*" || anyOf.includes(p))

/** The key operation a change of what a key holds comes with. */
export type KeyOperation = "create_key" | "update_key"

/** The permissions that allow each operation; any one of them suffices. */
export const required = {
  readApi: (apiId: string) => ["api.*.read_api", `api.${apiId}.read_api`],
  recordVerifications: (apiId: string) => ["api.*.record_verifications", `api.${apiId}.record_verifications`],
  createApi: () => ["api.*.create_api"],
  deleteApi: (apiId: string) => ["api.*.delete_api", `api.${apiId}.delete_api`],
  setOverride: (namespaceId: string) => ["ratelimit.*.set_override", `ratelimit.${namespaceId}.set_override`],
  createNamespace: () => ["ratelimit.*.set_override"],
  readOverride: (namespaceId: string) => ["ratelimit.*.read_override", `ratelimit.${namespaceId}.read_override`],
  deleteOverride: (namespaceId: string) => [
    "ratelimit.*.delete_override",
    `ratelimit.${namespaceId}.delete_override`
  ],
  limit: (namespaceId: string) => ["ratelimit.*.limit", `ratelimit.${namespaceId}.limit`],
  readRatelimitAnalytics: (namespaceId: string) => [
    "ratelimit.*.read_analytics",
    `ratelimit.${namespaceId}.read_analytics`
  ],
  /** Verification analytics (SQL): v1's `read_api`, or v2's `read_analytics`. */
  readVerificationAnalytics: (apiId: string) => [
    "api.*.read_api",
    `api.${apiId}.read_api`,
    "api.*.read_analytics",
    `api.${apiId}.read_analytics`
  ],
  createKey: (apiId: string) => ["api.*.create_key", `api.${apiId}.create_key`],
  verifyKey: (apiId: string) => ["api.*.verify_key", `api.${apiId}.verify_key`],
  readKey: (apiId: string) => ["api.*.read_key", `api.${apiId}.read_key`],
  updateKey: (apiId: string) => ["api.*.update_key", `api.${apiId}.update_key`],
  deleteKey: (apiId: string) => ["api.*.delete_key", `api.${apiId}.delete_key`],
  createIdentity: () => ["identity.*.create_identity"],
  readIdentity: () => ["identity.*.read_identity"],
  updateIdentity: () => ["identity.*.update_identity"],
  deleteIdentity: () => ["identity.*.delete_identity"],
  createPermission: () => ["rbac.*.create_permission"],
  readPermission: () => ["rbac.*.read_permission"],
  deletePermission: () => ["rbac.*.delete_permission"],
  createRole: () => ["rbac.*.create_role"],
  readRole: () => ["rbac.*.read_role"],
  deleteRole: () => ["rbac.*.delete_role"],
  // What a key holds changes with the RBAC permission for it (Unkey v1's), or with the permission
  // of the key operation carrying the change on the key's api (Unkey v2's: `update_key`, or
  // `create_key` when the key is being made).
  addPermissionToKey: (apiId: string, via: KeyOperation) => [
    "rbac.*.add_permission_to_key",
    `api.*.${via}`,
    `api.${apiId}.${via}`
  ],
  removePermissionFromKey: (apiId: string) => [
    "rbac.*.remove_permission_from_key",
    "api.*.update_key",
    `api.${apiId}.update_key`
  ],
  addRoleToKey: (apiId: string, via: KeyOperation) => ["rbac.*.add_role_to_key", `api.*.${via}`, `api.${apiId}.${via}`],
  removeRoleFromKey: (apiId: string) => ["rbac.*.remove_role_from_key", "api.*.update_key", `api.${apiId}.update_key`],
  addPermissionToRole: () => ["rbac.*.add_permission_to_role"]
} as const

/**
 * The resource ids `permissions` grant `required` for: undefined when they grant it for every
 * resource (`*`, or the wildcard form `required("*")`), else the ids of the exact forms held
 * (possibly none).
 */
export const idsGranted = (
  permissions: ReadonlyArray<string>,
  required: (id: string) => ReadonlyArray<string>
): ReadonlyArray<string> | undefined => {
  if (allows(permissions, required("*"))) return undefined
  // Each form is a prefix and a suffix around the id.
  const forms = required("\u0000").filter((form) => form.includes("\u0000")).map((form) => form.split("\u0000"))
  const ids = new Set<string>()
  for (const permission of permissions) {
    for (const [prefix, suffix] of forms) {
      if (
        permission.length > prefix!.length + suffix!.length && permission.startsWith(prefix!) &&
        permission.endsWith(suffix!)
      ) {
        const id = permission.slice(prefix!.length, permission.length - suffix!.length)
        if (id !== "*") ids.add(id)
      }
    }
  }
  return [...ids]
}
