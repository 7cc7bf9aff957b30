/**
 * The Catalog half of the storage port: overrides (upserted, set, got, deleted, resolved and paged,
 * also through Overrides), identities, keys and their credits, the apis and namespaces of a
 * workspace, and workspaces, apis, namespaces and root keys kept apart between workspaces.
 */
import { expect, it } from "@effect/vitest"
import { Api } from "@keymeter/core/Api"
import * as Apis from "@keymeter/core/Apis"
import * as Auth from "@keymeter/core/Auth"
import * as CatalogPart from "@keymeter/core/CatalogPart"
import { Identity, Key } from "@keymeter/core/Key"
import { Namespace } from "@keymeter/core/Namespace"
import * as Overrides from "@keymeter/core/Overrides"
import type { Principal } from "@keymeter/core/Permission"
import { KeyPermission, Role } from "@keymeter/core/Role"
import { RootKey } from "@keymeter/core/RootKey"
import { Catalog } from "@keymeter/core/Storage"
import { Workspace } from "@keymeter/core/Workspace"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { Suite } from "./ConformanceFixture.js"
import { ask, FROM, OTHER_WS, seedCatalog, store, TO, WS } from "./ConformanceFixture.js"

/** Declares the Catalog's tests of `suite`, in the describe block it is called in. */
export const tests = (suite: Suite) => {
  const { run } = suite

  it.effect("upserts an override: same id and createdAt, new values and updatedAt", () =>
    run(Effect.gen(function*() {
      const catalog = yield* Catalog
      yield* catalog.putWorkspace(new Workspace({ id: WS, name: "A" }))
      yield* catalog.putNamespace(new Namespace({ id: "rlns_1", workspaceId: WS, name: "email" }))
      const write = {
        id: "rlor_first",
        namespaceId: "rlns_1",
        identifier: "user_*",
        limit: 10,
        duration: 60000,
        async: false,
        now: 1000
      }
      const first = yield* catalog.upsertOverride(write)
      const second = yield* catalog.upsertOverride({ ...write, id: "rlor_second", limit: 0, async: true, now: 2000 })
      expect(first.id).toBe("rlor_first")
      expect(second).toMatchObject({ id: "rlor_first", limit: 0, async: true, createdAt: 1000, updatedAt: 2000 })
      const other = yield* catalog.upsertOverride({ ...write, id: "rlor_other", identifier: "user_1" })
      expect(other.id).toBe("rlor_other")
    })))

  it.effect("sets overrides through the service: one id per target, namespaces created by name", () =>
    run(Effect.gen(function*() {
      const catalog = yield* Catalog
      yield* catalog.putWorkspace(new Workspace({ id: WS, name: "A" }))
      const overrides = yield* Overrides.Overrides
      const principal = Auth.system(WS)
      const input = { namespaceName: "api:v1:calls", identifier: "user@example.com", limit: 5, duration: 1000 }
      const results = yield* Effect.all(
        Array.from({ length: 20 }, (_, i) => overrides.set(principal, { ...input, limit: i })),
        { concurrency: "unbounded" }
      )
      expect(new Set(results.map((o) => o.id)).size).toBe(1)
      expect(new Set(results.map((o) => o.namespaceId)).size).toBe(1)
      const namespace = yield* catalog.findNamespaceByName(WS, "api:v1:calls")
      expect(Option.map(namespace, (n) => n.id)).toEqual(Option.some(results[0]!.namespaceId))
    })))

  it.effect("gets, deletes and re-sets overrides: a re-set after a delete is a fresh override", () =>
    run(Effect.gen(function*() {
      const catalog = yield* Catalog
      yield* catalog.putWorkspace(new Workspace({ id: WS, name: "A" }))
      const overrides = yield* Overrides.Overrides
      const principal = Auth.system(WS)
      const target = { namespaceName: "email", identifier: "user_1" }
      const first = yield* overrides.set(principal, { ...target, limit: 5, duration: 1000 })
      expect(yield* overrides.get(principal, target)).toMatchObject({ id: first.id, limit: 5 })
      expect(yield* overrides.delete(principal, target)).toEqual({})
      const gone = yield* Effect.either(overrides.get(principal, target))
      expect(Either.isLeft(gone) && gone.left._tag).toBe("NotFound")
      const again = yield* Effect.either(overrides.delete(principal, target))
      expect(Either.isLeft(again) && again.left._tag).toBe("NotFound")
      const fresh = yield* overrides.set(principal, { ...target, limit: 6, duration: 1000 })
      expect(fresh.id).not.toBe(first.id)
      expect((yield* overrides.get(principal, target)).id).toBe(fresh.id)
    })))

  it.effect("resolves across namespace patterns with resolve=true", () =>
    run(Effect.gen(function*() {
      const catalog = yield* Catalog
      yield* catalog.putWorkspace(new Workspace({ id: WS, name: "A" }))
      const overrides = yield* Overrides.Overrides
      const principal = Auth.system(WS)
      yield* overrides.set(principal, { namespaceName: "api:*", identifier: "user_*", limit: 1, duration: 1000 })
      const narrow = yield* overrides.set(principal, {
        namespaceName: "api:*",
        identifier: "user_4*",
        limit: 2,
        duration: 1000
      })
      yield* overrides.set(principal, { namespaceName: "api:v1", identifier: "other", limit: 3, duration: 1000 })
      const resolved = yield* overrides.get(principal, {
        namespaceName: "api:v1",
        identifier: "user_42",
        resolve: true
      })
      expect(resolved.id).toBe(narrow.id)
      const literal = yield* Effect.either(
        overrides.get(principal, { namespaceName: "api:v1", identifier: "user_42" })
      )
      expect(Either.isLeft(literal)).toBe(true)
    })))

  it.effect("pages overrides without repeating or skipping any, while others are added and deleted", () =>
    run(Effect.gen(function*() {
      const catalog = yield* Catalog
      yield* catalog.putWorkspace(new Workspace({ id: WS, name: "A" }))
      const overrides = yield* Overrides.Overrides
      const principal = Auth.system(WS)
      const set = (identifier: string) =>
        overrides.set(principal, { namespaceName: "pages", identifier, limit: 1, duration: 1000 })
      const initial: Array<string> = []
      for (let i = 0; i < 25; i++) initial.push((yield* set(`user_${String(i).padStart(2, "0")}`)).id)
      const page = (cursor?: string) =>
        overrides.list(principal, { namespaceName: "pages", limit: 10, ...(cursor !== undefined ? { cursor } : {}) })
      const first = yield* page()
      expect(first.total).toBe(25)
      expect(first.overrides.map((o) => o.id)).toEqual(initial.slice(0, 10))
      // Between pages: one seen is deleted, one not yet seen is deleted, three are added.
      yield* overrides.delete(principal, { namespaceName: "pages", identifier: "user_03" })
      yield* overrides.delete(principal, { namespaceName: "pages", identifier: "user_21" })
      for (const identifier of ["new_a", "new_b", "new_c"]) yield* set(identifier)
      const second = yield* page(first.cursor)
      const third = yield* page(second.cursor)
      expect(third.cursor).toBeUndefined()
      expect(third.total).toBe(26)
      const seen = [...first.overrides, ...second.overrides, ...third.overrides].map((o) => o.identifier)
      expect(new Set(seen).size).toBe(seen.length)
      for (let i = 0; i < 25; i++) {
        const identifier = `user_${String(i).padStart(2, "0")}`
        if (identifier !== "user_21") expect(seen).toContain(identifier)
      }
      expect(seen).not.toContain("user_21")
      expect(seen.filter((id) => id.startsWith("new_"))).toEqual(["new_a", "new_b", "new_c"])
      const bad = yield* Effect.either(
        overrides.list(principal, { namespaceName: "pages", cursor: "bm90LWEtY3Vyc29y" })
      )
      expect(Either.isLeft(bad) && bad.left.message).toMatch(/^cursor: is not a cursor this API returned/)
    })))

  it.effect("keeps identities by external id per workspace, found or created once", () =>
    run(Effect.gen(function*() {
      const catalog = yield* Catalog
      yield* seedCatalog
      const identity = (id: string, workspaceId = WS, externalId = "user_42") =>
        new Identity({ id, workspaceId, externalId, enabled: true, createdAt: 1 })
      const first = yield* catalog.ensureIdentity(identity("id_1"))
      expect(first.id).toBe("id_1")
      // Concurrent creators of one external id end with one identity.
      const all = yield* Effect.all(
        Array.from({ length: 20 }, (_, i) => catalog.ensureIdentity(identity(`id_c${i}`, WS, "user_7"))),
        { concurrency: "unbounded" }
      )
      expect(new Set(all.map((i) => i.id)).size).toBe(1)
      expect((yield* catalog.ensureIdentity(identity("id_2"))).id).toBe("id_1")
      expect((yield* catalog.ensureIdentity(identity("id_3", OTHER_WS))).id).toBe("id_3")
      expect(Option.getOrThrow(yield* catalog.findIdentityByExternalId(WS, "user_42")).id).toBe("id_1")
      expect(Option.isNone(yield* catalog.getIdentity(OTHER_WS, "id_1"))).toBe(true)
      // Replaced: enabled, meta and limits; never its external id or workspace.
      const changed = new Identity({
        ...first,
        enabled: false,
        meta: { plan: "pro", seats: [1, 2] },
        ratelimits: [{ name: "tokens", limit: 10, duration: 60_000, autoApply: false }]
      })
      expect(yield* catalog.replaceIdentity(changed)).toBe(true)
      expect(Option.getOrThrow(yield* catalog.getIdentity(WS, "id_1"))).toEqual(changed)
      expect(yield* catalog.replaceIdentity(new Identity({ ...changed, externalId: "renamed" }))).toBe(true)
      expect(Option.getOrThrow(yield* catalog.getIdentity(WS, "id_1")).externalId).toBe("user_42")
      expect(yield* catalog.replaceIdentity(new Identity({ ...changed, workspaceId: OTHER_WS }))).toBe(false)
      // Stored with its meta and limits from the start.
      const full = yield* catalog.ensureIdentity(new Identity({ ...changed, id: "id_full", externalId: "full" }))
      expect(Option.getOrThrow(yield* catalog.getIdentity(WS, "id_full"))).toEqual(full)
    })))

  it.effect("pages a workspace's identities by id, and deletes one with its keys detached", () =>
    run(Effect.gen(function*() {
      const catalog = yield* Catalog
      yield* catalog.putWorkspace(new Workspace({ id: "ws_ids", name: "ids" }))
      yield* catalog.putWorkspace(new Workspace({ id: "ws_ids_other", name: "other" }))
      for (const n of [3, 1, 4, 2]) {
        yield* catalog.ensureIdentity(
          new Identity({ id: `id_p${n}`, workspaceId: "ws_ids", externalId: `user_${n}`, enabled: true, createdAt: n })
        )
      }
      yield* catalog.ensureIdentity(
        new Identity({ id: "id_p9", workspaceId: "ws_ids_other", externalId: "user_9", enabled: true, createdAt: 9 })
      )
      const first = yield* catalog.listIdentities("ws_ids", { after: undefined, limit: 3 })
      expect(first.identities.map((i) => i.id)).toEqual(["id_p1", "id_p2", "id_p3"])
      expect(first.total).toBe(4)
      const rest = yield* catalog.listIdentities("ws_ids", { after: "id_p3", limit: 3 })
      expect(rest.identities.map((i) => i.id)).toEqual(["id_p4"])
      yield* catalog.putApi(new Api({ id: "api_ids", workspaceId: "ws_ids", name: "ids" }))
      yield* catalog.insertKey(
        new Key({
          id: "key_ids_1",
          workspaceId: "ws_ids",
          apiId: "api_ids",
          hash: "hash_ids_1",
          start: "sk_ab",
          permissions: [],
          enabled: true,
          credited: false,
          ratelimits: [],
          identityId: "id_p2",
          createdAt: 1,
          updatedAt: 1
        }),
        undefined
      )
      expect(yield* catalog.deleteIdentity("ws_ids_other", "id_p2")).toBe(false)
      expect(yield* catalog.deleteIdentity("ws_ids", "id_p2")).toBe(true)
      expect(yield* catalog.deleteIdentity("ws_ids", "id_p2")).toBe(false)
      expect(Option.isNone(yield* catalog.getIdentity("ws_ids", "id_p2"))).toBe(true)
      expect(Option.isNone(yield* catalog.findIdentityByExternalId("ws_ids", "user_2"))).toBe(true)
      expect(Option.getOrThrow(yield* catalog.getKey("ws_ids", "key_ids_1")).identityId).toBeUndefined()
      expect((yield* catalog.listIdentities("ws_ids", { after: undefined, limit: 10 })).total).toBe(3)
      // Its external id is free again.
      const again = yield* catalog.ensureIdentity(
        new Identity({ id: "id_p5", workspaceId: "ws_ids", externalId: "user_2", enabled: true, createdAt: 5 })
      )
      expect(again.id).toBe("id_p5")
    })))

  it.effect("stores keys by id and hash, replaces and deletes them, and pages an api's keys", () =>
    run(Effect.gen(function*() {
      const catalog = yield* Catalog
      yield* seedCatalog
      const identity = yield* catalog.ensureIdentity(
        new Identity({ id: "id_k", workspaceId: WS, externalId: "cust", enabled: true, createdAt: 1 })
      )
      const key = (n: number, extra: Partial<Key> = {}) =>
        new Key({
          id: `key_${String(n).padStart(3, "0")}`,
          workspaceId: WS,
          apiId: "api_1",
          hash: `hash_${n}`,
          start: "sk_ab",
          permissions: ["a"],
          enabled: true,
          credited: false,
          ratelimits: [],
          createdAt: n,
          updatedAt: n,
          ...extra
        })
      const revision = catalog.revision
      const before = revision === undefined ? undefined : CatalogPart.ALL.map(revision)
      expect(yield* catalog.insertKey(key(1, { name: "one", meta: { plan: "pro", n: [1] } }), undefined))
        .toBe("created")
      // Keys' part alone: the root keys, apis and namespaces remembered stay valid.
      if (revision !== undefined) {
        expect(CatalogPart.ALL.filter((part, i) => revision(part) !== before![i])).toEqual(["keys"])
      }
      expect(yield* catalog.insertKey(key(1, { hash: "other" }), undefined)).toBe("conflict")
      expect(yield* catalog.insertKey(key(99, { hash: "hash_1" }), undefined)).toBe("conflict")
      for (let n = 2; n <= 5; n++) {
        yield* catalog.insertKey(
          key(n, n % 2 === 0 ? { identityId: identity.id, credited: true } : {}),
          n % 2 === 0 ? { remaining: 10 * n, refilledAt: n } : undefined
        )
      }
      const found = Option.getOrThrow(yield* catalog.findKeyByHash("hash_1"))
      expect(found).toEqual(key(1, { name: "one", meta: { plan: "pro", n: [1] } }))
      expect(Option.isNone(yield* catalog.getKey(OTHER_WS, "key_001"))).toBe(true)
      expect(Option.isNone(yield* catalog.findKeyByHash("hash_nope"))).toBe(true)
      // Pages in id order, with the total; of one identity.
      const page1 = yield* catalog.listKeys(WS, "api_1", { after: undefined, limit: 2 })
      expect(page1.keys.map((k) => k.id)).toEqual(["key_001", "key_002"])
      expect(page1.total).toBe(5)
      const page2 = yield* catalog.listKeys(WS, "api_1", { after: "key_002", limit: 10 })
      expect(page2.keys.map((k) => k.id)).toEqual(["key_003", "key_004", "key_005"])
      const ofIdentity = yield* catalog.listKeys(WS, "api_1", { after: undefined, limit: 10, identityId: "id_k" })
      expect(ofIdentity.keys.map((k) => k.id)).toEqual(["key_002", "key_004"])
      expect(ofIdentity.total).toBe(2)
      expect((yield* catalog.listKeys(WS, "api_2", { after: undefined, limit: 10 })).total).toBe(0)
      // Replace: configuration, and the balance kept, set or cleared.
      expect(yield* catalog.replaceKey(key(2, { identityId: "id_k", credited: true, enabled: false }), "keep"))
        .toBe(true)
      expect(Option.getOrThrow(yield* catalog.getKey(WS, "key_002")).enabled).toBe(false)
      expect(Option.getOrThrow(yield* catalog.getCredits("key_002")).remaining).toBe(20)
      yield* catalog.replaceKey(key(3, { credited: true }), { remaining: 7, refilledAt: 3 })
      expect(Option.getOrThrow(yield* catalog.getCredits("key_003"))).toEqual({ remaining: 7, refilledAt: 3 })
      yield* catalog.replaceKey(key(3), "clear")
      expect(Option.isNone(yield* catalog.getCredits("key_003"))).toBe(true)
      expect(yield* catalog.replaceKey(key(3, { workspaceId: OTHER_WS }), "keep")).toBe(false)
      expect(yield* catalog.replaceKey(key(77), "keep")).toBe(false)
      // Delete: the key, its hash and its credits.
      expect(yield* catalog.deleteKey(OTHER_WS, "key_004")).toBe(false)
      expect(yield* catalog.deleteKey(WS, "key_004")).toBe(true)
      expect(yield* catalog.deleteKey(WS, "key_004")).toBe(false)
      expect(Option.isNone(yield* catalog.findKeyByHash("hash_4"))).toBe(true)
      expect(Option.isNone(yield* catalog.getCredits("key_004"))).toBe(true)
      // A batch: all or none.
      expect(
        yield* catalog.insertKeys([
          { key: key(7, { hash: "hash_7" }), credits: { remaining: 7, refilledAt: 7 } },
          { key: key(8, { hash: "hash_1" }), credits: undefined }
        ])
      ).toBe("conflict")
      expect(Option.isNone(yield* catalog.getKey(WS, "key_007"))).toBe(true)
      expect(
        yield* catalog.insertKeys([{ key: key(7), credits: undefined }, {
          key: key(8, { hash: "hash_7" }),
          credits: undefined
        }])
      )
        .toBe("conflict")
      expect(Option.isNone(yield* catalog.getKey(WS, "key_007"))).toBe(true)
      expect(
        yield* catalog.insertKeys([
          { key: key(7, { credited: true }), credits: { remaining: 7, refilledAt: 7 } },
          { key: key(8), credits: undefined }
        ])
      ).toBe("created")
      expect(Option.getOrThrow(yield* catalog.getCredits("key_007")).remaining).toBe(7)
      expect(Option.getOrThrow(yield* catalog.findKeyByHash("hash_8")).id).toBe("key_008")
      // An environment is kept as given.
      yield* catalog.insertKey(key(6, { environment: "test" }), undefined)
      expect(Option.getOrThrow(yield* catalog.getKey(WS, "key_006")).environment).toBe("test")
    })))

  it.effect("keeps permissions and roles by workspace; a deletion takes them from every key and role", () =>
    run(Effect.gen(function*() {
      const catalog = yield* Catalog
      yield* catalog.putWorkspace(new Workspace({ id: "ws_rbac", name: "rbac" }))
      yield* catalog.putWorkspace(new Workspace({ id: "ws_rbac_other", name: "other" }))
      const permission = (id: string, name: string, extra: Partial<KeyPermission> = {}) =>
        new KeyPermission({ id, workspaceId: "ws_rbac", name, slug: name, createdAt: 1, ...extra })
      const read = permission("perm_r", "records.read", { description: "read" })
      // A slug as LIKE would read it: its % and _ must match only themselves.
      const odd = permission("perm_o", "odd%_\\\"name")
      expect(yield* catalog.putPermission(read)).toBe("created")
      expect(yield* catalog.putPermission(permission("perm_w", "Write", { slug: "records.write" }))).toBe("created")
      expect(yield* catalog.putPermission(odd)).toBe("created")
      expect(yield* catalog.putPermission(permission("perm_x", "records.read"))).toBe("conflict")
      expect(yield* catalog.putPermission(permission("perm_y", "other", { slug: "records.write" }))).toBe("conflict")
      expect(yield* catalog.putPermission(permission("perm_r", "again"))).toBe("conflict")
      // Another workspace may use the same names.
      expect(yield* catalog.putPermission(permission("perm_z", "records.read", { workspaceId: "ws_rbac_other" })))
        .toBe("created")
      expect(Option.getOrThrow(yield* catalog.getPermission("ws_rbac", "perm_r"))).toEqual(read)
      expect(Option.isNone(yield* catalog.getPermission("ws_rbac_other", "perm_r"))).toBe(true)
      expect((yield* catalog.findPermissions("ws_rbac", ["records.write", "records.read", "nope"])).map((p) => p.id))
        .toEqual(["perm_r", "perm_w"])
      expect((yield* catalog.findPermissions("ws_rbac", ["Write"])).map((p) => p.id)).toEqual(["perm_w"])
      expect((yield* catalog.listPermissions("ws_rbac")).map((p) => p.id)).toEqual(["perm_o", "perm_r", "perm_w"])

      const role = (id: string, name: string, permissions: Array<string>) =>
        new Role({ id, workspaceId: "ws_rbac", name, permissions, createdAt: 1 })
      const editor = role("role_e", "editor", ["records.read", "records.write", odd.slug])
      expect(yield* catalog.putRole(editor)).toBe("created")
      expect(yield* catalog.putRole(role("role_v", "viewer", ["records.read"]))).toBe("created")
      expect(yield* catalog.putRole(role("role_x", "editor", []))).toBe("conflict")
      expect(Option.getOrThrow(yield* catalog.getRole("ws_rbac", "role_e"))).toEqual(editor)
      expect((yield* catalog.findRoles("ws_rbac", ["viewer", "nope"])).map((r) => r.id)).toEqual(["role_v"])
      expect((yield* catalog.listRoles("ws_rbac")).map((r) => r.id)).toEqual(["role_e", "role_v"])

      yield* catalog.putApi(new Api({ id: "api_rbac", workspaceId: "ws_rbac", name: "rbac" }))
      yield* catalog.insertKey(
        new Key({
          id: "key_rbac",
          workspaceId: "ws_rbac",
          apiId: "api_rbac",
          hash: "hash_rbac",
          start: "sk_ab",
          permissions: ["records.write", odd.slug, "records.writer"],
          roles: ["role_e", "role_v"],
          enabled: true,
          credited: false,
          ratelimits: [],
          createdAt: 1,
          updatedAt: 1
        }),
        undefined
      )
      const revision = catalog.revision
      const before = revision?.("keys")
      expect(yield* catalog.deletePermission("ws_rbac_other", "perm_w")).toBe(false)
      expect(yield* catalog.deletePermission("ws_rbac", "perm_w")).toBe(true)
      expect(yield* catalog.deletePermission("ws_rbac", "perm_w")).toBe(false)
      if (revision !== undefined) expect(revision("keys")).not.toBe(before)
      expect(yield* catalog.deletePermission("ws_rbac", "perm_o")).toBe(true)
      const key = Option.getOrThrow(yield* catalog.getKey("ws_rbac", "key_rbac"))
      expect(key.permissions).toEqual(["records.writer"])
      expect(Option.getOrThrow(yield* catalog.getRole("ws_rbac", "role_e")).permissions).toEqual(["records.read"])
      expect(yield* catalog.deleteRole("ws_rbac", "role_e")).toBe(true)
      expect(yield* catalog.deleteRole("ws_rbac", "role_e")).toBe(false)
      expect(Option.getOrThrow(yield* catalog.getKey("ws_rbac", "key_rbac")).roles).toEqual(["role_v"])
      yield* catalog.deleteRole("ws_rbac", "role_v")
      expect(Option.getOrThrow(yield* catalog.getKey("ws_rbac", "key_rbac")).roles ?? []).toEqual([])
      expect(Option.isSome(yield* catalog.getPermission("ws_rbac_other", "perm_z"))).toBe(true)
    })))

  it.effect("deletes an api's keys, or the api with its keys, in its workspace only", () =>
    run(Effect.gen(function*() {
      const catalog = yield* Catalog
      yield* catalog.putWorkspace(new Workspace({ id: "ws_del", name: "del" }))
      yield* catalog.putWorkspace(new Workspace({ id: "ws_del_other", name: "other" }))
      for (
        const [id, workspaceId] of [["api_del_a", "ws_del"], ["api_del_b", "ws_del"], ["api_del_c", "ws_del_other"]]
      ) {
        yield* catalog.putApi(new Api({ id: id!, workspaceId: workspaceId!, name: id! }))
      }
      const key = (n: number, apiId: string, workspaceId = "ws_del") =>
        new Key({
          id: `key_del_${n}`,
          workspaceId,
          apiId,
          hash: `hash_del_${n}`,
          start: "sk_ab",
          permissions: [],
          enabled: true,
          credited: true,
          ratelimits: [],
          createdAt: n,
          updatedAt: n
        })
      yield* catalog.insertKey(key(1, "api_del_a"), { remaining: 1, refilledAt: 1 })
      yield* catalog.insertKey(key(2, "api_del_a"), { remaining: 2, refilledAt: 2 })
      yield* catalog.insertKey(key(3, "api_del_b"), undefined)
      yield* catalog.insertKey(key(4, "api_del_c", "ws_del_other"), undefined)
      const revision = catalog.revision
      const before = revision?.("keys")
      // Another workspace's api: nothing deleted.
      expect(yield* catalog.deleteKeysOfApi("ws_del", "api_del_c")).toBe(0)
      expect(yield* catalog.deleteApi("ws_del", "api_del_c")).toBe(false)
      expect(yield* catalog.deleteKeysOfApi("ws_del", "api_del_a")).toBe(2)
      if (revision !== undefined) expect(revision("keys")).not.toBe(before)
      expect(Option.isNone(yield* catalog.findKeyByHash("hash_del_1"))).toBe(true)
      expect(Option.isNone(yield* catalog.getCredits("key_del_2"))).toBe(true)
      expect(Option.isSome(yield* catalog.getApi("ws_del", "api_del_a"))).toBe(true)
      expect(yield* catalog.deleteApi("ws_del", "api_del_b")).toBe(true)
      expect(yield* catalog.deleteApi("ws_del", "api_del_b")).toBe(false)
      expect(Option.isNone(yield* catalog.getApi("ws_del", "api_del_b"))).toBe(true)
      expect(Option.isNone(yield* catalog.getKey("ws_del", "key_del_3"))).toBe(true)
      expect(Option.isSome(yield* catalog.getKey("ws_del_other", "key_del_4"))).toBe(true)
      expect((yield* catalog.listApis("ws_del")).map((api) => api.id)).toEqual(["api_del_a"])
    })))

  it.effect("spends credits atomically: never below zero, refilled when due, and no catalog change", () =>
    run(Effect.gen(function*() {
      const catalog = yield* Catalog
      yield* seedCatalog
      const key = new Key({
        id: "key_c",
        workspaceId: WS,
        apiId: "api_1",
        hash: "hash_c",
        start: "ab",
        permissions: [],
        enabled: true,
        credited: true,
        ratelimits: [],
        createdAt: 1,
        updatedAt: 1
      })
      yield* catalog.insertKey(key, { remaining: 50, refilledAt: 1 })
      const revisions = () => CatalogPart.ALL.map((part) => catalog.revision?.(part))
      const revision = revisions()
      // 200 parallel spends of 1 on 50 credits: exactly 50 go through.
      const spends = yield* Effect.all(
        Array.from({ length: 200 }, () => catalog.spendCredits("key_c", 1, undefined, 2)),
        { concurrency: "unbounded" }
      )
      expect(spends.filter((s) => Option.getOrThrow(s).spent)).toHaveLength(50)
      expect(Option.getOrThrow(yield* catalog.getCredits("key_c")).remaining).toBe(0)
      expect(revisions()).toEqual(revision)
      // A cost over the balance takes nothing; cost 0 always passes.
      yield* catalog.changeCredits("key_c", "set", 3)
      expect(yield* catalog.spendCredits("key_c", 4, undefined, 3)).toEqual(
        Option.some({ spent: false, remaining: 3 })
      )
      expect(yield* catalog.spendCredits("key_c", 0, undefined, 3)).toEqual(
        Option.some({ spent: true, remaining: 3 })
      )
      expect(yield* catalog.spendCredits("key_c", 3, undefined, 3)).toEqual(
        Option.some({ spent: true, remaining: 0 })
      )
      // A refill due (last refill before `since`) sets the balance first, then the cost is taken.
      expect(yield* catalog.spendCredits("key_c", 2, { since: 1_000, amount: 10 }, 5_000))
        .toEqual(Option.some({ spent: true, remaining: 8 }))
      expect(Option.getOrThrow(yield* catalog.getCredits("key_c"))).toEqual({ remaining: 8, refilledAt: 5_000 })
      // Not due again in the same period.
      expect(yield* catalog.spendCredits("key_c", 1, { since: 1_000, amount: 10 }, 6_000))
        .toEqual(Option.some({ spent: true, remaining: 7 }))
      expect(yield* catalog.spendCredits("key_c", 20, { since: 9_000, amount: 10 }, 9_500))
        .toEqual(Option.some({ spent: false, remaining: 10 }))
      // Changes: set, increment, decrement not below 0.
      expect(Option.getOrThrow(yield* catalog.changeCredits("key_c", "increment", 5)).remaining).toBe(15)
      expect(Option.getOrThrow(yield* catalog.changeCredits("key_c", "decrement", 100)).remaining).toBe(0)
      expect(Option.getOrThrow(yield* catalog.changeCredits("key_c", "set", 42)).remaining).toBe(42)
      expect(revisions()).toEqual(revision)
      // A key without credits has no balance to spend.
      expect(Option.isNone(yield* catalog.spendCredits("key_none", 1, undefined, 1))).toBe(true)
      expect(Option.isNone(yield* catalog.changeCredits("key_none", "set", 1))).toBe(true)
      // Spends and increments at once on one balance: none lost, none below zero.
      yield* catalog.changeCredits("key_c", "set", 0)
      const mixed = yield* Effect.all(
        Array.from({ length: 100 }, (_, i) =>
          i % 2 === 0
            ? Effect.map(catalog.changeCredits("key_c", "increment", 1), () => 0)
            : Effect.map(
              catalog.spendCredits("key_c", 1, undefined, 10_000),
              (s) => Option.getOrThrow(s).spent ? 1 : 0
            )),
        { concurrency: "unbounded" }
      )
      const passed = mixed.reduce((a, b) => a + b, 0)
      expect(Option.getOrThrow(yield* catalog.getCredits("key_c")).remaining).toBe(50 - passed)
    })))

  it.effect("lists a workspace's apis by id, its own only, and those a key may read", () =>
    run(Effect.gen(function*() {
      const catalog = yield* Catalog
      yield* catalog.putWorkspace(new Workspace({ id: "ws_list", name: "list" }))
      yield* catalog.putWorkspace(new Workspace({ id: "ws_list_other", name: "other" }))
      for (const id of ["api_list_c", "api_list_a", "api_list_b"]) {
        yield* catalog.putApi(new Api({ id, workspaceId: "ws_list", name: id.slice(-1) }))
      }
      yield* catalog.putApi(new Api({ id: "api_list_z", workspaceId: "ws_list_other", name: "z" }))
      expect((yield* catalog.listApis("ws_list")).map((api) => [api.id, api.name])).toEqual([
        ["api_list_a", "a"],
        ["api_list_b", "b"],
        ["api_list_c", "c"]
      ])
      expect(yield* catalog.listApis("ws_nobody")).toEqual([])
      // Every workspace, with its name.
      expect((yield* catalog.listWorkspaces).map((workspace) => [workspace.id, workspace.name])).toEqual(
        expect.arrayContaining([["ws_list", "list"], ["ws_list_other", "other"]])
      )
      const apis = yield* Apis.Apis
      const reader: Principal = {
        workspaceId: "ws_list",
        rootKeyId: "rk_reader",
        permissions: ["api.api_list_b.read_api"]
      }
      expect(yield* apis.list(reader)).toEqual({ apis: [{ apiId: "api_list_b", name: "b" }] })
      expect((yield* apis.list(Auth.system("ws_list"))).apis).toHaveLength(3)
    })))

  it.effect("lists a workspace's namespaces by name, and those whose overrides a key may read", () =>
    run(Effect.gen(function*() {
      const catalog = yield* Catalog
      yield* catalog.putWorkspace(new Workspace({ id: "ws_ns", name: "ns" }))
      yield* catalog.putWorkspace(new Workspace({ id: "ws_ns_other", name: "other" }))
      for (const [id, name] of [["rlns_2", "sms"], ["rlns_1", "email"], ["rlns_3", "mail*"]]) {
        yield* catalog.ensureNamespace(new Namespace({ id: id!, workspaceId: "ws_ns", name: name! }))
      }
      yield* catalog.ensureNamespace(new Namespace({ id: "rlns_9", workspaceId: "ws_ns_other", name: "a" }))
      expect((yield* catalog.listNamespaces("ws_ns")).map((n) => [n.id, n.name])).toEqual([
        ["rlns_1", "email"],
        ["rlns_3", "mail*"],
        ["rlns_2", "sms"]
      ])
      const overrides = yield* Overrides.Overrides
      const reader: Principal = {
        workspaceId: "ws_ns",
        rootKeyId: "rk",
        permissions: ["ratelimit.rlns_2.read_override"]
      }
      expect(yield* overrides.namespaces(reader)).toEqual({ namespaces: [{ namespaceId: "rlns_2", name: "sms" }] })
    })))

  it.effect("keeps catalog entries apart between workspaces", () =>
    run(Effect.gen(function*() {
      const catalog = yield* Catalog
      yield* seedCatalog
      yield* catalog.putNamespace(new Namespace({ id: "rlns_a", workspaceId: WS, name: "shared-name" }))
      expect(Option.isNone(yield* catalog.getApi(OTHER_WS, "api_1"))).toBe(true)
      expect(Option.isSome(yield* catalog.getApi(WS, "api_1"))).toBe(true)
      expect(Option.isNone(yield* catalog.getNamespace(OTHER_WS, "rlns_a"))).toBe(true)
      expect(Option.isNone(yield* catalog.findNamespaceByName(OTHER_WS, "shared-name"))).toBe(true)
      // The same name is free in another workspace; an id is not.
      expect(yield* catalog.putNamespace(new Namespace({ id: "rlns_b", workspaceId: OTHER_WS, name: "shared-name" })))
        .toBe("created")
      expect(yield* catalog.putNamespace(new Namespace({ id: "rlns_a", workspaceId: OTHER_WS, name: "x" })))
        .toBe("conflict")
      expect(yield* catalog.putApi(new Api({ id: "api_1", workspaceId: OTHER_WS, name: "steal" }))).toBe("conflict")
      const key = new RootKey({
        id: "rk_1",
        workspaceId: WS,
        name: "k",
        hash: "h1",
        permissions: ["*"],
        createdAt: 1,
        disabled: false
      })
      expect(yield* catalog.putRootKey(key)).toBe("created")
      expect(yield* catalog.putRootKey(new RootKey({ ...key, workspaceId: OTHER_WS }))).toBe("conflict")
      expect(yield* catalog.listRootKeys(OTHER_WS)).toEqual([])
      expect(yield* catalog.deleteRootKey(OTHER_WS, "rk_1")).toBe(false)
      expect((yield* catalog.listRootKeys(WS)).map((k) => k.id)).toEqual(["rk_1"])
      // Re-putting the same secret keeps its id and updates its permissions.
      expect(yield* catalog.putRootKey(new RootKey({ ...key, id: "rk_new", permissions: ["api.*.read_api"] })))
        .toBe("updated")
      const found = yield* catalog.findRootKeyByHash("h1")
      expect(Option.map(found, (k) => [k.id, k.permissions])).toEqual(Option.some(["rk_1", ["api.*.read_api"]]))
      // Verifications of another workspace's api never show up.
      yield* store([{ time: FROM, workspaceId: OTHER_WS, apiId: "api_1", keyId: "k1", outcome: "valid", tags: [] }])
      expect((yield* ask({ apiId: "api_1", end: TO }))[0]!.total).toBe(0)
    })))
}
