/**
 * The Catalog half of the storage port: the apis and namespaces of a workspace, and workspaces,
 * apis, namespaces and root keys kept apart between workspaces. Its overrides are
 * `OverrideCatalogConformance`'s, its keys `KeyCatalogConformance`'s.
 */
import { expect, it } from "@effect/vitest"
import { Api } from "@keymeter/core/Api"
import * as Apis from "@keymeter/core/Apis"
import * as Auth from "@keymeter/core/Auth"
import { Namespace } from "@keymeter/core/Namespace"
import * as Overrides from "@keymeter/core/Overrides"
import type { Principal } from "@keymeter/core/Permission"
import { RootKey } from "@keymeter/core/RootKey"
import { Catalog } from "@keymeter/core/Storage"
import { Workspace } from "@keymeter/core/Workspace"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Suite } from "./ConformanceFixture.js"
import { ask, FROM, OTHER_WS, seedCatalog, store, TO, WS } from "./ConformanceFixture.js"

/** Declares the Catalog's tests of `suite`, in the describe block it is called in. */
export const tests = (suite: Suite) => {
  const { run } = suite

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
