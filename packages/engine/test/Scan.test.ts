/**
 * Scan, the general path: each bucket's rows (or the filtered keys' entries gathered from the key
 * indexes) into a group table: one group for filtered series, dense counters by one dimension
 * (tracked per bucket with a time unit), tag sets split into tags, composite groups in dense
 * counters or, when the product of the dictionaries is large, in a GroupTable. Every query no
 * faster path takes, checked against the naive reference on random histories, on dictionaries
 * large enough for the GroupTable, and on 140,000 rows for the key-index source; the loop shapes
 * compiled show which variant ran.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Verification from "@keymeter/core/Verification"
import type { Verification as Event } from "@keymeter/core/Verification"
import * as FastCheck from "effect/FastCheck"
import { Engine } from "../src/Engine.js"
import type { Input, Trace } from "./Fixture.js"
import {
  answer,
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
  limitArb,
  maybe,
  oneIdentityPerKeyArb,
  orderArb,
  queryArb,
  random,
  RARE_KEYS,
  reference,
  replay,
  routeOf,
  SPAN,
  tally,
  windowArb,
  WS
} from "./Fixture.js"

/** The variant of the scan that ran, from the shape of its loop. */
const variant = (input: Input, trace: Trace): string => {
  const shape = trace.shapes[0]!
  if (shape.group === "map") {
    return `composite ${shape.mapped!.dense ? "dense" : "hash table"}${shape.mapped!.perTag ? " per tag" : ""}${
      shape.track ? " tracked" : ""
    }`
  }
  const name = shape.group === "none"
    ? "one group"
    : shape.group === "tagset" && (input.groupBy ?? []).includes("tag")
    ? "tagset split into tags"
    : shape.group
  return `${name}${shape.track ? " tracked" : ""}`
}

