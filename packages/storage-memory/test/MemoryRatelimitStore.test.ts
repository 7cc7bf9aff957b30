import { describe, expect, it } from "@effect/vitest"
import type { RatelimitColumns, ScanScope } from "@keymeter/core/EventScan"
import type { RatelimitEvent } from "@keymeter/core/RatelimitEvent"
import { RatelimitStore } from "@keymeter/core/Storage"
import { MemoryRatelimitStore } from "@keymeter/storage-memory"
import * as Effect from "effect/Effect"
import { CHUNK_ROWS, FIRST_ROWS } from "../src/internal/DecisionColumns.js"

const HOUR = 3_600_000

const decision = (i: number, fields: Partial<RatelimitEvent> = {}): RatelimitEvent => ({
  time: 1_700_000_000_000 + i * 1_000,
  workspaceId: "ws",
  namespaceId: "ns",
  identifier: `id_${i % 7}`,
  passed: i % 3 !== 0,
  limit: 10,
  duration: 60_000,
  remaining: 1,
  cost: 1,
  overrideId: i % 5 === 0 ? `rlor_${i % 2}` : undefined,
  source: "limit",
  latency: (i % 1000) / 1000,
  detail: undefined,
  ...fields
})

/** A scan's rows, decoded, in a stable order. */
const rowsOf = (batches: ReadonlyArray<RatelimitColumns>) => {
  const out: Array<[number, string, string, number, number, string]> = []
  for (const b of batches) {
    for (let i = 0; i < b.length; i++) {
      out.push([
        b.time[i]!,
        b.namespaceId.values[b.namespaceId.codes[i]!]!,
        b.identifier.values[b.identifier.codes[i]!]!,
        b.passed[i]!,
        b.latency[i]!,
        b.overrideId.values[b.overrideId.codes[i]!]!
      ])
    }
  }
  return out.sort((a, b) => a[0] - b[0] || (a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0))
}

const rowOf = (d: RatelimitEvent) =>
  [d.time, d.namespaceId, d.identifier, d.passed ? 1 : 0, d.latency, d.overrideId ?? ""] as const

const naive = (decisions: ReadonlyArray<RatelimitEvent>, scope: ScanScope) =>
  decisions.filter((d) =>
    d.workspaceId === scope.workspaceId && (scope.within === undefined || scope.within.includes(d.namespaceId)) &&
    d.time >= scope.from && d.time < scope.to
  ).map(rowOf).sort((a, b) => a[0] - b[0] || (a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0))

const scope = (fields: Partial<ScanScope> = {}): ScanScope => ({
  workspaceId: "ws",
  within: undefined,
  from: -Infinity,
  to: Infinity,
  maxRows: 1_000_000,
  ...fields
})

const run = <A, E>(effect: Effect.Effect<A, E, RatelimitStore>) =>
  Effect.provide(effect, MemoryRatelimitStore.layerWith({ heldDecisions: 10 }))

