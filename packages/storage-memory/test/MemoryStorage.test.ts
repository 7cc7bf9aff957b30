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

  it.effect("scans raw events as columns, and fails with QueryTooLarge naming the row budget past maxRows", () =>
    Effect.gen(function*() {
      const store = yield* VerificationStore
      yield* store.append([
        Verification.make({ ...event(1, "a"), spentCredits: 3, latency: 1.5, region: "eu" }),
        event(2, "b")
      ])
      const scope = { workspaceId: "ws", within: undefined, from: 0, to: 100 * HOUR, maxRows: 2 }
      const [batch] = yield* store.scan!(scope)
      // One batch of the chunk's rows, in time order here.
      expect(batch!.length).toBe(2)
      const row = (i: number) => [
        batch!.time[i],
        batch!.keyId.values[batch!.keyId.codes[i]!],
        batch!.spentCredits[i],
        batch!.latency[i],
        batch!.region.values[batch!.region.codes[i]!]
      ]
      expect([row(0), row(1)]).toEqual([[HOUR, "a", 3, 1.5, "eu"], [2 * HOUR, "b", 0, 0, ""]])
      const error = yield* Effect.flip(store.scan!({ ...scope, maxRows: 1 }))
      expect([error._tag, error.message]).toEqual([
        "QueryTooLarge",
        "The scan would read more than 1 rows; narrow it with a shorter time range or fewer apis"
      ])
    }).pipe(Effect.provide(MemoryStorage.layer)))

  it.effect("fails with QueryTooLarge past maxRows", () =>
    Effect.gen(function*() {
      const store = yield* VerificationStore
      yield* store.append([event(1, "a"), event(1, "b"), event(1, "c")])
      const error = yield* Effect.flip(store.aggregate(query({ groupByKey: true, maxRows: 2 })))
      expect(error._tag).toBe("QueryTooLarge")
    }).pipe(Effect.provide(MemoryStorage.layer)))
})