describe("Scan", () => {
  it("answers every query no faster path takes, in each variant of the loop", () => {
    const taken = tally()
    const scanArb = queryArb().filter((input) => routeOf(input) === "scan")
    checkHistories(scanArb, { seed: 41, numRuns: 200 }, (input, trace) => {
      if (trace.path === "scan") taken.add(variant(input, trace))
    })
    expect(taken.names()).toEqual([
      "composite dense",
      "composite dense per tag",
      "composite dense per tag tracked",
      "composite dense tracked",
      "identity",
      "identity tracked",
      "key",
      "key tracked",
      "one group",
      "tagset",
      "tagset split into tags",
      "tagset split into tags tracked",
      "tagset tracked"
    ])
    for (const name of taken.names()) expect(taken.get(name), name).toBeGreaterThanOrEqual(5)
  })

  // Grouped by key and identity, the groups are keys while every key's events carried one identity
  // (k5's carry any, so histories holding two of its identities fall back to both codes).
  it("counts a grouping by key and identity by key alone while every key's events carried one identity", () => {
    const counted = tally()
    const byKeyAndIdentity = queryArb()
      .map((input) => ({ ...input, groupBy: [...new Set([...(input.groupBy ?? []), "key", "identity"] as const)] }))
      .filter((input) => routeOf(input) === "scan")
    FastCheck.assert(
      FastCheck.property(
        oneIdentityPerKeyArb,
        FastCheck.array(byKeyAndIdentity, { minLength: 1, maxLength: 5 }),
        (history, inputs) =>
          replay(history, (engine, arrived) => {
            for (const input of inputs) {
              const trace = check(engine, arrived, input)
              if (trace.path !== "scan") continue
              const shape = trace.shapes[0]!
              const dims = shape.group === "map" ? shape.mapped!.dims : [shape.group]
              counted.add(dims.includes("identity") ? "by key and identity" : "by key")
            }
          })
      ),
      { seed: 45, numRuns: 150 }
    )
    expect(counted.names()).toEqual(["by key", "by key and identity"])
    for (const name of counted.names()) expect(counted.get(name), name).toBeGreaterThanOrEqual(5)
  })

  // 700 keys × 451 identity codes: more composite groups than dense counters are kept for.
  const largeDictionaries = () => {
    const next = random(42)
    const tags = ["a", "b", "c", "d", "e", "f"]
    const events: Array<Event> = Array.from({ length: 4000 }, (_, i) =>
      Verification.make({
        time: BASE + Math.floor(next() * SPAN * HOUR),
        workspaceId: WS,
        apiId: API,
        keyId: `g${i < 700 ? i : Math.floor(next() * 700)}`,
        identity: i < 450 || next() < 0.8
          ? { id: `p${i < 450 ? i : Math.floor(next() * 450)}`, externalId: `e${i % 40}` }
          : undefined,
        outcome: next() < 0.6 ? "valid" : Verification.Outcomes[Math.floor(next() * 9)]!,
        tags: tags.filter(() => next() < 0.12)
      }))
    const sorted = [...events].sort((a, b) => a.time - b.time)
    const engine = new Engine()
    engine.append([...sorted.filter((_, i) => i % 7 !== 0), ...sorted.filter((_, i) => i % 7 === 0)])
    return { engine, events, tags }
  }

  it("groups composite dimensions in a GroupTable when dense counters would be too many, within maxRows", () => {
    const { engine, events, tags } = largeDictionaries()
    // Hour and day buckets (a bucket past 512 groups has a test of its own below).
    const composite = FastCheck.record({
      window: windowArb(),
      keyId: maybe(FastCheck.uniqueArray(FastCheck.constantFrom("g1", "g2", "g3", "g500"), { minLength: 1 }), 3),
      tag: maybe(FastCheck.subarray(tags, { minLength: 1, maxLength: 1 }), 3),
      externalId: maybe(FastCheck.constantFrom("e1", "e7"), 3),
      dims: FastCheck.constantFrom<ReadonlyArray<"key" | "identity" | "tag" | "tags">>(
        ["key", "identity"],
        ["key", "identity", "tag"],
        ["key", "identity", "tags"]
      ),
      unit: FastCheck.constantFrom("hour" as const, "day" as const),
      orderBy: maybe(FastCheck.oneof(counterArb, FastCheck.constant("time" as const))),
      order: maybe(orderArb),
      limit: maybe(limitArb)
    }).map(build)
    const taken = tally()
    for (const input of FastCheck.sample(composite, { numRuns: 30, seed: 43 })) {
      const trace = check(engine, events, input)
      if (trace.path === "scan") taken.add(variant(input, trace))
    }
    expect(taken.names()).toEqual(["composite hash table", "composite hash table per tag"])
    // The table stops the answer once it would hold more than maxRows rows.
    const input: Input = { apiId: API, end: BASE + SPAN * HOUR, groupBy: ["key", "identity", "day"] }
    const rows = reference(events, input).length
    expect(rows).toBeGreaterThan(1000)
    expect(answer(engine, input, rows).datapoints).toEqual(reference(events, input))
    expect(answer(engine, input, rows - 1).result).toBeUndefined()
  })

  // The event whose new group is the 513th (1,025th, ...) of a bucket makes the table grow: it
  // was once counted in the array the growth replaced, and its row answered zero.
  it("counts every event of a bucket holding more than 512 composite groups", () => {
    const { engine, events } = largeDictionaries()
    const input: Input = { apiId: API, end: BASE + SPAN * HOUR, groupBy: ["key", "identity"] }
    const want = reference(events, input)
    expect(want.length).toBeGreaterThan(1024)
    const got = answer(engine, input).datapoints!
    expect(got.length).toBe(want.length)
    // Today three rows (the 513th, 1,025th and 2,049th groups) answer 0 instead of 1.
    expect(got.filter((point) => point.total === 0).length).toBe(0)
    expect(got).toEqual(want)
  })

  // Scans count into one zeroed array per thread, which each harvest leaves zero again.
  it("leaves no counts behind for the next scan when one stops at maxRows", () => {
    const { engine, events } = largeDictionaries()
    const inputs: ReadonlyArray<Input> = [
      { apiId: API, end: BASE + SPAN * HOUR, groupBy: ["key"] },
      { apiId: API, end: BASE + SPAN * HOUR, groupBy: ["identity", "day"] },
      { apiId: API, end: BASE + SPAN * HOUR, groupBy: ["key", "tag"] },
      { apiId: API, end: BASE + SPAN * HOUR, groupBy: ["tags", "hour"] }
    ]
    for (const input of inputs) {
      const want = reference(events, input)
      const { result, trace } = answer(engine, input, Math.floor(want.length / 2))
      expect(trace.path).toBe("scan")
      expect(result).toBeUndefined()
      expect(answer(engine, input).datapoints).toEqual(want)
    }
  })

  // One bucket's groups are visited one by one unless tracked: worth it only when the rows read are
  // fewer than twice the groups (700 keys, 450 identities here).
  it("tracks the groups of a single bucket when they outnumber the rows read", () => {
    const { engine, events } = largeDictionaries()
    const short = Math.floor(SPAN / 10)
    const inputs: ReadonlyArray<readonly [Input, boolean]> = [
      [{ apiId: API, end: BASE + SPAN * HOUR, groupBy: ["key"] }, false],
      [{ apiId: API, start: BASE + 3 * HOUR, end: BASE + (3 + short) * HOUR - 1, groupBy: ["key"] }, true],
      [{ apiId: API, start: BASE + 5 * HOUR, end: BASE + (5 + short) * HOUR - 1, groupBy: ["identity"] }, true]
    ]
    for (const [input, tracked] of inputs) {
      const read = events.filter((e) => e.time >= (input.start ?? 0) && e.time <= input.end).length
      if (tracked) expect(read).toBeLessThan(2 * 450)
      else expect(read).toBeGreaterThan(2 * 700)
      const { datapoints, trace } = answer(engine, input)
      expect(trace.path).toBe("scan")
      expect(trace.shapes[0]!.track).toBe(tracked)
      expect(datapoints).toEqual(reference(events, input))
    }
  })

  it("reads the filtered keys' entries from the key indexes of full chunks, and the late run, over 140,000 rows", () => {
    const keys = FastCheck.tuple(
      FastCheck.uniqueArray(FastCheck.constantFrom(...RARE_KEYS), { minLength: 1, maxLength: 3 }),
      maybe(FastCheck.constantFrom(...HEAVY_KEYS), 4)
    ).map(([rare, heavy]) => heavy === undefined ? rare : [...rare, heavy])
    const scanArb = queryArb(BIG_SPAN).map((input) => ({ ...input, apiId: API, keyId: undefined }))
      .chain((input) => keys.map((keyId) => ({ ...input, keyId })))
      .filter((input) => routeOf(input) === "scan")
    const queries = FastCheck.sample(scanArb, { numRuns: 24, seed: 44 })
    for (
      const [history, threshold] of [[bigHistory(7, { trickle: true }), undefined], [
        bigHistory(8, { trickle: false }),
        64
      ]] as const
    ) {
      const engine = bigEngine(history.hours, threshold)
      const taken = tally()
      for (const input of queries) {
        const trace = check(engine, history.events, input)
        if (trace.gathers > 0 && trace.shapes.some((shape) => shape.source === "postings")) taken.add("postings")
      }
      expect(taken.get("postings")).toBeGreaterThan(queries.length / 2)
    }
  })
})
