import { ClickHouseLogLevel, createClient } from "@clickhouse/client"
import { describe, expect, it, layer } from "@effect/vitest"
import * as Aggregation from "@keymeter/core/Aggregation"
import type { AggregationQuery, AggregationResult } from "@keymeter/core/Aggregation"
import type { RatelimitColumns, ScanScope } from "@keymeter/core/EventScan"
import type { RatelimitEvent } from "@keymeter/core/RatelimitEvent"
import { Sources } from "@keymeter/core/RatelimitEvent"
import type { RatelimitStore } from "@keymeter/core/Storage"
import * as Verification from "@keymeter/core/Verification"
import { ClickhouseRatelimitStore, ClickhouseVerificationStore } from "@keymeter/storage-clickhouse"
import { MemoryRatelimitStore } from "@keymeter/storage-memory"
import { ClickhouseTestServer } from "@keymeter/testing"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as Layer from "effect/Layer"

const HOUR = 3_600_000
const DAY = 24 * HOUR
const T0 = Date.parse("2025-01-01T00:00:00Z")
/** Decisions fall in [T0, T0 + SPAN): three months, so every time unit has several buckets. */
const SPAN = 70 * DAY

const NAMESPACES = ["ns_1", "ns_2"] as const
const IDENTIFIERS = ["u1", "u2", "a,b", "é", "it's"] as const
const OVERRIDES = ["or_1", "or_2"] as const

const decision = (fields: Partial<RatelimitEvent> & Pick<RatelimitEvent, "time">): RatelimitEvent => ({
  workspaceId: "ws",
  namespaceId: "ns_1",
  identifier: "u1",
  passed: true,
  limit: 10,
  duration: 60_000,
  remaining: 9,
  cost: 1,
  overrideId: undefined,
  source: "limit",
  latency: 0.25,
  detail: undefined,
  ...fields
})

/** Decisions of "ws" mostly, some of "ws_other" (the property prefixes both with its run's name). */
const decisionArb = FastCheck.record({
  // Some on an hour's or a day's first millisecond, where buckets meet.
  time: FastCheck.oneof(
    FastCheck.integer({ min: T0, max: T0 + SPAN - 1 }),
    FastCheck.integer({ min: 0, max: SPAN / HOUR - 1 }).map((h) => T0 + h * HOUR),
    FastCheck.integer({ min: 0, max: SPAN / DAY - 1 }).map((d) => T0 + d * DAY - 1)
  ),
  workspaceId: FastCheck.constantFrom("ws", "ws", "ws_other"),
  namespaceId: FastCheck.constantFrom(...NAMESPACES),
  identifier: FastCheck.constantFrom(...IDENTIFIERS),
  passed: FastCheck.boolean(),
  overrideId: FastCheck.constantFrom(undefined, ...OVERRIDES),
  limit: FastCheck.integer({ min: 0, max: 1_000_000 }),
  duration: FastCheck.integer({ min: 1_000, max: DAY }),
  remaining: FastCheck.integer({ min: 0, max: 1_000 }),
  cost: FastCheck.integer({ min: 0, max: 10 }),
  source: FastCheck.constantFrom(...Sources),
  latency: FastCheck.integer({ min: 0, max: 50_000 }).map((micros) => micros / 1000),
  detail: FastCheck.constantFrom(undefined, "{\"meta\":{\"a\":\"b\"}}")
})

/** Hour-aligned windows (core truncates them so) around the decisions' span, open or bounded at the start. */
const hourArb = FastCheck.integer({ min: -3 * 24, max: SPAN / HOUR + 3 * 24 }).map((h) => T0 + h * HOUR)

const queryArb = FastCheck.record({
  apiId: FastCheck.constantFrom(...NAMESPACES),
  keyIds: FastCheck.oneof(
    FastCheck.constant<Array<string>>([]),
    FastCheck.subarray([...IDENTIFIERS, "unknown"], { minLength: 1 })
  ),
  externalId: FastCheck.constantFrom(undefined, undefined, ...OVERRIDES, "or_none"),
  window: FastCheck.tuple(FastCheck.option(hourArb, { nil: undefined }), hourArb),
  timeUnit: FastCheck.constantFrom(undefined, "hour" as const, "day" as const, "month" as const),
  groupByKey: FastCheck.boolean(),
  groupByIdentity: FastCheck.boolean()
}).map(({ window: [a, b], ...q }): AggregationQuery =>
  Aggregation.makeQuery({
    ...q,
    workspaceId: "ws",
    start: a === undefined ? undefined : Math.min(a, b),
    end: a === undefined ? b : Math.max(a, b),
    maxRows: 100_000
  })
)

