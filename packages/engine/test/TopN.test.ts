/**
 * TopN: one dimension, no time unit, ordered by a counter, limit up to 1,000, when the day index
 * does not answer: every group's counters, rows only for the contenders (`contenders`: the limit
 * best and every group tied with the last of them), `groups` for the complete answer's size. Keys
 * by total reach it only past the day index's 65,536 keys: totals pick the contenders, whose
 * counters come from the key indexes and the late run; keys filtered to a few of many rows are
 * counted from the key indexes by any counter. Checked against a sort (contenders) and the naive
 * reference.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Verification from "@keymeter/core/Verification"
import type { Verification as Event } from "@keymeter/core/Verification"
import * as FastCheck from "effect/FastCheck"
import { Engine } from "../src/Engine.js"
import { contenders } from "../src/internal/query/TopN.js"
import type { Input } from "./Fixture.js"
import {
  API,
  BASE,
  build,
  check,
  checkHistories,
  counterArb,
  externalIdArb,
  HOUR,
  IDENTITIES,
  keyFilterArb,
  maybe,
  orderArb,
  random,
  tagFilterArb,
  tally,
  windowArb,
  WS
} from "./Fixture.js"

const topLimitArb = FastCheck.oneof(FastCheck.integer({ min: 1, max: 4 }), FastCheck.integer({ min: 1, max: 1000 }))
const outcomeOrderArb = FastCheck.constantFrom(...Verification.Outcomes)

/** Top-N shapes the day index does not answer. */
const topNArb = FastCheck.oneof(
  // Keys by one outcome.
  FastCheck.record({
    keyId: maybe(keyFilterArb, 2),
    tag: maybe(tagFilterArb, 3),
    externalId: maybe(externalIdArb, 3),
    dims: FastCheck.constant(["key" as const]),
    orderBy: outcomeOrderArb
  }),
  // Keys by total among events filtered by tag or external id.
  FastCheck.record({
    keyId: maybe(keyFilterArb, 2),
    tag: tagFilterArb,
    externalId: maybe(externalIdArb),
    dims: FastCheck.constant(["key" as const]),
    orderBy: FastCheck.constant("total" as const)
  }),
  FastCheck.record({
    externalId: externalIdArb,
    dims: FastCheck.constant(["key" as const]),
    orderBy: FastCheck.constant("total" as const)
  }),
  // Identities of some keys, or of filtered events.
  FastCheck.record({
    keyId: keyFilterArb,
    tag: maybe(tagFilterArb, 3),
    dims: FastCheck.constant(["identity" as const]),
    orderBy: counterArb
  }),
  FastCheck.record({
    tag: maybe(tagFilterArb),
    externalId: externalIdArb,
    dims: FastCheck.constant(["identity" as const]),
    orderBy: counterArb
  }),
  // Tag sets (the empty one included), filtered or not.
  FastCheck.record({
    keyId: maybe(keyFilterArb, 2),
    tag: maybe(tagFilterArb, 3),
    externalId: maybe(externalIdArb, 3),
    dims: FastCheck.constant(["tags" as const]),
    orderBy: counterArb
  })
).chain((shape) =>
  FastCheck.record({ window: windowArb(), order: maybe(orderArb), limit: topLimitArb }).map((rest) =>
    build({ ...shape, ...rest })
  )
)

