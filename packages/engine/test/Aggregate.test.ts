/**
 * Aggregate, the dispatcher: random queries of every shape over random histories are answered like
 * the naive reference, each by the path the module documents (seen in a trace of the path
 * modules), and every path is taken; an external id of keys whose events each carried one identity
 * is answered as those keys; filters naming nothing stored and windows outside the data answer
 * nothing without calling any path.
 */
import { describe, expect, it } from "@effect/vitest"
import type { AggregationResult } from "@keymeter/core/Aggregation"
import { OUTCOMES } from "@keymeter/core/Aggregation"
import * as Verification from "@keymeter/core/Verification"
import * as FastCheck from "effect/FastCheck"
import { Engine } from "../src/Engine.js"
import type { Input } from "./Fixture.js"
import {
  API,
  BASE,
  check,
  checkHistories,
  historyArb,
  HOUR,
  IDENTITIES,
  oneIdentityPerKeyArb,
  queryArb,
  replay,
  tally,
  toQuery,
  traced,
  WS
} from "./Fixture.js"

/**
 * A result's rows that count events, by group (time, key, identity, tags), each with its nine
 * values of `values` (paths differ only in whether they keep a row of zeros, which core drops).
 */
const byGroup = (result: AggregationResult, values: ArrayLike<number>): Map<string, Array<number>> =>
  new Map(
    Array.from({ length: result.size }, (_, row) => row).filter((row) =>
      result.counts.subarray(row * OUTCOMES, (row + 1) * OUTCOMES).some((count) => count > 0)
    ).map((row) => [
      JSON.stringify([
        result.time?.[row],
        result.keyId?.[row],
        result.identity?.[row],
        result.tag?.[row],
        result.tags?.[row]
      ]),
      Array.from({ length: OUTCOMES }, (_, o) => values[row * OUTCOMES + o]!)
    ])
  )

describe("Aggregate", () => {
  it("routes every shape of query to its documented path, answering like the reference", () => {
    const taken = tally()
    checkHistories(queryArb(), { seed: 1_706_313_600, numRuns: 150, maxQueries: 6 }, (_, trace) => {
      taken.add(trace.path)
    })
    expect(taken.names()).toEqual(["dayIndex", "empty", "postingSeries", "scan", "topN", "totalsSeries"])
    for (const path of taken.names()) expect(taken.get(path), path).toBeGreaterThanOrEqual(10)
  })

  it("takes an external id for its keys when every key's events carried one identity", () => {
    const taken = tally()
    const filtered = queryArb().filter((input) => input.externalId !== undefined)
    FastCheck.assert(
      FastCheck.property(
        // Half the histories give k5 one identity too.
        FastCheck.tuple(oneIdentityPerKeyArb, FastCheck.boolean()).map(([history, mix]) =>
          mix ? history : {
            ...history,
            events: history.events.map((e) => e.keyId === "k5" ? { ...e, identity: IDENTITIES[1] } : e)
          }
        ),
        FastCheck.array(filtered, { minLength: 1, maxLength: 5 }),
        (history, inputs) =>
          replay(history, (engine, arrived) => {
            // k5's events carry any identity: until it has two, the external id is a key filter.
            const mixed = new Set(
              arrived.filter((e) => e.keyId === "k5").map((e) => JSON.stringify(e.identity))
            ).size > 1
            for (const input of inputs) {
              const trace = check(engine, arrived, input)
              const grouped = (input.groupBy ?? []).some((g) => g !== "hour" && g !== "day" && g !== "month")
              if (!grouped && input.tag === undefined) taken.add(`${trace.path}${mixed ? " (k5 mixed)" : ""}`)
            }
          })
      ),
      { seed: 12, numRuns: 30 }
    )
    // Ungrouped, filtered by external id only: the keys' series from the key indexes, unless k5 mixed.
    expect(taken.get("postingSeries")).toBeGreaterThan(5)
    expect(taken.get("scan (k5 mixed)")).toBeGreaterThan(5)
    expect(taken.get("postingSeries (k5 mixed)")).toBe(0)
  })

  it("answers nothing for an unknown api, filters naming nothing stored, and windows outside the data", () => {
    const at = (hour: number, keyId: string, tags: ReadonlyArray<string>, externalId?: string) =>
      Verification.make({
        time: BASE + hour * HOUR,
        workspaceId: WS,
        apiId: API,
        keyId,
        outcome: "valid",
        tags,
        identity: externalId === undefined ? undefined : { id: `id_${externalId}`, externalId }
      })
    // Late rows too: the window's bounds come from both runs.
    const events = [at(10, "k0", ["a"], "x1"), at(40, "k1", ["b"]), at(5, "k2", ["a", "c"], "x2")]
    const engine = new Engine()
    engine.append(events)
    const base: Input = { apiId: API, end: BASE + 100 * HOUR, groupBy: ["key", "day"] }
    const nothing: ReadonlyArray<Input> = [
      { ...base, apiId: "api_none" },
      { ...base, keyId: ["k9"] },
      { ...base, tag: ["zz"] },
      // Both tags are stored, never on one event.
      { ...base, tag: ["a", "b"] },
      { ...base, externalId: "x9" },
      { ...base, start: BASE, end: BASE + 4 * HOUR },
      { ...base, start: BASE + 41 * HOUR, end: BASE + 60 * HOUR },
      { apiId: API, start: BASE + 41 * HOUR, end: BASE + 60 * HOUR }
    ]
    for (const input of nothing) expect(check(engine, events, input).path).toBe("empty")
    // One name stored is enough: the others are ignored.
    expect(check(engine, events, { ...base, keyId: ["k9", "k1"] }).path).toBe("scan")
    expect(check(engine, events, { ...base, start: BASE + 5 * HOUR, end: BASE + 5 * HOUR }).path).toBe("scan")
  })

  it("sums spent credits per counter, by the general path, as counting each credit as an event would", () => {
    // The oracle: an engine holding each event as many times as it spent credits counts, per
    // group and outcome, what the first engine sums; counting is what every other test checks.
    FastCheck.assert(
      FastCheck.property(
        historyArb(),
        FastCheck.array(queryArb(), { minLength: 1, maxLength: 5 }),
        FastCheck.integer(),
        (history, inputs, seed) => {
          const credits = history.events.map((_, i) => Math.abs((seed ^ (i * 2_654_435_761)) % 4))
          const events = history.events.map((event, i) => ({ ...event, spentCredits: credits[i]! }))
          const summing = new Engine({ lateMergeThreshold: history.lateMerge })
          summing.append(events)
          const replicated = new Engine()
          replicated.append(events.flatMap((event) => Array.from({ length: event.spentCredits }, () => event)))
          for (const input of inputs) {
            const { limit: _limit, order: _order, orderBy: _orderBy, ...unordered } = input
            const query = toQuery(unordered)
            const { trace, value: summed } = traced(() => summing.aggregate({ ...query, sumCredits: true }))
            const plain = summing.aggregate(query)!
            const label = JSON.stringify(unordered)
            if (summed!.size > 0) expect(trace.path, label).toBe("scan")
            // The same rows and counters as without credits, and beside them the credits.
            expect(byGroup(summed!, summed!.counts), label).toEqual(byGroup(plain, plain.counts))
            const expected = byGroup(replicated.aggregate(query)!, replicated.aggregate(query)!.counts)
            for (const [group, sums] of byGroup(summed!, summed!.credits!)) {
              expect(sums, `${label} ${group}`).toEqual(expected.get(group) ?? Array(OUTCOMES).fill(0))
            }
          }
        }
      ),
      { seed: 1_706_400_000, numRuns: 150 }
    )
  })
})
