/**
 * The VerificationStore half of the storage port: what it answers for the events appended to it
 * (checked against the naive reference over random events and queries, in order and late), the cap
 * on groups, and the idempotency receipts stored with a batch, directly and through Verifications.
 */
import { expect, it } from "@effect/vitest"
import * as Analytics from "@keymeter/core/Analytics"
import * as Auth from "@keymeter/core/Auth"
import type * as Idempotency from "@keymeter/core/Idempotency"
import * as Keymeter from "@keymeter/core/Keymeter"
import { VerificationStore } from "@keymeter/core/Storage"
import * as Verification from "@keymeter/core/Verification"
import * as Verifications from "@keymeter/core/Verifications"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { Suite } from "./ConformanceFixture.js"
import {
  ask,
  eventArb,
  FROM,
  keyIds,
  OTHER_WS,
  queryArb,
  seedCatalog,
  shapedQueryArb,
  store,
  TO,
  WS
} from "./ConformanceFixture.js"
import * as Reference from "./Reference.js"

/** Declares the VerificationStore's tests of `suite`, in the describe block it is called in. */
export const tests = (suite: Suite) => {
  const { numRuns, run, storage, timeout } = suite

  it.effect(
    "answers random queries exactly like the naive reference over raw events",
    () =>
      Effect.promise(() =>
        FastCheck.assert(
          FastCheck.asyncProperty(
            FastCheck.array(eventArb, { maxLength: 300 }),
            FastCheck.array(queryArb, { minLength: 1, maxLength: 15 }),
            (events, queries) =>
              Effect.runPromise(run(Effect.gen(function*() {
                yield* seedCatalog
                yield* store(events)
                for (const query of queries) {
                  const got = yield* ask(query)
                  const want = Reference.answer(events, { ...query, workspaceId: WS })
                  expect(got, JSON.stringify(query)).toEqual(want)
                }
              })))
          ),
          { numRuns }
        )
      ),
    timeout
  )

  it.effect(
    "answers the shapes of the fast paths (top N, per tag, key series) like the reference",
    () =>
      Effect.promise(() =>
        FastCheck.assert(
          FastCheck.asyncProperty(
            FastCheck.array(eventArb, { minLength: 20, maxLength: 400 }),
            FastCheck.array(shapedQueryArb, { minLength: 1, maxLength: 12 }),
            (events, queries) =>
              Effect.runPromise(run(Effect.gen(function*() {
                yield* seedCatalog
                // In time order, then a few late ones, as real traffic arrives.
                const sorted = [...events].sort((a, b) => a.time - b.time)
                yield* store(sorted.slice(0, sorted.length - 10))
                yield* store(sorted.slice(sorted.length - 10).reverse(), 3)
                for (const query of queries) {
                  expect(yield* ask(query), JSON.stringify(query)).toEqual(
                    Reference.answer(events, { ...query, workspaceId: WS } as never)
                  )
                }
              })))
          ),
          { numRuns }
        )
      ),
    timeout
  )

  it.effect("keeps answering exactly after many late, shuffled events", () =>
    run(Effect.gen(function*() {
      yield* seedCatalog
      const events = FastCheck.sample(eventArb, { numRuns: 6000, seed: 42 })
      // First the newest third in order, then the rest shuffled: most of it arrives late.
      const sorted = [...events].sort((a, b) => a.time - b.time)
      const recent = sorted.slice(4000)
      const older = FastCheck.sample(FastCheck.shuffledSubarray(sorted.slice(0, 4000), { minLength: 4000 }), {
        numRuns: 1,
        seed: 7
      })[0]!
      yield* store(recent, 500)
      yield* store(older, 500)
      const queries = FastCheck.sample(queryArb, { numRuns: 150, seed: 3 })
      for (const query of queries) {
        expect(yield* ask(query), JSON.stringify(query)).toEqual(
          Reference.answer([...recent, ...older], { ...query, workspaceId: WS })
        )
      }
    })))

  it.effect("fails with QueryTooLarge when groups exceed the cap, before limit", () =>
    Effect.gen(function*() {
      yield* seedCatalog
      yield* store(keyIds.map((keyId, i) => ({
        time: FROM + i * 3600000,
        workspaceId: WS,
        apiId: "api_1",
        keyId,
        outcome: "valid",
        tags: []
      })))
      const result = yield* Effect.either(ask({ apiId: "api_1", groupBy: ["key"], limit: 1, end: TO }))
      expect(Either.isLeft(result) && result.left._tag).toBe("QueryTooLarge")
      const fits = yield* ask({ apiId: "api_1", groupBy: ["key"], limit: 1, end: TO, keyId: ["k1", "k2"] })
      expect(fits).toHaveLength(1)
    }).pipe(
      Effect.provide(Keymeter.layer.pipe(
        Layer.provideMerge(storage),
        Layer.provide(Layer.succeed(Analytics.MaxDatapoints, 3))
      ))
    ) as Effect.Effect<void>)

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