/**
 * A result's non-empty rows, each as one comparable string, sorted (adapters answer rows in no set
 * order). The contract has one row per
 * non-empty (bucket, group) pair; the memory engine answers an ungrouped query that matched
 * nothing with one all-zero row, which core zero-fills alike, so such a row is not data.
 */
const rows = (result: AggregationResult) =>
  Array.from({ length: result.size }, (_, i) => i).filter((i) =>
    result.counts.subarray(i * Aggregation.OUTCOMES, (i + 1) * Aggregation.OUTCOMES).some((n) => n !== 0)
  ).map((i) =>
    JSON.stringify([
      result.time?.[i] ?? null,
      result.keyId?.[i] ?? null,
      result.identity === undefined ? null : [result.identity[i]!.id, result.identity[i]!.externalId],
      result.tags?.[i] ?? null,
      Array.from(result.counts.subarray(i * Aggregation.OUTCOMES, (i + 1) * Aggregation.OUTCOMES))
    ])
  ).sort()

const total = (result: AggregationResult) => result.counts.reduce((a, b) => a + b, 0)

/** A scan's rows, decoded, each as one comparable string, sorted. */
const scanned = (batches: ReadonlyArray<RatelimitColumns>) =>
  batches.flatMap((b) =>
    Array.from({ length: b.length }, (_, i) =>
      JSON.stringify([
        b.time[i],
        b.namespaceId.values[b.namespaceId.codes[i]!],
        b.identifier.values[b.identifier.codes[i]!],
        b.passed[i],
        b.latency[i],
        b.overrideId.values[b.overrideId.codes[i]!]
      ]))
  ).sort()

const select = (database: string, text: string) =>
  Effect.promise(async () => {
    const client = createClient({ url: ClickhouseTestServer.url!, database, log: { level: ClickHouseLogLevel.OFF } })
    try {
      const result = await client.query({ query: text, format: "JSONCompact" })
      return (await result.json<Array<unknown>>()).data
    } finally {
      await client.close()
    }
  })

/** A database of its own on the test server, dropped with the scope: its name and URL. */
const freshDatabase = Effect.gen(function*() {
  const database = ClickhouseTestServer.databaseName()
  yield* Effect.addFinalizer(() => ClickhouseTestServer.dropDatabase(database))
  return { database, url: `${ClickhouseTestServer.url}/${database}` }
})

/** The store on `url`; decisions far in the past (tests use 2025) are kept unless a test says otherwise. */
const open = (url: string, options: Partial<ClickhouseRatelimitStore.Options> = {}) =>
  ClickhouseRatelimitStore.make({ url, decisionRetentionDays: Infinity, ...options })

/** One store for every run of the property (a database costs a migration): each run has workspaces of its own. */
class Shared extends Context.Tag("Shared")<Shared, Context.Tag.Service<typeof RatelimitStore>>() {}

const skipped = ClickhouseTestServer.skip() !== undefined