// The conformance suite checks scans against a naive filter on random data; these check the
// columns' own mechanics: chunks growing and filling, codes widening, views that stay put.
describe("MemoryRatelimitStore scan", () => {
  it.effect("hands every decision over chunks that grow, fill and follow, with edges filtered", () =>
    run(Effect.gen(function*() {
      const store = yield* RatelimitStore
      // Arrival order is not time order: every 10th decision is an hour late.
      const decisions = Array.from(
        { length: 2 * CHUNK_ROWS + 1_000 },
        (_, i) => decision(i, i % 10 === 0 ? { time: decision(i).time - HOUR } : {})
      )
      for (let i = 0; i < decisions.length; i += 9_973) yield* store.append(decisions.slice(i, i + 9_973))
      const all = yield* store.scan!(scope())
      expect(all.reduce((n, b) => n + b.length, 0)).toBe(decisions.length)
      expect(rowsOf(all)).toEqual(naive(decisions, scope()))
      const t0 = decisions[0]!.time
      for (
        const window of [
          scope({ from: t0 + 1_000.5, to: t0 + 70_000_000 }),
          scope({ from: t0 + 65_536_000, to: t0 + 65_537_000 }),
          scope({ from: t0 - HOUR, to: t0 }),
          scope({ from: t0 + 5_000, to: t0 + 5_000 }),
          scope({ from: t0 + 10_000, to: t0 })
        ]
      ) {
        expect(rowsOf(yield* store.scan!(window))).toEqual(naive(decisions, window))
      }
    })))

  it.effect("widens codes past 255 and 65,535 values, keeping those written before", () =>
    run(Effect.gen(function*() {
      const store = yield* RatelimitStore
      const decisions = Array.from({ length: 70_000 }, (_, i) =>
        decision(i, { identifier: `u${i}`, overrideId: i % 2 === 0 ? `rlor_${i % 600}` : undefined }))
      for (let i = 0; i < decisions.length; i += 10_000) {
        yield* store.append(decisions.slice(i, i + 10_000))
      }
      const got = yield* store.scan!(scope())
      expect(rowsOf(got)).toEqual(naive(decisions, scope()))
      expect(got.some((b) =>
        b.identifier.codes instanceof Uint32Array
      )).toBe(true)
      expect(got.some((b) => b.overrideId.codes instanceof Uint16Array)).toBe(true)
    })))

  it.effect("hands views that later appends leave as they were", () =>
    run(Effect.gen(function*() {
      const store = yield* RatelimitStore
      const first = Array.from({ length: FIRST_ROWS - 1 }, (_, i) => decision(i))
      yield* store.append(first)
      const before = yield* store.scan!(scope())
      // Fills the first chunk, grows it, and brings new identifiers and overrides.
      yield* store.append(
        Array.from({ length: 300 }, (_, i) => decision(i, { identifier: `new_${i}`, overrideId: `rlor_new_${i}` }))
      )
      expect(before.reduce((n, b) => n + b.length, 0)).toBe(first.length)
      expect(rowsOf(before)).toEqual(naive(first, scope()))
    })))

  it.effect("keeps latency to the microsecond, and to its cap", () =>
    run(Effect.gen(function*() {
      const store = yield* RatelimitStore
      const latencies = [0, 0.001, 0.123, 1.5, 12.345, 4_294_967.295, 10_000_000]
      yield* store.append(latencies.map((latency, i) => decision(i, { latency })))
      const [batch] = yield* store.scan!(scope())
      expect(Array.from(batch!.latency)).toEqual([...latencies.slice(0, -1), 4_294_967.295])
    })))

  it.effect("reads only the scope's workspace and namespaces, and fails past maxRows", () =>
    run(Effect.gen(function*() {
      const store = yield* RatelimitStore
      const decisions = Array.from(
        { length: 300 },
        (_, i) => decision(i, { workspaceId: i % 4 === 0 ? "other" : "ws", namespaceId: `ns_${i % 3}` })
      )
      yield* store.append(decisions)
      for (
        const s of [
          scope({ within: ["ns_1"] }),
          scope({ within: ["ns_0", "ns_2", "ns_2", "ns_none"] }),
          scope({ within: [] }),
          scope({ workspaceId: "nobody" }),
          scope({ workspaceId: "other" })
        ]
      ) {
        const got = yield* store.scan!(s)
        expect(rowsOf(got)).toEqual(naive(decisions, s))
        for (const b of got) expect(b.namespaceId.values.every((ns) => s.within?.includes(ns) ?? true)).toBe(true)
      }
      const inScope = naive(decisions, scope()).length
      expect((yield* store.scan!(scope({ maxRows: inScope }))).reduce((n, b) => n + b.length, 0)).toBe(inScope)
      const error = yield* Effect.flip(store.scan!(scope({ maxRows: inScope - 1 })))
      expect(error._tag).toBe("QueryTooLarge")
      expect(error.message).toContain(String(inScope - 1))
    })))
})

describe("MemoryRatelimitStore held decisions", () => {
  it.effect("holds the latest arrivals only (10 here), every field, newest first", () =>
    run(Effect.gen(function*() {
      const store = yield* RatelimitStore
      const decisions = Array.from({ length: 27 }, (_, i) =>
        decision(i, {
          namespaceId: i % 2 === 0 ? "ns" : "ns_b",
          source: i % 3 === 0 ? "verifyKey" : "limit",
          remaining: i,
          cost: 1 + (i % 4),
          detail: i % 4 === 0 ? `{"meta":{"i":${i}}}` : undefined
        }))
      for (let i = 0; i < decisions.length; i += 4) yield* store.append(decisions.slice(i, i + 4))
      const newestFirst = (list: ReadonlyArray<RatelimitEvent>) => [...list].sort((a, b) => b.time - a.time)
      const held = decisions.slice(-10)
      for (const namespaceId of ["ns", "ns_b"]) {
        const mine = held.filter((d) => d.namespaceId === namespaceId)
        expect(yield* store.decisions("ws", namespaceId, { limit: 100 })).toEqual(newestFirst(mine))
        expect(yield* store.decisions("ws", namespaceId, { limit: 2 })).toEqual(newestFirst(mine).slice(0, 2))
        expect(yield* store.decisions("ws", namespaceId, { limit: 100, identifier: "id_3" })).toEqual(
          newestFirst(mine.filter((d) => d.identifier === "id_3"))
        )
      }
      expect(yield* store.decisions("ws", "ns_none", { limit: 100 })).toEqual([])
      expect(yield* store.decisions("ws_none", "ns", { limit: 100 })).toEqual([])
    })))
})
