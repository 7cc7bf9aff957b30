/**
 * The catalog half of the Storage port, in memory.
 */
import type { Api } from "@keymeter/core/Api"
import * as CatalogPart from "@keymeter/core/CatalogPart"
import type { Credits } from "@keymeter/core/Key"
import { changeBalance, Identity, Key, spend } from "@keymeter/core/Key"
import type { Namespace } from "@keymeter/core/Namespace"
import { Override } from "@keymeter/core/Override"
import { type KeyPermission, Role } from "@keymeter/core/Role"
import { RootKey } from "@keymeter/core/RootKey"
import { Catalog } from "@keymeter/core/Storage"
import type { Workspace } from "@keymeter/core/Workspace"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"

/** A catalog held in maps. Every read is scoped to the caller's workspace. */
export const make = () => {
  const workspaces = new Map<string, Workspace>()
  const rootKeysByHash = new Map<string, RootKey>()
  const apis = new Map<string, Api>()
  const namespaces = new Map<string, Namespace>()
  /** workspace → name → namespace id */
  const namespaceNames = new Map<string, Map<string, string>>()
  /** namespace id → identifier → override */
  const overrides = new Map<string, Map<string, Override>>()
  const identities = new Map<string, Identity>()
  /** workspace → external id → identity id */
  const identityByExternal = new Map<string, Map<string, string>>()
  const keys = new Map<string, Key>()
  /** hash → key id */
  const keysByHash = new Map<string, string>()
  /** Balances, apart from the keys: spending credits is not a catalog change. */
  const credits = new Map<string, Credits>()
  const permissions = new Map<string, KeyPermission>()
  const roles = new Map<string, Role>()
  const ofWorkspace = <A extends { readonly workspaceId: string; readonly id: string }>(
    map: Map<string, A>,
    workspaceId: string
  ) => [...map.values()].filter((a) => a.workspaceId === workspaceId).sort((a, b) => (a.id < b.id ? -1 : 1))
  /** Replaces every key of the workspace that `change` alters (undefined: left as it is). */
  const rewriteKeys = (workspaceId: string, change: (key: Key) => Key | undefined) => {
    for (const key of keys.values()) {
      if (key.workspaceId !== workspaceId) continue
      const changed = change(key)
      if (changed !== undefined) keys.set(key.id, changed)
    }
  }
  const deleteKeysOf = (workspaceId: string, apiId: string) => {
    let deleted = 0
    for (const key of [...keys.values()]) {
      if (key.workspaceId !== workspaceId || key.apiId !== apiId) continue
      keys.delete(key.id)
      keysByHash.delete(key.hash)
      credits.delete(key.id)
      deleted++
    }
    return deleted
  }
  // Moved by each write, per part it changes (see CatalogPart).
  const revisions = new CatalogPart.Revisions()

  const inWorkspace = <A extends { readonly workspaceId: string }>(value: A | undefined, workspaceId: string) =>
    value !== undefined && value.workspaceId === workspaceId ? Option.some(value) : Option.none()

  const namesOf = (workspaceId: string) => {
    let names = namespaceNames.get(workspaceId)
    if (names === undefined) namespaceNames.set(workspaceId, names = new Map())
    return names
  }

  return Catalog.of(CatalogPart.tracking({
    isEmpty: Effect.sync(() => workspaces.size === 0),
    putWorkspace: (workspace) =>
      Effect.sync(() => {
        const existed = workspaces.has(workspace.id)
        workspaces.set(workspace.id, workspace)
        return existed ? "updated" : "created"
      }),
    getWorkspace: (id) => Effect.sync(() => Option.fromNullable(workspaces.get(id))),
    listWorkspaces: Effect.sync(() =>
      [...workspaces.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    ),
    putRootKey: (key) =>
      Effect.sync(() => {
        const existing = rootKeysByHash.get(key.hash)
        if (existing === undefined) {
          rootKeysByHash.set(key.hash, key)
          return "created"
        }
        if (existing.workspaceId !== key.workspaceId) return "conflict"
        rootKeysByHash.set(key.hash, new RootKey({ ...key, id: existing.id, createdAt: existing.createdAt }))
        return "updated"
      }),
    findRootKeyByHash: (hash) => Effect.sync(() => Option.fromNullable(rootKeysByHash.get(hash))),
    listRootKeys: (workspaceId) =>
      Effect.sync(() =>
        Array.from(rootKeysByHash.values()).filter((key) => key.workspaceId === workspaceId)
          .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      ),
    deleteRootKey: (workspaceId, id) =>
      Effect.sync(() => {
        for (const [hash, key] of rootKeysByHash) {
          if (key.id === id && key.workspaceId === workspaceId) {
            rootKeysByHash.delete(hash)
            return true
          }
        }
        return false
      }),
    putApi: (api) =>
      Effect.sync(() => {
        const existing = apis.get(api.id)
        if (existing !== undefined && existing.workspaceId !== api.workspaceId) return "conflict"
        apis.set(api.id, api)
        return existing === undefined ? "created" : "updated"
      }),
    getApi: (workspaceId, id) => Effect.sync(() => inWorkspace(apis.get(id), workspaceId)),
    listApis: (workspaceId) =>
      Effect.sync(() =>
        [...apis.values()].filter((api) => api.workspaceId === workspaceId).sort((a, b) => (a.id < b.id ? -1 : 1))
      ),
    putNamespace: (namespace) =>
      Effect.sync(() => {
        const existing = namespaces.get(namespace.id)
        if (existing !== undefined && existing.workspaceId !== namespace.workspaceId) return "conflict"
        const names = namesOf(namespace.workspaceId)
        const holder = names.get(namespace.name)
        if (holder !== undefined && holder !== namespace.id) return "conflict"
        if (existing !== undefined) names.delete(existing.name)
        names.set(namespace.name, namespace.id)
        namespaces.set(namespace.id, namespace)
        return existing === undefined ? "created" : "updated"
      }),
    ensureNamespace: (namespace) =>
      Effect.sync(() => {
        const names = namesOf(namespace.workspaceId)
        const holder = names.get(namespace.name)
        if (holder !== undefined) return namespaces.get(holder)!
        names.set(namespace.name, namespace.id)
        namespaces.set(namespace.id, namespace)
        return namespace
      }),
    getNamespace: (workspaceId, id) => Effect.sync(() => inWorkspace(namespaces.get(id), workspaceId)),
    findNamespaceByName: (workspaceId, name) =>
      Effect.sync(() => {
        const id = namespaceNames.get(workspaceId)?.get(name)
        return id === undefined ? Option.none() : Option.some(namespaces.get(id)!)
      }),
    upsertOverride: (write) =>
      Effect.sync(() => {
        let byIdentifier = overrides.get(write.namespaceId)
        if (byIdentifier === undefined) overrides.set(write.namespaceId, byIdentifier = new Map())
        const existing = byIdentifier.get(write.identifier)
        const override = new Override({
          id: existing?.id ?? write.id,
          namespaceId: write.namespaceId,
          identifier: write.identifier,
          limit: write.limit,
          duration: write.duration,
          async: write.async,
          createdAt: existing?.createdAt ?? write.now,
          updatedAt: write.now
          // The write's fields come decoded (Overrides), its times from the clock.
        }, { disableValidation: true })
        byIdentifier.set(write.identifier, override)
        return override
      }),
    getOverride: (namespaceId, identifier) =>
      Effect.sync(() => Option.fromNullable(overrides.get(namespaceId)?.get(identifier))),
    deleteOverride: (namespaceId, identifier) =>
      Effect.sync(() => {
        return overrides.get(namespaceId)?.delete(identifier) ?? false
      }),
    listOverrides: (namespaceId, page) =>
      Effect.sync(() => {
        const all = Array.from(overrides.get(namespaceId)?.values() ?? [])
        const sorted = all.filter((o) => page.after === undefined || o.id > page.after)
          .sort((a, b) => (a.id < b.id ? -1 : 1))
        return { overrides: sorted.slice(0, page.limit), total: all.length }
      }),
    allOverrides: (namespaceId) => Effect.sync(() => Array.from(overrides.get(namespaceId)?.values() ?? [])),
    listNamespaces: (workspaceId) =>
      Effect.sync(() =>
        Array.from(namespaceNames.get(workspaceId)?.entries() ?? [])
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([, id]) => namespaces.get(id)!)
      ),
    namespacePatterns: (workspaceId) =>
      Effect.sync(() =>
        Array.from(namespaceNames.get(workspaceId)?.entries() ?? [])
          .filter(([name]) => name.includes("*"))
          .map(([, id]) => namespaces.get(id)!)
      ),
    ensureIdentity: (identity) =>
      Effect.sync(() => {
        const id = identityByExternal.get(identity.workspaceId)?.get(identity.externalId)
        if (id !== undefined) return identities.get(id)!
        let byExternal = identityByExternal.get(identity.workspaceId)
        if (byExternal === undefined) identityByExternal.set(identity.workspaceId, byExternal = new Map())
        byExternal.set(identity.externalId, identity.id)
        identities.set(identity.id, identity)
        return identity
      }),
    getIdentity: (workspaceId, id) => Effect.sync(() => inWorkspace(identities.get(id), workspaceId)),
    findIdentityByExternalId: (workspaceId, externalId) =>
      Effect.sync(() => {
        const id = identityByExternal.get(workspaceId)?.get(externalId)
        return id === undefined ? Option.none() : Option.some(identities.get(id)!)
      }),
    replaceIdentity: (identity) =>
      Effect.sync(() => {
        const stored = identities.get(identity.id)
        if (stored === undefined || stored.workspaceId !== identity.workspaceId) return false
        identities.set(identity.id, new Identity({ ...identity, externalId: stored.externalId }))
        return true
      }),
    listIdentities: (workspaceId, page) =>
      Effect.sync(() => {
        const ids = [...(identityByExternal.get(workspaceId)?.values() ?? [])].sort()
        const after = page.after === undefined ? ids : ids.filter((id) => id > page.after!)
        return { identities: after.slice(0, page.limit).map((id) => identities.get(id)!), total: ids.length }
      }),
    deleteIdentity: (workspaceId, id) =>
      Effect.sync(() => {
        const identity = identities.get(id)
        if (identity === undefined || identity.workspaceId !== workspaceId) return false
        identities.delete(id)
        identityByExternal.get(workspaceId)?.delete(identity.externalId)
        for (const key of keys.values()) {
          if (key.identityId !== id) continue
          const { identityId: _, ...detached } = key
          keys.set(key.id, new Key(detached, { disableValidation: true }))
        }
        return true
      }),
    putPermission: (permission) =>
      Effect.sync(() => {
        const taken = permissions.has(permission.id) || ofWorkspace(permissions, permission.workspaceId).some((p) =>
          p.name === permission.name || p.slug === permission.slug
        )
        if (taken) return "conflict" as const
        permissions.set(permission.id, permission)
        return "created" as const
      }),
    getPermission: (workspaceId, id) => Effect.sync(() => inWorkspace(permissions.get(id), workspaceId)),
    findPermissions: (workspaceId, names) =>
      Effect.sync(() =>
        ofWorkspace(permissions, workspaceId).filter((p) => names.includes(p.slug) || names.includes(p.name))
      ),
    listPermissions: (workspaceId) => Effect.sync(() => ofWorkspace(permissions, workspaceId)),
    deletePermission: (workspaceId, id) =>
      Effect.sync(() => {
        const permission = permissions.get(id)
        if (permission === undefined || permission.workspaceId !== workspaceId) return false
        permissions.delete(id)
        const { slug } = permission
        rewriteKeys(workspaceId, (key) =>
          key.permissions.includes(slug)
            ? new Key({ ...key, permissions: key.permissions.filter((p) => p !== slug) }, { disableValidation: true })
            : undefined)
        for (const role of ofWorkspace(roles, workspaceId)) {
          if (role.permissions.includes(slug)) {
            roles.set(role.id, new Role({ ...role, permissions: role.permissions.filter((p) => p !== slug) }))
          }
        }
        return true
      }),
    putRole: (role) =>
      Effect.sync(() => {
        if (roles.has(role.id) || ofWorkspace(roles, role.workspaceId).some((r) => r.name === role.name)) {
          return "conflict" as const
        }
        roles.set(role.id, role)
        return "created" as const
      }),
    getRole: (workspaceId, id) => Effect.sync(() => inWorkspace(roles.get(id), workspaceId)),
    findRoles: (workspaceId, names) =>
      Effect.sync(() => ofWorkspace(roles, workspaceId).filter((r) => names.includes(r.name))),
    listRoles: (workspaceId) => Effect.sync(() => ofWorkspace(roles, workspaceId)),
    deleteRole: (workspaceId, id) =>
      Effect.sync(() => {
        const role = roles.get(id)
        if (role === undefined || role.workspaceId !== workspaceId) return false
        roles.delete(id)
        rewriteKeys(workspaceId, (key) =>
          key.roles?.includes(id)
            ? new Key({ ...key, roles: key.roles.filter((r) => r !== id) }, { disableValidation: true })
            : undefined)
        return true
      }),
    insertKeys: (entries) =>
      Effect.sync(() => {
        const ids = new Set(entries.map(({ key }) => key.id))
        const hashes = new Set(entries.map(({ key }) => key.hash))
        if (ids.size < entries.length || hashes.size < entries.length) return "conflict" as const
        if (entries.some(({ key }) => keys.has(key.id) || keysByHash.has(key.hash))) return "conflict" as const
        for (const { credits: balance, key } of entries) {
          keys.set(key.id, key)
          keysByHash.set(key.hash, key.id)
          if (balance !== undefined) credits.set(key.id, balance)
        }
        return "created" as const
      }),
    insertKey: (key, balance) =>
      Effect.sync(() => {
        if (keys.has(key.id) || keysByHash.has(key.hash)) return "conflict" as const
        keys.set(key.id, key)
        keysByHash.set(key.hash, key.id)
        if (balance !== undefined) credits.set(key.id, balance)
        return "created" as const
      }),
    replaceKey: (key, balance) =>
      Effect.sync(() => {
        const existing = keys.get(key.id)
        if (existing === undefined || existing.workspaceId !== key.workspaceId) return false
        keys.set(key.id, key)
        if (balance === "clear") credits.delete(key.id)
        else if (balance !== "keep") credits.set(key.id, balance)
        return true
      }),
    findKeyByHash: (hash) =>
      Effect.sync(() => {
        const id = keysByHash.get(hash)
        return id === undefined ? Option.none() : Option.some(keys.get(id)!)
      }),
    getKey: (workspaceId, id) => Effect.sync(() => inWorkspace(keys.get(id), workspaceId)),
    listKeys: (workspaceId, apiId, page) =>
      Effect.sync(() => {
        const matching = Array.from(keys.values())
          .filter((key) =>
            key.workspaceId === workspaceId && key.apiId === apiId &&
            (page.identityId === undefined || key.identityId === page.identityId)
          )
          .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
        const after = page.after
        return {
          keys: matching.filter((key) => after === undefined || key.id > after).slice(0, page.limit),
          total: matching.length
        }
      }),
    deleteKey: (workspaceId, id) =>
      Effect.sync(() => {
        const key = keys.get(id)
        if (key === undefined || key.workspaceId !== workspaceId) return false
        keys.delete(id)
        keysByHash.delete(key.hash)
        credits.delete(id)
        return true
      }),
    deleteKeysOfApi: (workspaceId, apiId) => Effect.sync(() => deleteKeysOf(workspaceId, apiId)),
    deleteApi: (workspaceId, id) =>
      Effect.sync(() => {
        if (inWorkspace(apis.get(id), workspaceId)._tag === "None") return false
        deleteKeysOf(workspaceId, id)
        apis.delete(id)
        return true
      }),
    getCredits: (keyId) => Effect.sync(() => Option.fromNullable(credits.get(keyId))),
    spendCredits: (keyId, cost, refill, now) =>
      Effect.sync(() => {
        const balance = credits.get(keyId)
        if (balance === undefined) return Option.none()
        const result = spend(balance, cost, refill, now)
        credits.set(keyId, result.balance)
        return Option.some({ spent: result.spent, remaining: result.balance.remaining })
      }),
    changeCredits: (keyId, op, value) =>
      Effect.sync(() => {
        const balance = credits.get(keyId)
        if (balance === undefined) return Option.none()
        const changed = changeBalance(balance, op, value)
        credits.set(keyId, changed)
        return Option.some(changed)
      }),
    revision: revisions.read
  }, revisions))
}

/** A fresh in-memory catalog. */
export const layer: Layer.Layer<Catalog> = Layer.sync(Catalog, make)
