// Provisioning over the memory storage (the adapter core's service tests run on; it is built with
// them, see tsconfig.test.json).
import { describe, expect, it } from "@effect/vitest"
import * as Auth from "@keymeter/core/Auth"
import * as Provisioning from "@keymeter/core/Provisioning"
import { Catalog } from "@keymeter/core/Storage"
import { MemoryStorage } from "@keymeter/storage-memory"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"

const document: Provisioning.ProvisioningDocument = {
  workspaces: [{
    id: "ws_acme",
    name: "Acme",
    rootKeys: [
      { key: "sk_acme_admin_8f3e1c7a9b2d4e6f0a1c", permissions: ["*"] },
      { key: "sk_acme_reader_5d2b9e4f7c1a3e8b6d0f", permissions: ["api.*.read_api"] }
    ],
    apis: [{ id: "api_main", name: "main" }],
    namespaces: [{ id: "rlns_email", name: "email" }]
  }]
}

const Test = Auth.layer.pipe(Layer.provideMerge(MemoryStorage.layer))

describe("Provisioning", () => {
  it.effect("applies a document idempotently and stores only hashes", () =>
    Effect.gen(function*() {
      const catalog = yield* Catalog
      const auth = yield* Auth.Auth
      yield* Provisioning.apply(document)
      const first = yield* catalog.listRootKeys("ws_acme")
      yield* Provisioning.apply(document)
      const second = yield* catalog.listRootKeys("ws_acme")
      expect(second.map((k) => k.id)).toEqual(first.map((k) => k.id))
      expect(second).toHaveLength(2)
      expect(JSON.stringify(second)).not.toContain("sk_acme")
      const principal = yield* auth.authenticate(Redacted.make("sk_acme_reader_5d2b9e4f7c1a3e8b6d0f"))
      expect(principal).toMatchObject({ workspaceId: "ws_acme", permissions: ["api.*.read_api"] })
      expect(Option.isSome(yield* catalog.getApi("ws_acme", "api_main"))).toBe(true)
      expect(Option.map(yield* catalog.findNamespaceByName("ws_acme", "email"), (n) => n.id)).toEqual(
        Option.some("rlns_email")
      )
      // Changed permissions are applied to the same key.
      yield* Provisioning.apply({
        workspaces: [{
          ...document.workspaces[0]!,
          rootKeys: [{ key: "sk_acme_reader_5d2b9e4f7c1a3e8b6d0f", permissions: ["*"] }]
        }]
      })
      expect((yield* auth.authenticate(Redacted.make("sk_acme_reader_5d2b9e4f7c1a3e8b6d0f"))).permissions).toEqual([
        "*"
      ])
    }).pipe(Effect.provide(Test)))

  it.effect("refuses ids and secrets that belong to another workspace", () =>
    Effect.gen(function*() {
      yield* Provisioning.apply(document)
      const steal = (workspace: Provisioning.ProvisioningDocument["workspaces"][number]) =>
        Effect.either(Provisioning.apply({ workspaces: [workspace] }))
      const api = yield* steal({ id: "ws_other", name: "O", apis: [{ id: "api_main", name: "x" }] })
      expect(Either.isLeft(api) && api.left.message).toMatch(/api api_main belongs to another workspace/)
      const key = yield* steal({
        id: "ws_other",
        name: "O",
        rootKeys: [{ key: "sk_acme_admin_8f3e1c7a9b2d4e6f0a1c", permissions: [] }]
      })
      expect(Either.isLeft(key) && key.left.message).toMatch(/already a root key of another workspace/)
      const name = yield* steal({ ...document.workspaces[0]!, namespaces: [{ id: "rlns_other", name: "email" }] })
      expect(Either.isLeft(name) && name.left.message).toMatch(/clashes/)
    }).pipe(Effect.provide(Test)))

  it.effect("validates the document and names the bad entry", () =>
    Effect.gen(function*() {
      const result = yield* Effect.either(
        Provisioning.decode({
          workspaces: [{ id: "w", name: "n", rootKeys: [{ key: "sk_".padEnd(31, "x"), permissions: [] }] }]
        })
      )
      expect(Either.isLeft(result) && result.left.message).toMatch(
        /workspaces\[0\]\.rootKeys\[0\]\.key: must have at least 32 characters/
      )
      const long = yield* Effect.either(
        Provisioning.decode({
          workspaces: [{ id: "w", name: "n", rootKeys: [{ key: "sk_".padEnd(32, "x"), permissions: [] }] }]
        })
      )
      expect(Either.isRight(long)).toBe(true)
    }))

  it.effect("bootstraps an empty store once, with a key holding *", () =>
    Effect.gen(function*() {
      const auth = yield* Auth.Auth
      const secret = yield* Provisioning.bootstrap
      expect(Option.isSome(secret)).toBe(true)
      const principal = yield* auth.authenticate(Redacted.make(Option.getOrThrow(secret)))
      expect(principal).toMatchObject({ workspaceId: "ws_default", permissions: ["*"] })
      expect(Option.isNone(yield* Provisioning.bootstrap)).toBe(true)
    }).pipe(Effect.provide(Test)))
})