describe("TopN", () => {
  it("contenders: the limit best groups and every group tied with the last of them", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.array(FastCheck.integer({ min: 0, max: 6 }), { maxLength: 40 }),
        FastCheck.integer({ min: 1, max: 12 }),
        orderArb,
        (values, limit, order) => {
          // Groups are any codes, in the order the caller found them.
          const candidates = values.map((_, i) => 3 * i + 1)
          const value = (g: number) => values[(g - 1) / 3]!
          const best = [...values].sort((a, b) => order === "desc" ? b - a : a - b)
          const last = best[Math.min(limit, best.length) - 1]!
          const expected = candidates.filter((g) => order === "desc" ? value(g) >= last : value(g) <= last)
          expect(contenders(candidates, value, limit, order)).toEqual(expected)
        }
      ),
      { seed: 31, numRuns: 1000 }
    )
  })

  it("ranks keys by an outcome, identities of some keys, tag sets, and groups of filtered events", () => {
    const taken = tally()
    checkHistories(topNArb, { seed: 32, numRuns: 80 }, (_, trace) => {
      taken.add(trace.path)
      // Only contenders are built: counters of every group, in one pass per run.
      if (trace.path === "topN") expect(trace.shapes.every((shape) => shape.track === false)).toBe(true)
    })
    // An external id of keys whose events each carried one identity is a key filter: then the day
    // index may answer a top by total.
    expect(taken.names()).toEqual(["dayIndex", "empty", "topN"])
    expect(taken.get("topN")).toBeGreaterThan(250)
  })

  it("ranks keys by total past 65,536 keys, and a few keys by any counter, from the key indexes and the late run", () => {
    const next = random(33)
    const event = (keyId: string): Event =>
      Verification.make({
        time: BASE + Math.floor(next() * 96 * HOUR),
        workspaceId: WS,
        apiId: API,
        keyId,
        identity: next() < 0.3 ? IDENTITIES[Math.floor(next() * 4)] : undefined,
        outcome: next() < 0.7 ? "valid" : Verification.Outcomes[Math.floor(next() * 9)]!,
        tags: []
      })
    // 68,000 keys of one event, and ten of 20 to 83: a full chunk (with its key index) and some.
    const events: Array<Event> = Array.from({ length: 68_000 }, (_, k) => event(`u${k}`))
    for (let h = 0; h < 10; h++) for (let n = 0; n < 20 + 7 * h; n++) events.push(event(`h${h}`))
    // In time order, but one in fifty arrives at the end (late rows), in batches of 1,000.
    const sorted = [...events].sort((a, b) => a.time - b.time)
    const arrival = [...sorted.filter((_, i) => i % 50 !== 0), ...sorted.filter((_, i) => i % 50 === 0)]
    const engine = new Engine()
    for (let at = 0; at < arrival.length; at += 1000) engine.append(arrival.slice(at, at + 1000))
    const window = (from: number, to: number) => ({ start: BASE + from * HOUR, end: BASE + to * HOUR })
    const keyIds = (...codes: ReadonlyArray<number>) => codes.map((c) => c < 10 ? `h${c}` : `u${c}`)
    const queries: ReadonlyArray<Input> = [
      // Windows of a few hours: the reference sorts every key it groups.
      { apiId: API, ...window(30, 38), groupBy: ["key"], orderBy: "total", order: "desc", limit: 3 },
      { apiId: API, ...window(60, 70), groupBy: ["key"], orderBy: "total", order: "desc", limit: 5 },
      { apiId: API, end: BASE + 8 * HOUR + 17, groupBy: ["key"], orderBy: "total", order: "desc", limit: 1 },
      {
        apiId: API,
        ...window(0, 95),
        keyId: keyIds(1, 4, 9, 77, 40_000),
        groupBy: ["key"],
        orderBy: "total",
        limit: 2
      },
      {
        apiId: API,
        ...window(30, 90),
        keyId: keyIds(0, 2, 3, 11, 65_999),
        groupBy: ["key"],
        orderBy: "total",
        limit: 4
      },
      {
        apiId: API,
        ...window(10, 50),
        keyId: keyIds(5, 6, 7, 123, 124, 125),
        groupBy: ["key"],
        orderBy: "total",
        order: "desc",
        limit: 2
      },
      // By an outcome: a few keys' counters from the key indexes too, not a scan of the window.
      {
        apiId: API,
        ...window(0, 95),
        keyId: keyIds(1, 4, 9, 77, 40_000),
        groupBy: ["key"],
        orderBy: "valid",
        order: "desc",
        limit: 2
      },
      { apiId: API, ...window(30, 90), keyId: keyIds(0, 2, 3, 11), groupBy: ["key"], orderBy: "rateLimited", limit: 1 }
    ]
    for (const input of queries) {
      const trace = check(engine, events, input)
      expect(trace.path).toBe("topN")
      expect(trace.dayRanges).toEqual([])
      expect(trace.countedKeys.length).toBeGreaterThan(0)
      expect(trace.keyIndexReads).toBeGreaterThan(0)
    }
  })
})
