/**
 * Core's services over both halves of the storage port at once: an override set and an api created
 * once per idempotency key (the write in the Catalog, its receipt in the VerificationStore), and
 * the revisions of both halves, by which Auth knows what it remembered is still true.
 */
import { expect, it } from "@effect/vitest"
import { Api } from "@keymeter/core/Api"
import * as Apis from "@keymeter/core/Apis"
import * as Auth from "@keymeter/core/Auth"
import * as Decision from "@keymeter/core/Decision"
import { Namespace } from "@keymeter/core/Namespace"
import * as Overrides from "@keymeter/core/Overrides"
import { hash as RootKeyHash, RootKey } from "@keymeter/core/RootKey"
import { Catalog, VerificationStore } from "@keymeter/core/Storage"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type { Suite } from "./ConformanceFixture.js"
import { FROM, seedCatalog, store, WS } from "./ConformanceFixture.js"

/** Declares the tests of core's services over both halves of `suite`, in the describe block it is called in. */
export const tests = (suite: Suite) => {
  const { run } = suite

  it.effect("sets an override and creates an api once per idempotency key", () =>
    run(Effect.gen(function*() {
      yield* seedCatalog
      const overrides = yield* Overrides.Overrides
      const apis = yield* Apis.Apis
      const catalog = yield* Catalog
      const principal = Auth.system(WS)
      const input = { namespaceName: "keyed", identifier: "user_1", limit: 5, duration: 1000 }
      const first = yield* overrides.set(principal, input, { idempotencyKey: "o" })
      const again = yield* overrides.set(principal, input, { idempotencyKey: "o" })
      expect(again).toEqual(first)
      const other = yield* Effect.flip(overrides.set(principal, { ...input, limit: 6 }, { idempotencyKey: "o" }))
      expect(other._tag).toBe("IdempotencyKeyReused")
      expect(Option.map(yield* catalog.getOverride(first.namespaceId, "user_1"), (o) => o.limit))
        .toEqual(Option.some(5))

      const created = yield* apis.create(principal, { name: "keyed" }, { idempotencyKey: "a" })
      expect(yield* apis.create(principal, { name: "keyed" }, { idempotencyKey: "a" })).toEqual(created)
      const reused = yield* Effect.flip(apis.create(principal, { name: "other" }, { idempotencyKey: "a" }))
      expect(reused._tag).toBe("IdempotencyKeyReused")
      // The key of the api is not the key of the override: another operation is another request.
      const crossed = yield* Effect.flip(apis.create(principal, { name: "keyed" }, { idempotencyKey: "o" }))
      expect(crossed.message).toMatch(/^idempotencyKey: this key was used for setOverride at /)
      // Unkeyed, each call creates.
      const a = yield* apis.create(principal, { name: "plain" })
      const b = yield* apis.create(principal, { name: "plain" })
      expect(a.apiId).not.toBe(b.apiId)
    })))

  it.effect("moves its revisions on every write, so what was read and remembered is read again", () =>
    run(Effect.gen(function*() {
      const catalog = yield* Catalog
      const verifications = yield* VerificationStore
      const auth = yield* Auth.Auth
      yield* seedCatalog
      const secret = "sk_conformance_revision"
      const key = new RootKey({
        id: "rk_rev",
        workspaceId: WS,
        name: "k",
        hash: RootKeyHash(secret),
        permissions: ["*"],
        createdAt: 1,
        disabled: false
      })
      yield* catalog.putRootKey(key)
      // Remembered after the first lookup; every change after it counts from the next request.
      expect((yield* auth.authenticate(Redacted.make(secret))).rootKeyId).toBe("rk_rev")
      yield* catalog.putRootKey(new RootKey({ ...key, disabled: true }))
      expect((yield* Effect.flip(auth.authenticate(Redacted.make(secret))))._tag).toBe("KeyForbidden")
      // Refused from memory when the catalog has a revision (decided without I/O); read again when not.
      const again = Decision.now(auth.authenticate(Redacted.make(secret)))
      if (catalog.revision !== undefined) expect(Exit.isExit(again) && Exit.isFailure(again)).toBe(true)
      else expect(Exit.isExit(again)).toBe(false)
      yield* catalog.deleteRootKey(WS, "rk_rev")
      expect((yield* Effect.flip(auth.authenticate(Redacted.make(secret))))._tag).toBe("Unauthenticated")
      yield* catalog.putRootKey(key)
      expect((yield* auth.authenticate(Redacted.make(secret))).rootKeyId).toBe("rk_rev")
      const catalogRevision = catalog.revision
      if (catalogRevision !== undefined) {
        const moved = <A, E>(write: Effect.Effect<A, E>) =>
          Effect.gen(function*() {
            const before = catalogRevision()
            yield* write
            return catalogRevision() !== before
          })
        expect(yield* moved(catalog.putNamespace(new Namespace({ id: "rlns_rev", workspaceId: WS, name: "rev" }))))
          .toBe(true)
        expect(yield* moved(catalog.putApi(new Api({ id: "api_rev", workspaceId: WS, name: "rev" })))).toBe(true)
        expect(yield* moved(catalog.deleteRootKey(WS, "rk_rev"))).toBe(true)
        const override = {
          id: "rlor_rev",
          namespaceId: "rlns_rev",
          identifier: "u",
          limit: 1,
          duration: 1000,
          async: false,
          now: 1
        }
        expect(yield* moved(catalog.upsertOverride(override))).toBe(true)
        expect(yield* moved(catalog.deleteOverride("rlns_rev", "u"))).toBe(true)
      }
      const storeRevision = verifications.revision
      const catalogBefore = catalogRevision?.()
      if (storeRevision !== undefined) {
        const before = storeRevision()
        yield* store([{ time: FROM, workspaceId: WS, apiId: "api_1", keyId: "k1", outcome: "valid", tags: [] }])
        expect(storeRevision()).not.toBe(before)
      }
      // Storing verifications is not a catalog change: what was remembered from it stays valid.
      yield* store([{ time: FROM, workspaceId: WS, apiId: "api_1", keyId: "k2", outcome: "valid", tags: ["t"] }])
      expect(catalogRevision?.()).toBe(catalogBefore)
    })))
}
