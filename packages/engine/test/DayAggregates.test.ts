/**
 * DayAggregates: whole days from the day index, the partial days at the window's edges from rows,
 * for top keys by total (the contenders' counters then from the key indexes and the late run), top
 * identities by any counter, and counts per tag (no time unit, day or month). Checked against the
 * naive reference on random histories whose queries run between appends (days cached by one query
 * are written again before the next), and on 140,000 rows; the day index is seen to be read, and
 * only days written since they were cached to be recomputed.
 */
import { describe, expect, it, vi } from "@effect/vitest"
import * as Time from "@keymeter/core/Time"
import * as Verification from "@keymeter/core/Verification"
import type { Verification as Event } from "@keymeter/core/Verification"
import * as FastCheck from "effect/FastCheck"
import { Engine } from "../src/Engine.js"
import { Run } from "../src/internal/Run.js"
import type { Input, Trace } from "./Fixture.js"
import {
  API,
  BASE,
  BIG_SPAN,
  bigEngine,
  bigHistory,
  build,
  check,
  checkHistories,
  counterArb,
  HEAVY_KEYS,
  HOUR,
  IDENTITIES,
  keyFilterArb,
  KEYS,
  limitArb,
  maybe,
  oneIdentityPerKeyArb,
  orderArb,
  RARE_KEYS,
  replay,
  TAGS,
  tally,
  windowArb,
  WS
} from "./Fixture.js"

const topLimitArb = FastCheck.oneof(FastCheck.integer({ min: 1, max: 4 }), FastCheck.integer({ min: 1, max: 1000 }))

const topKeysArb = FastCheck.record({
  window: windowArb(),
  keyId: maybe(keyFilterArb, 2),
  dims: FastCheck.constant(["key" as const]),
  orderBy: FastCheck.constant("total" as const),
  order: maybe(orderArb),
  limit: topLimitArb
}).map(build)

const topIdentitiesArb = FastCheck.record({
  window: windowArb(),
  dims: FastCheck.constant(["identity" as const]),
  orderBy: counterArb,
  order: maybe(orderArb),
  limit: topLimitArb
}).map(build)

/** Top keys, or keys and their identities, by total per day or month. */
const topKeysByBucketArb = FastCheck.record({
  window: windowArb(),
  keyId: maybe(keyFilterArb, 2),
  dims: FastCheck.constantFrom(["key" as const], ["key" as const, "identity" as const], [
    "identity" as const,
    "key" as const
  ]),
  unit: FastCheck.constantFrom("day" as const, "month" as const),
  orderBy: FastCheck.constant("total" as const),
  order: maybe(orderArb),
  limit: topLimitArb
}).map(build)

const perTagArb = FastCheck.record({
  window: windowArb(),
  dims: FastCheck.constant(["tag" as const]),
  unit: FastCheck.constantFrom(undefined, "hour" as const, "day" as const, "month" as const),
  orderBy: maybe(FastCheck.oneof(counterArb, FastCheck.constant("time" as const))),
  order: maybe(orderArb),
  limit: maybe(limitArb)
}).map(build)

/** Days (unix day numbers) read from the day index as whole days. */
const wholeDays = (trace: Trace) =>
  trace.dayRanges.flatMap(([from, to]) => Array.from({ length: to - from + 1 }, (_, i) => from + i))

/** Checks `queries` on each step of random histories; returns how many each path answered. */
const property = (queries: FastCheck.Arbitrary<Input>, seed: number, each: (trace: Trace) => void = () => {}) => {
  const taken = tally()
  checkHistories(queries, { seed, numRuns: 60 }, (_, trace) => {
    taken.add(trace.path)
    if (trace.path === "dayIndex") {
      each(trace)
      if (wholeDays(trace).length > 0) taken.add("whole days")
    }
  })
  expect(taken.names()).toEqual(["dayIndex", "empty", "whole days"])
  expect(taken.get("whole days")).toBeGreaterThan(100)
  return taken
}

