/**
 * The Catalog's keys and what they hold: identities by external id, keys by id and hash, their
 * permissions and roles, an api's keys deleted with it, and credits spent atomically.
 */
import { expect, it } from "@effect/vitest"
import { Api } from "@keymeter/core/Api"
import * as CatalogPart from "@keymeter/core/CatalogPart"
import { Identity, Key } from "@keymeter/core/Key"
import { KeyPermission, Role } from "@keymeter/core/Role"
import { Catalog } from "@keymeter/core/Storage"
import { Workspace } from "@keymeter/core/Workspace"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Suite } from "./ConformanceFixture.js"
import { OTHER_WS, seedCatalog, WS } from "./ConformanceFixture.js"

/** Declares the Catalog's key tests of `suite`, in the describe block it is called in. */
export const tests = (suite: Suite) => {
  const { run } = suite

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
}
