/**
 * The SQLite rate-limit store: its counts against the memory adapter's on the same decisions
 * (rollups, late events into compacted days, the hot range, a reopen of the file), the decisions
 * it keeps in full and for how long, override hits, and verifications on the same file.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import * as Aggregation from "@keymeter/core/Aggregation"
import type { AggregationQuery, AggregationResult } from "@keymeter/core/Aggregation"
import type { RatelimitEvent } from "@keymeter/core/RatelimitEvent"
import { Sources } from "@keymeter/core/RatelimitEvent"
import { RatelimitStore, VerificationStore } from "@keymeter/core/Storage"
import * as Time from "@keymeter/core/Time"
import * as Verification from "@keymeter/core/Verification"
import { MemoryRatelimitStore } from "@keymeter/storage-memory"
import { SqliteStorage, SqliteVerificationStore } from "@keymeter/storage-sqlite"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as TestClock from "effect/TestClock"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const { DAY, HOUR } = Time
const FROM = Date.parse("2024-12-27T00:00:00Z")
const TO = Date.parse("2025-02-03T00:00:00Z")
const WS = "ws_a"
const OTHER_WS = "ws_b"
const identifiers = ["user_1", "user_2", "user_3", "ip:10.0.0.1", "é", "user_1 "]
const overrides = ["rlor_1", "rlor_2", "rlor_3"]

const tempFile = () => join(mkdtempSync(join(tmpdir(), "keymeter-ratelimits-")), "k.db")

const decisionArb: FastCheck.Arbitrary<RatelimitEvent> = FastCheck.record({
  time: FastCheck.oneof(
    FastCheck.integer({ min: FROM, max: TO }),
    FastCheck.integer({ min: FROM / HOUR, max: TO / HOUR }).map((h) => h * HOUR)
  ),
  workspaceId: FastCheck.constantFrom(WS, WS, WS, OTHER_WS),
  namespaceId: FastCheck.constantFrom("ns_1", "ns_1", "ns_1", "ns_2"),
  identifier: FastCheck.constantFrom(...identifiers),
  passed: FastCheck.boolean(),
  limit: FastCheck.integer({ min: 0, max: 1_000 }),
  duration: FastCheck.integer({ min: 1_000, max: DAY }),
  remaining: FastCheck.integer({ min: 0, max: 1_000 }),
  cost: FastCheck.integer({ min: 0, max: 10 }),
  overrideId: FastCheck.option(FastCheck.constantFrom(...overrides), { nil: undefined }),
  source: FastCheck.constantFrom(...Sources),
  latency: FastCheck.double({ min: 0, max: 100, noNaN: true }),
  detail: FastCheck.constantFrom(undefined, "{\"meta\":{\"plan\":\"pro\"}}", "{\"resources\":[{\"id\":\"é\"}]}")
})

const timeArb = FastCheck.integer({ min: FROM - 2 * DAY, max: TO + 2 * DAY }).map(Time.truncateToHour)

/** Queries in the projection's terms, as `RatelimitQuery` maps them (no tags, no ordering). */
const queryArb: FastCheck.Arbitrary<AggregationQuery> = FastCheck.record({
  workspaceId: FastCheck.constantFrom(WS, WS, WS, OTHER_WS),
  apiId: FastCheck.constantFrom("ns_1", "ns_1", "ns_2", "ns_none"),
  keyIds: FastCheck.option(FastCheck.subarray([...identifiers, "unknown"], { minLength: 1 }), { nil: undefined }),
  externalId: FastCheck.option(FastCheck.constantFrom(...overrides, "nope"), { nil: undefined }),
  window: FastCheck.tuple(FastCheck.option(timeArb, { nil: undefined }), timeArb),
  timeUnit: FastCheck.constantFrom(undefined, "hour" as const, "day" as const, "month" as const),
  groupByKey: FastCheck.boolean(),
  groupByIdentity: FastCheck.boolean()
}).map(({ keyIds, window: [a, b], ...query }) =>
  Aggregation.makeQuery({
    ...query,
    keyIds: keyIds ?? [],
    start: a === undefined ? undefined : Math.min(a, b),
    end: a === undefined ? b : Math.max(a, b),
    maxRows: 1_000_000
  })
)

