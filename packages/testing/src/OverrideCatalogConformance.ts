/**
 * The Catalog's overrides: upserted, set, got, deleted, resolved across patterns and paged, also
 * through the Overrides service.
 */
import { expect, it } from "@effect/vitest"
import * as Auth from "@keymeter/core/Auth"
import { Namespace } from "@keymeter/core/Namespace"
import * as Overrides from "@keymeter/core/Overrides"
import { Catalog } from "@keymeter/core/Storage"
import { Workspace } from "@keymeter/core/Workspace"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { Suite } from "./ConformanceFixture.js"
import { WS } from "./ConformanceFixture.js"

/** Declares the Catalog's override tests of `suite`, in the describe block it is called in. */
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
}
