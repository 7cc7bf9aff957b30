// Identities over the memory storage: made with the first key of an externalId, read, disabled
// (its keys then verify as UNAUTHORIZED from the next call) and enabled again; named by one
// `identity` field (an id, else an externalId); listed by page with a search.
import { describe, expect, it } from "@effect/vitest"
import { Identities } from "@keymeter/core/Identities"
import * as Effect from "effect/Effect"
import { admin, setup, Test, WS } from "./KeyFixture.js"

describe("Identities", () => {
  it.effect("reads, disables and enables an identity; its keys follow from the next call", () =>
    Effect.gen(function*() {
      const { create, verify } = yield* setup
      const identities = yield* Identities
      const { key } = yield* create({ externalId: "customer_1" })
      const identity = yield* identities.get(admin, { externalId: "customer_1" })
      expect(identity).toMatchObject({ externalId: "customer_1", enabled: true })
      expect((yield* verify(key)).code).toBe("VALID")
      expect(yield* identities.update(admin, { externalId: "customer_1", enabled: false })).toMatchObject({
        id: identity.id,
        enabled: false
      })
      expect((yield* verify(key)).code).toBe("UNAUTHORIZED")
      yield* identities.update(admin, { externalId: "customer_1", enabled: true })
      expect((yield* verify(key)).code).toBe("VALID")
    }).pipe(Effect.provide(Test)))

  it.effect("answers NotFound for an externalId no key named, and checks permissions", () =>
    Effect.gen(function*() {
      yield* setup
      const identities = yield* Identities
      expect((yield* Effect.flip(identities.get(admin, { externalId: "nobody" })))._tag).toBe("NotFound")
      const reader = { workspaceId: WS, rootKeyId: "rk", permissions: ["identity.*.read_identity"] }
      expect((yield* Effect.flip(identities.update(reader, { externalId: "nobody", enabled: false })))._tag)
        .toBe("InsufficientPermissions")
      expect((yield* Effect.flip(identities.get(admin, { externalId: "" })))._tag).toBe("ValidationError")
    }).pipe(Effect.provide(Test)))

  it.effect("finds, updates and deletes an identity named by `identity`: an id first, else an externalId", () =>
    Effect.gen(function*() {
      yield* setup
      const identities = yield* Identities
      const first = yield* identities.create(admin, { externalId: "customer_1" })
      // An externalId that is another identity's id: `identity` finds the identity with that id.
      const lookalike = yield* identities.create(admin, { externalId: first.id })
      expect((yield* identities.get(admin, { identity: first.id })).id).toBe(first.id)
      expect((yield* identities.get(admin, { identity: "customer_1" })).id).toBe(first.id)
      expect((yield* identities.get(admin, { identity: lookalike.id })).externalId).toBe(first.id)
      expect(yield* identities.update(admin, { identity: "customer_1", meta: { plan: "pro" } })).toMatchObject({
        id: first.id,
        meta: { plan: "pro" }
      })
      expect(yield* Effect.flip(identities.get(admin, { identity: "nobody" }))).toMatchObject({
        _tag: "NotFound",
        message: "identity: no identity \"nobody\" in this workspace"
      })
      expect((yield* Effect.flip(identities.get(admin, {})))._tag).toBe("ValidationError")
      expect(yield* identities.delete(admin, { identity: "customer_1" })).toEqual({})
      expect((yield* Effect.flip(identities.get(admin, { identityId: first.id })))._tag).toBe("NotFound")
    }).pipe(Effect.provide(Test)))

  it.effect("lists the identities whose id or externalId contains a search, page by page", () =>
    Effect.gen(function*() {
      yield* setup
      const identities = yield* Identities
      // More than a batch the search reads at a time, the matches spread across batches.
      const made = yield* Effect.forEach(
        Array.from({ length: 1200 }, (_, i) => i % 250 === 7 ? `Acme_${i}` : `user_${i}`),
        (externalId) => identities.create(admin, { externalId })
      )
      const acme = made.filter((identity) => identity.externalId.startsWith("Acme_")).map((identity) => identity.id)
      expect(acme).toHaveLength(5)

      const pages: Array<ReadonlyArray<string>> = []
      let cursor: string | undefined
      do {
        const page = yield* identities.list(admin, { search: "aCmE", limit: 2, ...(cursor ? { cursor } : {}) })
        // The workspace's count, not the matches'.
        expect(page.total).toBe(1200)
        pages.push(page.identities.map((identity) => identity.id))
        cursor = page.cursor
      } while (cursor !== undefined)
      expect(pages.map((page) => page.length)).toEqual([2, 2, 1])
      expect(pages.flat()).toEqual(acme)

      const one = made[600]!
      expect((yield* identities.list(admin, { search: one.id.slice(-12).toLowerCase() })).identities)
        .toEqual([one])
      expect((yield* identities.list(admin, { search: "nobody" })).identities).toEqual([])
      const plain = yield* identities.list(admin, { limit: 100 })
      expect(plain.identities).toHaveLength(100)
      expect(plain.total).toBe(1200)
    }).pipe(Effect.provide(Test)))
})