/** An answer as sorted rows (or the summed counters, for a query that groups by nothing). */
const rowsOf = (query: AggregationQuery, result: AggregationResult) => {
  const counts = (row: number) =>
    Array.from(result.counts.subarray(row * Aggregation.OUTCOMES, (row + 1) * Aggregation.OUTCOMES))
  const rows = Array.from({ length: result.size }, (_, row) => counts(row))
  if (query.timeUnit === undefined && !query.groupByKey && !query.groupByIdentity) {
    return rows.reduce((sum, row) => sum.map((n, o) => n + row[o]!), new Array<number>(Aggregation.OUTCOMES).fill(0))
  }
  return rows.map((row, r) => JSON.stringify([result.time?.[r], result.keyId?.[r], result.identity?.[r], row])).sort()
}

const appendInBatches = (events: ReadonlyArray<RatelimitEvent>, batch = 97) =>
  Effect.flatMap(RatelimitStore, (store) =>
    Effect.forEach(
      Array.from({ length: Math.ceil(events.length / batch) }, (_, i) => events.slice(i * batch, (i + 1) * batch)),
      (slice) => store.append(slice),
      { discard: true }
    ))

/** The decisions a store keeping every one answers: newest first, ties the later arrival first. */
const latest = (
  all: ReadonlyArray<RatelimitEvent>,
  workspaceId: string,
  namespaceId: string,
  limit: number,
  identifier?: string
) =>
  all.map((event, arrival) => ({ event, arrival }))
    .filter(({ event }) =>
      event.workspaceId === workspaceId && event.namespaceId === namespaceId &&
      (identifier === undefined || event.identifier === identifier)
    )
    .sort((a, b) => b.event.time - a.event.time || b.arrival - a.arrival)
    .slice(0, limit)
    .map(({ event }) => event)

/** Each override's hits over `all`, in `workspaceId`. */
const hitsOf = (all: ReadonlyArray<RatelimitEvent>, workspaceId: string) => {
  const out = new Map<string, { hits: number; lastHitAt: number }>()
  for (const event of all) {
    if (event.workspaceId !== workspaceId || event.overrideId === undefined) continue
    const counted = out.get(event.overrideId)
    out.set(event.overrideId, {
      hits: (counted?.hits ?? 0) + 1,
      lastHitAt: Math.max(counted?.lastHitAt ?? -Infinity, event.time)
    })
  }
  return out
}

const decision = (time: number, identifier: string, fields: Partial<RatelimitEvent> = {}): RatelimitEvent => ({
  time,
  workspaceId: WS,
  namespaceId: "ns_1",
  identifier,
  passed: true,
  limit: 10,
  duration: 60_000,
  remaining: 9,
  cost: 1,
  overrideId: undefined,
  source: "limit",
  latency: 0.5,
  detail: undefined,
  ...fields
})

const total = (result: AggregationResult) => result.counts.reduce((a, b) => a + b, 0)

/** Counters with `valid` and `rateLimited` set, the others 0. */
const counters = (valid: number, rateLimited: number) =>
  Verification.Outcomes.map((outcome) => outcome === "valid" ? valid : outcome === "rateLimited" ? rateLimited : 0)

const countQuery = (fields: Partial<AggregationQuery> = {}) =>
  Aggregation.makeQuery({ workspaceId: WS, apiId: "ns_1", end: Date.parse("2100-01-01"), maxRows: 10_000, ...fields })

