/**
 * The idempotency receipts a VerificationStore stores with a batch: found until they expire, one
 * live receipt per key, and keyed batches recorded once through Verifications (repeats replay,
 * another body is refused, concurrent ones run once).
 */
import { expect, it } from "@effect/vitest"
import * as Auth from "@keymeter/core/Auth"
import type * as Idempotency from "@keymeter/core/Idempotency"
import { VerificationStore } from "@keymeter/core/Storage"
import * as Verification from "@keymeter/core/Verification"
import * as Verifications from "@keymeter/core/Verifications"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { Suite } from "./ConformanceFixture.js"
import { ask, FROM, OTHER_WS, seedCatalog, TO, WS } from "./ConformanceFixture.js"

/** Declares the receipts' tests of `suite`, in the describe block it is called in. */
export const tests = (suite: Suite) => {
  const { run } = suite

  it.effect("stores a receipt with its batch, finds it until it expires, and refuses a second live one", () =>
    run(Effect.gen(function*() {
      yield* seedCatalog
      const verifications = yield* VerificationStore
      const T = TO + 3_600_000
      const events = (n: number) =>
        Verification.decodeBatch(
          Array.from({ length: n }, () => ({ apiId: "api_1", keyId: "k_receipt", outcome: "valid", time: FROM })),
          { workspaceId: WS, now: T }
        ).pipe(Either.getOrThrow)
      const receipt = (key: string, createdAt: number, fingerprint: string): Idempotency.Receipt => ({
        workspaceId: WS,
        key,
        operation: "recordVerifications",
        fingerprint,
        response: JSON.stringify({ recorded: 3 }),
        createdAt,
        expiresAt: createdAt + 60_000
      })
      const total = Effect.map(ask({ apiId: "api_1", keyId: ["k_receipt"], end: TO }), (rows) => rows[0]!.total)

      expect(Option.isNone(yield* verifications.findReceipt(WS, "key-1", T))).toBe(true)
      yield* verifications.append(events(3), receipt("key-1", T, "f1"))
      expect(yield* total).toBe(3)
      expect(yield* verifications.findReceipt(WS, "key-1", T + 1)).toEqual(Option.some(receipt("key-1", T, "f1")))
      expect(Option.isNone(yield* verifications.findReceipt(OTHER_WS, "key-1", T + 1))).toBe(true)

      // A live receipt of the key: the append fails and stores nothing.
      const taken = yield* Effect.flip(verifications.append(events(2), receipt("key-1", T + 10, "f2")))
      expect(taken._tag).toBe("StorageError")
      expect(yield* total).toBe(3)
      expect(yield* verifications.findReceipt(WS, "key-1", T + 20)).toEqual(Option.some(receipt("key-1", T, "f1")))
      expect(Option.isNone(yield* verifications.findReceipt(WS, "key-1", T + 60_000))).toBe(true)

      // Expired, the key is free again.
      yield* verifications.append(events(2), receipt("key-1", T + 60_000, "f3"))
      expect(yield* total).toBe(5)
      expect(Option.map(yield* verifications.findReceipt(WS, "key-1", T + 60_001), (r) => r.fingerprint))
        .toEqual(Option.some("f3"))
      // A receipt alone (a write stored elsewhere, as an override is).
      yield* verifications.append([], receipt("key-2", T, "f4"))
      expect(Option.map(yield* verifications.findReceipt(WS, "key-2", T + 1), (r) => r.fingerprint))
        .toEqual(Option.some("f4"))
      expect(yield* total).toBe(5)
    })))

  it.effect("records a keyed batch once: repeats replay, another body is refused, concurrent ones run once", () =>
    run(Effect.gen(function*() {
      yield* seedCatalog
      const service = yield* Verifications.Verifications
      const principal = Auth.system(WS)
      const batch = (keyId: string, n: number) =>
        // The test clock reads 0: these are its first milliseconds.
        Array.from({ length: n }, (_, i) => ({ apiId: "api_1", keyId, outcome: "valid", time: i }))
      const total = (keyId: string) =>
        Effect.map(ask({ apiId: "api_1", keyId: [keyId], end: TO }), (rows) => rows[0]!.total)
      const options = { idempotencyKey: "batch-1" }

      expect(yield* service.record(principal, batch("k_once", 4), options)).toEqual({ recorded: 4 })
      expect(yield* service.record(principal, batch("k_once", 4), options)).toEqual({ recorded: 4 })
      // The same events with their fields in another order are the same request.
      const reordered = batch("k_once", 4).map(({ apiId, keyId, outcome, time }) => ({ time, outcome, keyId, apiId }))
      expect(yield* service.record(principal, reordered, options)).toEqual({ recorded: 4 })
      expect(yield* total("k_once")).toBe(4)

      const reused = yield* Effect.flip(service.record(principal, batch("k_once", 5), options))
      expect(reused._tag).toBe("IdempotencyKeyReused")
      expect(yield* total("k_once")).toBe(4)
      // Keys are the workspace's own: another workspace may use the same one.
      const elsewhere = yield* service.record(
        Auth.system(OTHER_WS),
        [{ apiId: "api_b", keyId: "k_once", outcome: "valid" }],
        options
      )
      expect(elsewhere).toEqual({ recorded: 1 })

      const answers = yield* Effect.all(
        Array.from(
          { length: 20 },
          () => service.record(principal, batch("k_concurrent", 3), { idempotencyKey: "c" })
        ),
        { concurrency: "unbounded" }
      )
      expect(answers).toEqual(Array.from({ length: 20 }, () => ({ recorded: 3 })))
      expect(yield* total("k_concurrent")).toBe(3)

      const bad = yield* Effect.flip(service.record(principal, batch("k_bad", 1), { idempotencyKey: "with space" }))
      expect([bad._tag, bad.message]).toEqual([
        "ValidationError",
        "idempotencyKey: must be 1 to 255 visible ASCII characters (no space, \" or \\), got \"with space\""
      ])
      expect(yield* total("k_bad")).toBe(0)
    })))
}
