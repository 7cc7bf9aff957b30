// Overrides name their namespace on every call: the lookup is read once while the catalog's
// revision holds, and read again once it moves (a rename seen at once).
import { describe, expect, it } from "@effect/vitest"
import * as Auth from "@keymeter/core/Auth"
import * as Keymeter from "@keymeter/core/Keymeter"
import { Namespace } from "@keymeter/core/Namespace"
import { Overrides } from "@keymeter/core/Overrides"
import { Catalog } from "@keymeter/core/Storage"
import { Workspace } from "@keymeter/core/Workspace"
import { MemoryStorage } from "@keymeter/storage-memory"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

const WS = "ws_overrides"
const admin = Auth.system(WS)

/** The memory catalog with a revision the test moves, counting the namespace reads by name and id. */
const counted = () => {
  const state = { revision: 1, reads: 0 }
  const layer = Keymeter.layer.pipe(
    Layer.provideMerge(
      Layer.effect(
        Catalog,
        Effect.map(Catalog, (catalog) => ({
          ...catalog,
          revision: () => state.revision,
          findNamespaceByName: (workspaceId: string, name: string) =>
            Effect.suspend(() => {
              state.reads++
              return catalog.findNamespaceByName(workspaceId, name)
            }),
          getNamespace: (workspaceId: string, id: string) =>
            Effect.suspend(() => {
              state.reads++
              return catalog.getNamespace(workspaceId, id)
            })
        }))
      ).pipe(Layer.provideMerge(MemoryStorage.layer))
    )
  )
  return { state, layer }
}

const set = (namespace: { namespaceName: string } | { namespaceId: string }, identifier: string, limit: number) =>
  Effect.flatMap(Overrides, (overrides) => overrides.set(admin, { ...namespace, identifier, limit, duration: 60_000 }))

describe("Overrides", () => {
  it.effect("reads the namespace a call names once while the revision holds, again once it moves", () => {
    const { layer, state } = counted()
    return Effect.gen(function*() {
      const catalog = yield* Catalog
      yield* catalog.putWorkspace(new Workspace({ id: WS, name: "overrides" }))
      yield* catalog.putNamespace(new Namespace({ id: "ns_email", workspaceId: WS, name: "email" }))
      state.revision++
      for (let i = 0; i < 5; i++) {
        expect((yield* set({ namespaceName: "email" }, `user_${i}`, 10 + i)).namespaceId).toBe("ns_email")
      }
      expect(state.reads).toBe(1)
      for (let i = 0; i < 3; i++) yield* set({ namespaceId: "ns_email" }, "user_0", 20 + i)
      expect(state.reads).toBe(2)

      // Renamed: once the revision moves, the old name names nothing (a new namespace is made)
      // and the new one finds it.
      yield* catalog.putNamespace(new Namespace({ id: "ns_email", workspaceId: WS, name: "mail" }))
      state.revision++
      expect((yield* set({ namespaceName: "mail" }, "user_0", 30)).namespaceId).toBe("ns_email")
      const made = yield* set({ namespaceName: "email" }, "user_0", 40)
      expect(made.namespaceId).not.toBe("ns_email")
      expect(
        (yield* catalog.getOverride("ns_email", "user_0")).pipe((found) => found._tag === "Some" && found.value.limit)
      )
        .toBe(30)
    }).pipe(Effect.provide(layer))
  })
})
