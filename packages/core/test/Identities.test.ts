// Identities over the memory storage: made with the first key of an externalId, read, disabled
// (its keys then verify as UNAUTHORIZED from the next call) and enabled again.
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
})
