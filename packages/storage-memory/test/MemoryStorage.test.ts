import { describe, expect, it } from "@effect/vitest"
import * as Aggregation from "@keymeter/core/Aggregation"
import { VerificationStore } from "@keymeter/core/Storage"
import * as Verification from "@keymeter/core/Verification"
import type { Verification as Event } from "@keymeter/core/Verification"
import { MemoryStorage } from "@keymeter/storage-memory"
import * as Effect from "effect/Effect"

const HOUR = 3_600_000

const event = (hour: number, keyId: string): Event =>
  Verification.make({ time: hour * HOUR, workspaceId: "ws", apiId: "api", keyId, outcome: "valid" })

const query = (fields: Partial<Aggregation.AggregationQuery> = {}) =>
  Aggregation.makeQuery({ workspaceId: "ws", apiId: "api", end: 100 * HOUR, maxRows: 1000, ...fields })

// The shared behaviour is the conformance suite's (test/ at the top); these are the adapter's own.
describe("MemoryStorage", () => {
  it.effect("stores a batch and aggregates it, per layer built", () =>
    Effect.gen(function*() {
      const store = yield* VerificationStore
      yield* store.append([event(1, "a"), event(2, "a"), event(2, "b")])
      const result = yield* store.aggregate(query({ groupByKey: true }))
      expect(result.keyId).toEqual(["a", "b"])
      expect(Array.from(result.counts.filter((_, i) => i % Aggregation.OUTCOMES === 0))).toEqual([2, 1])
      const fresh = yield* Effect.provide(
        Effect.flatMap(VerificationStore, (other) => other.aggregate(query())),
        MemoryStorage.layer
      )
      expect(fresh.size).toBe(0)
    }).pipe(Effect.provide(MemoryStorage.layer)))

  it.effect("fails with QueryTooLarge past maxRows", () =>
    Effect.gen(function*() {
      const store = yield* VerificationStore
      yield* store.append([event(1, "a"), event(1, "b"), event(1, "c")])
      const error = yield* Effect.flip(store.aggregate(query({ groupByKey: true, maxRows: 2 })))
      expect(error._tag).toBe("QueryTooLarge")
    }).pipe(Effect.provide(MemoryStorage.layer)))
})