describe("DayAggregates", () => {
  it("ranks keys by total, filtered by key or not", () => {
    property(topKeysArb, 21, (trace) => {
      // The contenders' counters come from `countKeyHours`, never from a scan grouped by key in outcomes.
      expect(trace.shapes.every((shape) => shape.counting === "totals" || shape.group === "none")).toBe(true)
    })
  })

  it("ranks day or month buckets of keys, and of keys with their one identity, by total", () => {
    const taken = tally()
    FastCheck.assert(
      FastCheck.property(oneIdentityPerKeyArb, FastCheck.array(topKeysByBucketArb, { minLength: 1, maxLength: 5 }), (
        history,
        inputs
      ) =>
        replay(history, (engine, arrived) => {
          for (const input of inputs) {
            const trace = check(engine, arrived, input)
            const byIdentity = input.groupBy!.includes("identity")
            taken.add(`${trace.path}${byIdentity ? " by identity" : ""}`)
            if (trace.path === "dayIndex" && wholeDays(trace).length > 0) taken.add("whole days")
            // The contenders' counters come from `countKeyHours`, never from a scan grouped in outcomes.
            if (trace.path === "dayIndex") {
              expect(trace.shapes.every((shape) => shape.counting === "totals" || shape.group === "none")).toBe(true)
            }
          }
        })),
      { seed: 24, numRuns: 60 }
    )
    expect(taken.names()).toEqual([
      "dayIndex",
      "dayIndex by identity",
      "empty",
      "empty by identity",
      "scan by identity",
      "whole days"
    ])
    expect(taken.get("whole days")).toBeGreaterThan(100)
  })

  it("ranks identities by any counter", () => {
    property(topIdentitiesArb, 22, (trace) => expect(trace.countedKeys).toEqual([]))
  })

  it("counts per tag, without a time unit or by hour, day or month", () => property(perTagArb, 23))

  it("reads whole days from the day index, recomputing only a day written since it was cached", () => {
    const d0 = BASE / Time.DAY
    const at = (hour: number, keyId: string, tags: ReadonlyArray<string>, n: number): Event =>
      Verification.make({
        time: BASE + hour * HOUR + n,
        workspaceId: WS,
        apiId: API,
        keyId,
        tags,
        identity: n % 3 === 0 ? undefined : IDENTITIES[n % 4],
        outcome: Verification.Outcomes[(hour * 7 + n) % 9]!
      })
    // Six days in time order: each day's aggregates are computed as the next day opens.
    const events: Array<Event> = []
    for (let h = 0; h < 6 * 24; h++) {
      events.push(
        at(h, KEYS[h % 3]!, [TAGS[h % 4]!], 1),
        at(h, KEYS[(h * 7) % 5]!, [TAGS[h % 2]!, TAGS[2 + (h % 2)]!], 2)
      )
    }
    const engine = new Engine()
    engine.append(events)
    // Hours 6 (day 0) to 130 (day 5): days 1 to 4 whole.
    const window = { start: BASE + 6 * HOUR, end: BASE + 130 * HOUR }
    const queries: ReadonlyArray<Input> = [
      { apiId: API, ...window, groupBy: ["tag"] },
      { apiId: API, ...window, groupBy: ["tag", "day"], orderBy: "valid", order: "desc" },
      { apiId: API, ...window, groupBy: ["key"], orderBy: "total", order: "desc", limit: 2 },
      { apiId: API, ...window, groupBy: ["identity"], orderBy: "expired", limit: 1 }
    ]
    const whole = [d0 + 1, d0 + 2, d0 + 3, d0 + 4]
    for (const input of queries) {
      const trace = check(engine, events, input)
      expect(wholeDays(trace)).toEqual(whole)
      expect(trace.computedDays).toEqual([])
    }
    // Late events in day 2 (a new key, tag and identity among them), and in day 5, outside the days read.
    const late = [
      at(50, "k9", ["e"], 4),
      at(51, "k0", ["a", "e"], 5),
      at(49, "k1", ["b"], 6),
      at(125, "k2", ["a"], 7)
    ].map((e, i) => i === 0 ? { ...e, identity: { id: "i9", externalId: "x9" } } : e)
    engine.append(late)
    const all = [...events, ...late]
    queries.forEach((input, i) => {
      const trace = check(engine, all, input)
      expect(wholeDays(trace)).toEqual(whole)
      // The first query after the write recomputes day 2; the others find it cached again.
      expect(trace.computedDays).toEqual(i === 0 ? [d0 + 2] : [])
    })
  })

  it("counts by tag the hours of days not written since they were computed, reading only other days' rows", () => {
    const h0 = BASE / HOUR
    const at = (hour: number, tags: ReadonlyArray<string>, n: number): Event =>
      Verification.make({
        time: BASE + hour * HOUR + n,
        workspaceId: WS,
        apiId: API,
        keyId: KEYS[(hour + n) % 3]!,
        tags,
        outcome: Verification.Outcomes[(hour * 5 + n) % 9]!
      })
    // Six days in time order (days 0 to 4 computed as the next opened; day 5 still being written).
    const events: Array<Event> = []
    for (let h = 0; h < 6 * 24; h++) {
      events.push(at(h, [TAGS[h % 4]!], 1), at(h, [TAGS[h % 2]!, TAGS[2 + (h % 3) % 2]!], 2))
    }
    const engine = new Engine()
    engine.append(events)
    const window = { start: BASE + 6 * HOUR, end: BASE + 130 * HOUR }
    const queries: ReadonlyArray<Input> = [
      { apiId: API, ...window, groupBy: ["tag", "hour"] },
      { apiId: API, ...window, groupBy: ["tag"], orderBy: "valid", order: "desc", limit: 2 },
      { apiId: API, ...window, groupBy: ["tag", "day"] }
    ]
    /** The hours whose rows `input` read (as [from, to] ranges), beside the reference check. */
    const hoursRead = (all: ReadonlyArray<Event>, input: Input) => {
      const rows = vi.spyOn(Run.prototype, "rows")
      try {
        const trace = check(engine, all, input)
        return { trace, read: rows.mock.calls.map(([from, to]) => [from - h0, to - h0]) }
      } finally {
        rows.mockRestore()
      }
    }
    for (const input of queries) {
      const { read, trace } = hoursRead(events, input)
      expect(trace.path).toBe("dayIndex")
      // Day 5's hours only: days 0 to 4 come from their aggregates, hour by hour at the edges.
      expect(read.length).toBeGreaterThan(0)
      for (const [from, to] of read) expect(from >= 120 && to <= 130, `${from}-${to}`).toBe(true)
    }
    // A late event in day 0: its hours in the window are read, the day is not computed for them.
    const late = [at(10, [TAGS[1]!], 3)]
    const all = [...events, ...late]
    engine.append(late)
    for (const input of queries) {
      const { read, trace } = hoursRead(all, input)
      expect(trace.computedDays).toEqual([])
      expect(read.some(([from, to]) => from <= 10 && to >= 10)).toBe(true)
      for (const [from, to] of read) {
        expect((from >= 6 && to <= 23) || (from >= 120 && to <= 130), `${from}-${to}`).toBe(true)
      }
    }
  })

  it("keeps an hour's tag counts past 65,535 (32 bits when an hour holds that many rows)", () => {
    const h0 = BASE / HOUR
    // 70,000 valid events tagged "a" in hour 3 of day 0, and one in day 1 to close day 0; small
    // hours (day 1's) are kept in 16 bits.
    const events: Array<Event> = Array.from({ length: 70_001 }, (_, i) =>
      Verification.make({
        time: i < 70_000 ? BASE + 3 * HOUR + (i % 1000) : BASE + 30 * HOUR,
        workspaceId: WS,
        apiId: API,
        keyId: KEYS[i % 3]!,
        tags: ["a"],
        outcome: "valid"
      }))
    const engine = new Engine()
    engine.append(events)
    engine.append([{ ...events[70_000]!, time: BASE + 50 * HOUR }])
    const all = [...events, { ...events[70_000]!, time: BASE + 50 * HOUR }]
    const rows = vi.spyOn(Run.prototype, "rows")
    try {
      // Against the reference: hour 3 counts 70,000 (16 bits would have kept 4,464).
      const trace = check(engine, all, {
        apiId: API,
        start: BASE + 2 * HOUR,
        end: BASE + 30 * HOUR,
        groupBy: ["tag", "hour"]
      })
      expect(trace.path).toBe("dayIndex")
      // Days 0 and 1 are computed: no row of theirs is read.
      expect(rows.mock.calls.filter(([from]) => from - h0 < 48)).toEqual([])
    } finally {
      rows.mockRestore()
    }
  })

  it("ranks keys by total over 140,000 rows, counting the contenders from the key indexes and the late run", () => {
    const { events, hours } = bigHistory(7, { trickle: true })
    const engine = bigEngine(hours)
    const keys = FastCheck.tuple(
      FastCheck.uniqueArray(FastCheck.constantFrom(...RARE_KEYS), { minLength: 2, maxLength: 6 }),
      maybe(FastCheck.constantFrom(...HEAVY_KEYS), 3)
    ).map(([rare, heavy]) => heavy === undefined ? rare : [...rare, heavy])
    const filtered = FastCheck.record({
      window: windowArb(BIG_SPAN),
      keyId: keys,
      dims: FastCheck.constant(["key" as const]),
      orderBy: FastCheck.constant("total" as const),
      order: maybe(orderArb),
      limit: FastCheck.integer({ min: 1, max: 4 })
    }).map(build)
    const queries = [
      ...FastCheck.sample(filtered, { numRuns: 20, seed: 24 }),
      {
        apiId: API,
        start: BASE + 100 * HOUR + 5,
        end: BASE + 1000 * HOUR,
        groupBy: ["key"],
        orderBy: "total",
        limit: 3
      },
      { apiId: API, end: BASE + 2000 * HOUR, groupBy: ["key"], orderBy: "total", order: "desc", limit: 1 }
    ] satisfies ReadonlyArray<Input>
    const taken = tally()
    for (const input of queries) {
      const trace = check(engine, events, input)
      taken.add(trace.path)
      if (trace.countedKeys.length > 0 && trace.keyIndexReads > 0) taken.add("counted from key indexes")
    }
    expect(taken.get("dayIndex")).toBeGreaterThan(18)
    expect(taken.get("counted from key indexes")).toBeGreaterThan(15)
  })
})