describe("SqliteRatelimitStore", () => {
  it.effect(
    "counts as the memory adapter does, late decisions and a reopen included; decisions and hits survive it",
    () =>
      Effect.gen(function*() {
        const first = FastCheck.sample(decisionArb, { numRuns: 3_000, seed: 41 })
        // After the reopen: decisions of every day, so most land in days compacted already.
        const later = FastCheck.sample(decisionArb, { numRuns: 600, seed: 42 })
        const all = [...first, ...later]
        const queries = FastCheck.sample(queryArb, { numRuns: 200, seed: 43 })
        const memory = MemoryRatelimitStore.make()
        yield* memory.append(all)

        const filename = tempFile()
        const open = (hotDays: number) => SqliteStorage.layer({ filename, hotDays, compaction: { batchDays: 1 } })
        const sameCounts = Effect.gen(function*() {
          const store = yield* RatelimitStore
          for (const query of queries) {
            const expected = rowsOf(query, yield* memory.aggregate(query))
            expect(rowsOf(query, yield* store.aggregate(query)), JSON.stringify(query)).toEqual(expected)
          }
        })

        yield* appendInBatches(first).pipe(Effect.provide(open(0)))
        // Reopened without a hot range: the rollups answer everything.
        yield* Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const compacted = (yield* sql.unsafe("SELECT min(compacted_through) FROM rl_partitions").values)[0]![0]
          expect(later.filter((event) => event.time < ((compacted as number) + 1) * DAY).length).toBeGreaterThan(100)
          yield* appendInBatches(later)
          yield* sameCounts
        }).pipe(Effect.provide(open(0)))
        // Reopened with a hot range of 10 days: windows inside it are answered from memory.
        yield* Effect.gen(function*() {
          yield* Effect.flatMap(SqliteVerificationStore.HotRange, (hotRange) => hotRange.loaded)
          expect(yield* Effect.flatMap(SqliteVerificationStore.HotRange, (hotRange) => hotRange.events))
            .toBeGreaterThan(0)
          yield* sameCounts
          const store = yield* RatelimitStore
          for (const workspaceId of [WS, OTHER_WS]) {
            const expected = hitsOf(all, workspaceId)
            expect(yield* store.overrideHits(workspaceId, [...overrides, "nope"])).toEqual(expected)
            expect(yield* memory.overrideHits(workspaceId, overrides)).toEqual(expected)
            for (const namespaceId of ["ns_1", "ns_2", "ns_none"]) {
              for (const identifier of [undefined, ...identifiers, "unknown"]) {
                const answer = yield* store.decisions(workspaceId, namespaceId, { limit: 7, identifier })
                expect(answer, `${workspaceId}/${namespaceId}/${identifier}`).toEqual(
                  latest(all, workspaceId, namespaceId, 7, identifier)
                )
              }
            }
          }
          // Every decision of an identifier, through all its days.
          const every = yield* store.decisions(WS, "ns_1", { limit: 10_000, identifier: "user_2" })
          expect(every.length).toBeGreaterThan(200)
          expect(every).toEqual(latest(all, WS, "ns_1", 10_000, "user_2"))
        }).pipe(Effect.provide(open(10)))
      }),
    { timeout: 120_000 }
  )

  it.effect("answers a namespace's decisions newest first, of one identifier when asked", () =>
    Effect.gen(function*() {
      const store = yield* RatelimitStore
      const T0 = Date.parse("2025-03-01T12:00:00Z")
      const decisions = [
        decision(T0, "alice", { passed: false, remaining: 0, overrideId: "rlor_x", source: "verifyKey" }),
        decision(T0 + 1_000, "bob", { detail: "{\"meta\":{\"a\":1}}", latency: 1.25 }),
        // The same time as the first: the later arrival first.
        decision(T0, "bob", { cost: 3, source: "multiLimit" }),
        // Days earlier, and late.
        decision(T0 - 5 * DAY, "alice", { limit: 100 }),
        decision(T0 + 2_000, "alice", { namespaceId: "ns_2" }),
        decision(T0 + 3_000, "alice", { workspaceId: OTHER_WS })
      ]
      yield* store.append(decisions.slice(0, 3))
      yield* store.append(decisions.slice(3))
      yield* store.append([decision(T0 + 2 * DAY, "carol")])

      const [alice, bobLater, bobEarlier, aliceEarlier] = decisions
      expect(yield* store.decisions(WS, "ns_1", { limit: 10 })).toEqual([
        decision(T0 + 2 * DAY, "carol"),
        bobLater,
        bobEarlier,
        alice,
        aliceEarlier
      ])
      expect(yield* store.decisions(WS, "ns_1", { limit: 2 })).toEqual([decision(T0 + 2 * DAY, "carol"), bobLater])
      expect(yield* store.decisions(WS, "ns_1", { limit: 10, identifier: "alice" })).toEqual([alice, aliceEarlier])
      expect(yield* store.decisions(WS, "ns_1", { limit: 1, identifier: "alice" })).toEqual([alice])
      expect(yield* store.decisions(WS, "ns_1", { limit: 10, identifier: "nobody" })).toEqual([])
      expect(yield* store.decisions(WS, "ns_none", { limit: 10 })).toEqual([])
      expect(yield* store.decisions(WS, "ns_1", { limit: 0 })).toEqual([])
      expect(yield* store.decisions(OTHER_WS, "ns_1", { limit: 10, identifier: "alice" })).toEqual([decisions[5]])

      // An identifier with a crowded hour (read alone) and sparse ones before it (read together).
      const crowd = [
        ...Array.from({ length: 30 }, (_, i) => decision(T0 - (i + 2) * HOUR, "crowd", { remaining: i })),
        ...Array.from({ length: 1_500 }, (_, i) => decision(T0 + 3 * HOUR + i, "crowd", { remaining: i }))
      ]
      yield* store.append(crowd)
      const newestFirst = [...crowd].sort((a, b) => b.time - a.time)
      for (const limit of [1, 1_499, 1_500, 1_510, 2_000]) {
        expect(yield* store.decisions(WS, "ns_1", { limit, identifier: "crowd" })).toEqual(newestFirst.slice(0, limit))
      }
    }).pipe(Effect.provide(SqliteStorage.layer({ filename: ":memory:" }))))

  it.effect("keeps decisions in full for decisionDays, and their counts for good", () =>
    Effect.gen(function*() {
      const T0 = Date.parse("2025-03-01T00:00:00Z")
      // Before the writers start: each idle wait (here longer than any step of the test clock) is a
      // timer that the test clock would otherwise fire once per idle period on its way.
      yield* TestClock.setTime(T0)
      yield* Effect.gen(function*() {
        const store = yield* RatelimitStore
        const sql = yield* SqlClient.SqlClient
        const held = Effect.map(sql.unsafe("SELECT count(*) FROM rl_decisions").values, (rows) => rows[0]![0])
        const identifiersHeld = Effect.map(
          store.decisions(WS, "ns_1", { limit: 100 }),
          (decisions) => decisions.map((d) => d.identifier)
        )
        // What SQL analytics scan: the decisions held, and no more.
        const scanned = Effect.map(
          store.scan!({ workspaceId: WS, within: undefined, from: T0 - 50 * DAY, to: T0 + 50 * DAY, maxRows: 100 }),
          (batches) =>
            batches.flatMap((b) => Array.from(b.identifier.codes, (code) => b.identifier.values[code]!)).sort()
        )
        // Past its days already when it comes: counted, never held.
        yield* store.append([decision(T0 - 40 * DAY, "a"), decision(T0 - 10 * DAY, "b"), decision(T0 - HOUR, "c")])
        expect(yield* held).toBe(2)
        expect(yield* identifiersHeld).toEqual(["c", "b"])
        expect(yield* scanned).toEqual(["b", "c"])

        // 25 days on, "b" is 35 days old: past its days, it is scanned no more even before a sweep
        // deletes it; the writer's next sweep does (the second append's commit comes after the first
        // one's sweep).
        yield* TestClock.adjust(25 * DAY)
        expect(yield* held).toBe(2)
        expect(yield* scanned).toEqual(["c"])
        yield* store.append([decision(T0 + 25 * DAY - 1, "d")])
        yield* store.append([decision(T0 + 25 * DAY, "e")])
        expect(yield* held).toBe(3)
        expect(yield* identifiersHeld).toEqual(["e", "d", "c"])
        expect(yield* scanned).toEqual(["c", "d", "e"])
        expect(yield* store.decisions(WS, "ns_1", { limit: 100, identifier: "b" })).toEqual([])
        const counts = yield* store.aggregate(countQuery({ start: T0 - 50 * DAY, groupByKey: true }))
        expect(total(counts)).toBe(5)
        expect([...counts.keyId!].sort()).toEqual(["a", "b", "c", "d", "e"])
      }).pipe(
        Effect.provide(
          SqliteStorage.layer({ filename: ":memory:", decisionDays: 30, compaction: { idleMs: 100 * DAY } })
        )
      )
    }))

  it.effect("scans page by page: every decision once, across pages whose edges share a millisecond", () =>
    Effect.gen(function*() {
      const store = yield* RatelimitStore
      const T0 = Date.parse("2025-03-01T00:00:00Z")
      // 40,000 decisions of two namespaces, 1,000 to a millisecond: pages of 16,384 end mid-millisecond.
      const all = Array.from(
        { length: 40_000 },
        (_, i) => decision(T0 + Math.floor(i / 1000), `u${i}`, { namespaceId: i % 4 === 0 ? "ns_2" : "ns_1" })
      )
      yield* store.append(all)
      const scope = { workspaceId: WS, within: undefined, from: T0, to: T0 + DAY, maxRows: 40_000 }
      const batches = yield* store.scan!(scope)
      expect(batches.length).toBeGreaterThan(2)
      const seen = batches.flatMap((b) =>
        Array.from({ length: b.length }, (_, i) => b.identifier.values[b.identifier.codes[i]!]!)
      )
      expect(seen).toHaveLength(40_000)
      expect(new Set(seen).size).toBe(40_000)
      // One namespace, a window that starts and ends inside runs of equal times.
      const [from, to] = [T0 + 3, T0 + 37]
      const ns2 = yield* store.scan!({ ...scope, within: ["ns_2"], from, to })
      expect(ns2.reduce((n, b) => n + b.length, 0)).toBe(
        all.filter((d) => d.namespaceId === "ns_2" && d.time >= from && d.time < to).length
      )
      // One row past the budget fails the scan.
      expect(Either.isLeft(yield* Effect.either(store.scan!({ ...scope, maxRows: 39_999 })))).toBe(true)
    }).pipe(Effect.provide(SqliteStorage.layer({ filename: ":memory:" }))))

  it.effect("counts each override's hits and last hit, per workspace, across batches", () =>
    Effect.gen(function*() {
      const store = yield* RatelimitStore
      const T0 = Date.parse("2025-03-01T00:00:00Z")
      const before = store.revision!()
      yield* store.append([
        decision(T0 + 5, "u1", { overrideId: "rlor_a" }),
        decision(T0 + 1, "u2", { overrideId: "rlor_a", passed: false }),
        decision(T0 + 3, "u1", { overrideId: "rlor_b" }),
        decision(T0 + 2, "u1")
      ])
      expect(store.revision!()).toBeGreaterThan(before)
      yield* store.append([decision(T0, "u3", { overrideId: "rlor_a" })])
      yield* store.append([decision(T0 + 9, "u1", { overrideId: "rlor_a", workspaceId: OTHER_WS })])
      expect(yield* store.overrideHits(WS, ["rlor_a", "rlor_b", "rlor_c"])).toEqual(
        new Map([["rlor_a", { hits: 3, lastHitAt: T0 + 5 }], ["rlor_b", { hits: 1, lastHitAt: T0 + 3 }]])
      )
      expect(yield* store.overrideHits(OTHER_WS, ["rlor_a"])).toEqual(
        new Map([["rlor_a", { hits: 1, lastHitAt: T0 + 9 }]])
      )
      expect(yield* store.overrideHits(WS, [])).toEqual(new Map())
      // The override as the projection's identity: counts of its decisions only.
      const byOverride = yield* store.aggregate(countQuery({ groupByIdentity: true }))
      expect(byOverride.identity).toEqual([{ id: "rlor_a", externalId: "rlor_a" }, {
        id: "rlor_b",
        externalId: "rlor_b"
      }])
      expect(rowsOf(countQuery({ externalId: "rlor_a" }), yield* store.aggregate(countQuery({ externalId: "rlor_a" }))))
        .toEqual(counters(2, 1))
    }).pipe(Effect.provide(SqliteStorage.layer({ filename: ":memory:" }))))

  it.live("stores a failed batch's counts, decisions and hits not at all, and the writer carries on", () =>
    Effect.gen(function*() {
      const store = yield* RatelimitStore
      const sql = yield* SqlClient.SqlClient
      const T0 = Date.now() - HOUR
      // Any transaction that stores the identifier "poison" fails.
      yield* sql.unsafe(
        "CREATE TEMP TRIGGER poison BEFORE INSERT ON rl_keys WHEN NEW.value = 'poison' BEGIN SELECT RAISE(ABORT, 'poisoned'); END"
      )
      const failed = yield* Effect.either(
        store.append([decision(T0, "fresh", { overrideId: "rlor_a" }), decision(T0, "poison")])
      )
      expect(Either.isLeft(failed)).toBe(true)
      expect(yield* store.decisions(WS, "ns_1", { limit: 10 })).toEqual([])
      const scope = { workspaceId: WS, within: undefined, from: T0 - DAY, to: T0 + DAY, maxRows: 10 }
      expect(yield* store.scan!(scope)).toEqual([])
      expect(yield* store.overrideHits(WS, ["rlor_a"])).toEqual(new Map())
      expect(total(yield* store.aggregate(countQuery()))).toBe(0)
      // Its dictionary codes were forgotten: the same identifiers store fine now.
      yield* sql.unsafe("DROP TRIGGER poison")
      yield* store.append([decision(T0, "fresh", { overrideId: "rlor_a" }), decision(T0 + 1, "poison")])
      expect((yield* store.decisions(WS, "ns_1", { limit: 10 })).map((d) => d.identifier)).toEqual(["poison", "fresh"])
      const [batch] = yield* store.scan!(scope)
      expect(Array.from(batch!.identifier.codes, (code) => batch!.identifier.values[code])).toEqual(["fresh", "poison"])
      expect(Array.from(batch!.overrideId.codes, (code) => batch!.overrideId.values[code])).toEqual(["rlor_a", ""])
      expect(yield* store.overrideHits(WS, ["rlor_a"])).toEqual(new Map([["rlor_a", { hits: 1, lastHitAt: T0 }]]))
      expect(total(yield* store.aggregate(countQuery()))).toBe(2)
    }).pipe(Effect.provide(SqliteStorage.layer({ filename: ":memory:" }))))

  it.live("leaves verifications on the same file as they are, both writers busy at once", () =>
    Effect.gen(function*() {
      const filename = tempFile()
      const T0 = Date.parse("2025-03-01T00:00:00Z")
      const rounds = 20
      const perRound = 50
      // An api and a namespace of the same id, keys and identifiers of the same names.
      const verificationsOf = (round: number) =>
        Array.from({ length: perRound }, (_, i) =>
          Verification.make({
            time: T0 + (round * perRound + i) * 60_000,
            workspaceId: WS,
            apiId: "shared",
            keyId: `k${i % 5}`,
            outcome: "valid"
          }))
      const decisionsOf = (round: number) =>
        Array.from({ length: perRound }, (_, i) =>
          decision(T0 + (round * perRound + i) * 60_000, `k${i % 5}`, { namespaceId: "shared", passed: false }))
      const query = countQuery({ apiId: "shared", groupByKey: true })
      const check = Effect.gen(function*() {
        const verifications = yield* (yield* VerificationStore).aggregate(query)
        const decisions = yield* (yield* RatelimitStore).aggregate(query)
        const perKey = rounds * perRound / 5
        expect(rowsOf(query, verifications)).toEqual(
          ["k0", "k1", "k2", "k3", "k4"].map((k) =>
            JSON.stringify([undefined, k, undefined, counters(perKey, 0)])
          )
        )
        expect(rowsOf(query, decisions)).toEqual(
          ["k0", "k1", "k2", "k3", "k4"].map((k) => JSON.stringify([undefined, k, undefined, counters(0, perKey)]))
        )
        const sql = yield* SqlClient.SqlClient
        const [[partitions, keys, identities, tagsets]] = yield* sql.unsafe(
          "SELECT (SELECT count(*) FROM v_partitions), (SELECT count(*) FROM v_keys), " +
            "(SELECT count(*) FROM v_identities), (SELECT count(*) FROM v_tagsets)"
        ).values
        expect([partitions, keys, identities, tagsets]).toEqual([1, 5, 0, 1])
      })

      yield* Effect.gen(function*() {
        const verifications = yield* VerificationStore
        const ratelimits = yield* RatelimitStore
        yield* Effect.all(
          Array.from({ length: rounds }, (_, round) => [
            verifications.append(verificationsOf(round)),
            ratelimits.append(decisionsOf(round))
          ]).flat(),
          { concurrency: "unbounded", discard: true }
        )
        yield* check
      }).pipe(Effect.provide(SqliteStorage.layer({ filename })))
      yield* check.pipe(Effect.provide(SqliteStorage.layer({ filename })))
    }))
})