describe.skipIf(skipped)("ClickhouseRatelimitStore on a real server", () => {
  let runs = 0
  layer(Layer.scoped(Shared, Effect.flatMap(freshDatabase, ({ url }) => open(url))), { timeout: "60 seconds" })(
    "counts",
    (it) => {
      it.effect.prop(
        "counts decisions, and each override's hits, as MemoryRatelimitStore does",
        {
          drawn: FastCheck.array(decisionArb, { maxLength: 300 }),
          drawnQueries: FastCheck.array(queryArb, { minLength: 30, maxLength: 30 })
        },
        ({ drawn, drawnQueries }) =>
          Effect.gen(function*() {
            const store = yield* Shared
            const run = `run${++runs}_`
            const decisions = drawn.map((d) => ({ ...d, workspaceId: run + d.workspaceId }))
            const queries = drawnQueries.map((q) => ({ ...q, workspaceId: run + q.workspaceId }))
            const workspaces = [run + "ws", run + "ws_other"]
            const memory = MemoryRatelimitStore.make()
            yield* memory.append(decisions)
            // In concurrent calls, which the writer joins into fewer INSERTs.
            const batches = Array.from({ length: 4 }, (_, i) => decisions.filter((_, n) => n % 4 === i))
            yield* Effect.forEach(batches, (batch) => store.append(batch), { concurrency: "unbounded", discard: true })

            for (const query of queries) {
              const [expected, actual] = yield* Effect.all([memory.aggregate(query), store.aggregate(query)])
              expect(rows(actual), JSON.stringify(query)).toEqual(rows(expected))
            }
            for (const workspaceId of workspaces) {
              const ids = [...OVERRIDES, "or_none"]
              const [expected, actual] = yield* Effect.all([
                memory.overrideHits(workspaceId, ids),
                store.overrideHits(workspaceId, ids)
              ])
              expect(actual).toEqual(expected)
            }
          }),
        // ClickHouse answers each query in milliseconds, but 30 of them per run add up: 7 s alone,
        // 23 s beside a type check, over 60 s in CI beside every other suite. A budget, not a speed check.
        { timeout: 300_000, fastCheck: { numRuns: 5, endOnFailure: true } }
      )
    }
  )

  it.scoped("keeps the latest decisions in full, newest first, of one identifier when asked", () =>
    Effect.gen(function*() {
      const { url } = yield* freshDatabase
      const store = yield* open(url)
      const memory = MemoryRatelimitStore.make()
      // Distinct times, appended in time order: the memory store's order of arrival is then time order too.
      const decisions = Array.from({ length: 30 }, (_, i) =>
        decision({
          time: T0 + i * 1000,
          identifier: IDENTIFIERS[i % IDENTIFIERS.length]!,
          namespaceId: i % 7 === 0 ? "ns_2" : "ns_1",
          workspaceId: i % 11 === 0 ? "ws_other" : "ws",
          passed: i % 3 !== 0,
          remaining: i,
          cost: i % 4,
          overrideId: i % 5 === 0 ? "or_1" : undefined,
          source: Sources[i % Sources.length]!,
          latency: Math.round((i / 7) * 1000) / 1000,
          detail: i % 2 === 0 ? undefined : JSON.stringify({ meta: { i, quote: "it's \"x\"\n\\" } })
        }))
      yield* memory.append(decisions)
      yield* store.append(decisions)

      const latest = yield* store.decisions("ws", "ns_1", { limit: 5 })
      const ofNs1 = decisions.filter((d) => d.workspaceId === "ws" && d.namespaceId === "ns_1")
      expect(latest.map((d) => d.time)).toEqual(ofNs1.slice(-5).reverse().map((d) => d.time))
      const ofOne = yield* store.decisions("ws", "ns_1", { limit: 100, identifier: "a,b" })
      expect(ofOne.length).toBeGreaterThan(0)
      expect(ofOne.every((d) => d.identifier === "a,b")).toBe(true)
      for (
        const [workspaceId, namespaceId, options] of [
          ["ws", "ns_1", { limit: 5 }],
          ["ws", "ns_1", { limit: 100 }],
          ["ws", "ns_1", { limit: 100, identifier: "a,b" }],
          ["ws", "ns_1", { limit: 2, identifier: "é" }],
          ["ws", "ns_2", { limit: 100 }],
          ["ws_other", "ns_1", { limit: 100 }],
          ["ws", "ns_1", { limit: 100, identifier: "nobody" }],
          ["ws", "ns_1", { limit: 0 }]
        ] as const
      ) {
        const expected = yield* memory.decisions(workspaceId, namespaceId, options)
        const actual = yield* store.decisions(workspaceId, namespaceId, options)
        expect(actual, JSON.stringify(options)).toEqual(expected)
      }
    }))

  it.scoped("scans a scope's raw decisions as the memory store does, whatever its ids hold", () =>
    Effect.gen(function*() {
      const { url } = yield* freshDatabase
      const store = yield* open(url)
      const memory = MemoryRatelimitStore.make()
      // Quotes, backslashes and control characters in ids: written as literals, escaped.
      const workspaces = ["ws", "w's\\\n\u0001"]
      const namespaces = ["ns_1", "n's\\", "ns') OR 1 = 1 --"]
      const decisions = Array.from({ length: 120 }, (_, i) =>
        decision({
          time: T0 + (i % 40) * 17 * 60_000 + (i % 3),
          workspaceId: workspaces[i % 2]!,
          namespaceId: namespaces[i % 3]!,
          identifier: IDENTIFIERS[i % IDENTIFIERS.length]!,
          passed: i % 4 !== 0,
          overrideId: i % 5 === 0 ? `or_'${i % 2}` : undefined,
          latency: (i * 37) / 1000
        }))
      yield* memory.append(decisions)
      yield* store.append(decisions)
      for (const workspaceId of [...workspaces, "nobody"]) {
        for (const within of [undefined, [], ["ns_1"], ["n's\\", "ns') OR 1 = 1 --"], ["ns_1')"]]) {
          for (const [from, to] of [[T0 - DAY, T0 + DAY], [T0 + 3 * HOUR + 0.5, T0 + 7 * HOUR + 1], [T0 + DAY, T0]]) {
            const scope: ScanScope = { workspaceId, within, from: from!, to: to!, maxRows: 1_000 }
            const expected = scanned(yield* memory.scan!(scope))
            expect(scanned(yield* store.scan!(scope)), JSON.stringify(scope)).toEqual(expected)
            if (expected.length > 0) {
              const error = yield* Effect.flip(store.scan!({ ...scope, maxRows: expected.length - 1 }))
              expect(error._tag).toBe("QueryTooLarge")
            }
          }
        }
      }
    }))

  it.scoped("keeps verifications and decisions apart, in one database, both stores opening at once", () =>
    Effect.gen(function*() {
      const { database, url } = yield* freshDatabase
      const [verifications, ratelimits] = yield* Effect.all([ClickhouseVerificationStore.make({ url }), open(url)], {
        concurrency: "unbounded"
      })
      // The same names in both: a namespace id as an api id, an identifier as a key id.
      const query = Aggregation.makeQuery({ workspaceId: "ws", apiId: "ns_1", end: T0 + DAY, maxRows: 1000 })
      yield* ratelimits.append([
        decision({ time: T0, passed: true }),
        decision({ time: T0 + HOUR, passed: false, overrideId: "or_1" })
      ])
      expect((yield* verifications.aggregate(query)).size).toBe(0)
      expect(yield* select(database, "SELECT toUInt32(count()) FROM verifications")).toEqual([[0]])
      for (const table of ["r_hour", "r_hour_total", "r_day", "r_day_total"]) {
        expect(yield* select(database, `SELECT toUInt32(count()) FROM ${table}`), table).toEqual([[0]])
      }

      yield* verifications.append([
        Verification.make({ time: T0, workspaceId: "ws", apiId: "ns_1", keyId: "u1", outcome: "rateLimited" })
      ])
      const counted = yield* ratelimits.aggregate({ ...query, groupByKey: true })
      expect(rows(counted)).toEqual([JSON.stringify([null, "u1", null, null, [1, 0, 0, 0, 1, 0, 0, 0, 0]])])
      expect(total(yield* verifications.aggregate(query))).toBe(1)
    }))

  it.live("drops whole days of decisions past the retention, keeping their counts and hits", () =>
    Effect.scoped(Effect.gen(function*() {
      const { url } = yield* freshDatabase
      const now = Date.now()
      const old = decision({ time: now - 40 * DAY, overrideId: "or_1" })
      const recent = decision({ time: now - HOUR, overrideId: "or_1", passed: false })
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* open(url, { decisionRetentionDays: 30 })
        yield* store.append([old, recent])
        // The newest from the last hours alone, the rest from the whole history.
        expect(yield* store.decisions("ws", "ns_1", { limit: 1 })).toEqual([recent])
        expect(yield* store.decisions("ws", "ns_1", { limit: 2 })).toEqual([recent, old])
        // Past the retention, not yet dropped: never scanned.
        const scope = { workspaceId: "ws", within: undefined, from: now - 50 * DAY, to: now + DAY, maxRows: 10 }
        const [batch, ...none] = yield* store.scan!(scope)
        expect(none).toEqual([])
        expect(Array.from(batch!.time)).toEqual([recent.time])
      }))
      // The first sweep runs as the store opens.
      const store = yield* open(url, { decisionRetentionDays: 30 })
      expect(yield* store.decisions("ws", "ns_1", { limit: 10 })).toEqual([recent])
      const counted = yield* store.aggregate(
        Aggregation.makeQuery({ workspaceId: "ws", apiId: "ns_1", end: now - (now % HOUR), maxRows: 1000 })
      )
      expect(Array.from(counted.counts)).toEqual([1, 0, 0, 0, 1, 0, 0, 0, 0])
      expect(yield* store.overrideHits("ws", ["or_1"])).toEqual(
        new Map([["or_1", { hits: 2, lastHitAt: recent.time }]])
      )
    })))
})
