/**
 * Core's services over both halves of the storage port at once: an override set and an api created
 * once per idempotency key (the write in the Catalog, its receipt in the VerificationStore), and
 * the revisions of both halves, by which Auth knows what it remembered is still true; and what
 * Unkey v2's routes ask of them on every store (reroll, imports skipping what exists, identities and
 * namespaces by id or name, paged permissions, several limits at once).
 */
import { expect, it } from "@effect/vitest"
import { Api } from "@keymeter/core/Api"
import * as Apis from "@keymeter/core/Apis"
import * as Auth from "@keymeter/core/Auth"
import * as CatalogPart from "@keymeter/core/CatalogPart"
import * as Decision from "@keymeter/core/Decision"
import * as Identities from "@keymeter/core/Identities"
import * as Keys from "@keymeter/core/Keys"
import * as KeyVerifier from "@keymeter/core/KeyVerifier"
import { Namespace } from "@keymeter/core/Namespace"
import * as Overrides from "@keymeter/core/Overrides"
import * as RateLimiter from "@keymeter/core/RateLimiter"
import * as Rbac from "@keymeter/core/Rbac"
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

  it.effect("rerolls keys, imports skipping existing hashes, names identities and namespaces either way", () =>
    run(Effect.gen(function*() {
      yield* seedCatalog
      const keys = yield* Keys.Keys
      const verifier = yield* KeyVerifier.KeyVerifier
      const identities = yield* Identities.Identities
      const rbac = yield* Rbac.Rbac
      const limiter = yield* RateLimiter.RateLimiter
      const principal = Auth.system(WS)
      const verify = (key: string) => Effect.map(verifier.verify(principal, { key }), (answer) => answer.code)

      const old = yield* keys.create(principal, { apiId: "api_1", externalId: "acme", credits: { remaining: 7 } })
      const rolled = yield* keys.reroll(principal, { keyId: old.keyId, expiration: 0 })
      expect(yield* verify(rolled.key)).toBe("VALID")
      expect(yield* verify(old.key!)).toBe("EXPIRED")
      expect((yield* keys.get(principal, { keyId: rolled.keyId })).credits?.remaining).toBe(6)

      const hashOf = (n: number) => n.toString(16).padStart(64, "0")
      const imported = yield* keys.migrate(principal, [{ apiId: "api_1", hash: hashOf(1) }], { skipExisting: true })
      const again = yield* keys.migrate(principal, [
        { apiId: "api_1", hash: hashOf(1) },
        { apiId: "api_1", hash: hashOf(2) },
        { apiId: "api_1", hash: hashOf(2) }
      ], { skipExisting: true })
      expect(imported.skipped).toEqual([])
      expect(again.skipped).toEqual([0, 2])
      expect(again.keyIds).toHaveLength(1)

      const acme = yield* identities.get(principal, { identity: "acme" })
      expect((yield* identities.get(principal, { identity: acme.id })).externalId).toBe("acme")
      const found = yield* identities.list(principal, { search: "ACM" })
      expect(found.identities.map((identity) => identity.externalId)).toEqual(["acme"])

      for (const slug of ["c.read", "a.read", "b.read"]) yield* rbac.createPermission(principal, { name: slug })
      const first = yield* rbac.pagePermissions(principal, { limit: 2 })
      const second = yield* rbac.pagePermissions(principal, { limit: 2, cursor: first.cursor })
      expect([...first.items, ...second.items].map((p) => p.slug).sort()).toEqual(["a.read", "b.read", "c.read"])
      expect(second.cursor).toBeUndefined()

      const byName = yield* limiter.limit(principal, { namespace: "both", identifier: "u", limit: 3, duration: 60_000 })
      const namespace = yield* (yield* Catalog).findNamespaceByName(WS, "both")
      const id = Option.getOrThrow(namespace).id
      const byId = yield* limiter.limit(principal, { namespace: id, identifier: "u", limit: 3, duration: 60_000 })
      expect([byName.remaining, byId.remaining]).toEqual([2, 1])
      const multi = yield* limiter.multiLimit(principal, [
        { namespace: "both", identifier: "u", limit: 3, duration: 60_000 },
        { namespace: "both", identifier: "u", limit: 3, duration: 60_000 }
      ])
      expect(multi.limits.map((l) => l.passed)).toEqual([true, false])
    })))

  it.effect("moves the revisions of what each write changes, so what was read and remembered is read again", () =>
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
        // The parts whose revision `write` moved.
        const moved = <A, E>(write: Effect.Effect<A, E>) =>
          Effect.gen(function*() {
            const before = CatalogPart.ALL.map(catalogRevision)
            yield* write
            return CatalogPart.ALL.filter((part, i) => catalogRevision(part) !== before[i])
          })
        expect(yield* moved(catalog.putNamespace(new Namespace({ id: "rlns_rev", workspaceId: WS, name: "rev" }))))
          .toEqual(["namespaces"])
        expect(yield* moved(catalog.putApi(new Api({ id: "api_rev", workspaceId: WS, name: "rev" })))).toEqual(["apis"])
        expect(yield* moved(catalog.deleteRootKey(WS, "rk_rev"))).toEqual(["rootKeys"])
        const override = {
          id: "rlor_rev",
          namespaceId: "rlns_rev",
          identifier: "u",
          limit: 1,
          duration: 1000,
          async: false,
          now: 1
        }
        // Overrides move no part: Overrides keeps what it remembers of them itself.
        expect(yield* moved(catalog.upsertOverride(override))).toEqual([])
        expect(yield* moved(catalog.deleteOverride("rlns_rev", "u"))).toEqual([])
      }
      const storeRevision = verifications.revision
      const catalogBefore = catalogRevision === undefined ? undefined : CatalogPart.ALL.map(catalogRevision)
      if (storeRevision !== undefined) {
        const before = storeRevision()
        yield* store([{ time: FROM, workspaceId: WS, apiId: "api_1", keyId: "k1", outcome: "valid", tags: [] }])
        expect(storeRevision()).not.toBe(before)
      }
      // Storing verifications is not a catalog change: what was remembered from it stays valid.
      yield* store([{ time: FROM, workspaceId: WS, apiId: "api_1", keyId: "k2", outcome: "valid", tags: ["t"] }])
      expect(catalogRevision === undefined ? undefined : CatalogPart.ALL.map(catalogRevision)).toEqual(catalogBefore)
    })))
}
