/**
 * Series: ungrouped answers, with or without a time unit (core zero-fills them). Unfiltered ones
 * come from the hour index's counters alone, no scan loop compiled (totalsSeries); ones filtered by
 * key only from the keys' entries in the full chunks' key indexes, a scan of the unfilled chunk and
 * of the late run (postingSeries). Checked against the naive reference on small random histories
 * and on 140,000 rows (two full chunks), with late rows kept apart or merged.
 */
import { describe, expect, it } from "@effect/vitest"
import * as FastCheck from "effect/FastCheck"
import type { Input } from "./Fixture.js"
import {
  BIG_SPAN,
  bigEngine,
  bigHistory,
  build,
  check,
  checkHistories,
  counterArb,
  HEAVY_KEYS,
  keyFilterArb,
  limitArb,
  maybe,
  orderArb,
  RARE_KEYS,
  tally,
  unitArb,
  windowArb
} from "./Fixture.js"

/** Series queries: a time unit or none, ordered by time or a counter or not, with a limit or not. */
const seriesArb = (keyId: FastCheck.Arbitrary<ReadonlyArray<string> | undefined>, span?: number) =>
  FastCheck.record({
    window: windowArb(span),
    keyId,
    unit: unitArb,
    orderBy: maybe(FastCheck.oneof(counterArb, FastCheck.constant("time" as const))),
    order: maybe(orderArb),
    limit: maybe(limitArb, 2)
  }).map(build)

/** Checks `queries` on each step of random histories; returns how many each path answered. */
const property = (queries: FastCheck.Arbitrary<Input>, seed: number) => {
  const taken = tally()
  checkHistories(queries, { seed, numRuns: 60 }, (_, trace) => {
    taken.add(trace.path)
    // The hour index answers: no scan loop is compiled, no key index read.
    if (trace.path === "totalsSeries") expect(trace.shapes.length + trace.keyIndexReads).toBe(0)
  })
  return taken
}

describe("Series", () => {
  it("totalsSeries: answers unfiltered series from the hour index's counters", () => {
    const taken = property(seriesArb(FastCheck.constant(undefined)), 11)
    expect(taken.names()).toEqual(["empty", "totalsSeries"])
    expect(taken.get("totalsSeries")).toBeGreaterThan(200)
  })

  it("postingSeries: answers series filtered by key only", () => {
    const taken = property(seriesArb(keyFilterArb), 12)
    expect(taken.names()).toEqual(["empty", "postingSeries"])
    expect(taken.get("postingSeries")).toBeGreaterThan(200)
  })

  it("reads the key indexes of full chunks, the unfilled chunk and the late run, over 140,000 rows", () => {
    // Rare keys (2% of the rows each at most), sometimes with a heavy one.
    const keys = FastCheck.tuple(
      FastCheck.uniqueArray(FastCheck.constantFrom(...RARE_KEYS), { minLength: 1, maxLength: 3 }),
      maybe(FastCheck.constantFrom(...HEAVY_KEYS), 3)
    ).map(([rare, heavy]) => heavy === undefined ? rare : [...rare, heavy])
    const queries = FastCheck.sample(seriesArb(keys, BIG_SPAN), { numRuns: 24, seed: 13 })
    const unfiltered = FastCheck.sample(seriesArb(FastCheck.constant(undefined), BIG_SPAN), { numRuns: 2, seed: 14 })
    for (
      const { engine, events } of [
        // Late rows spread over the window, kept in the late run.
        { ...bigHistory(7, { trickle: true }), engine: undefined },
        // Backlogs merged into the main run, each cutting a chunk whose key index is rebuilt.
        { ...bigHistory(8, { trickle: false }), engine: 64 }
      ].map(({ engine, events, hours }) => ({ events, engine: bigEngine(hours, engine) }))
    ) {
      const taken = tally()
      for (const input of queries) {
        const trace = check(engine, events, input)
        taken.add(trace.keyIndexReads > 0 ? `${trace.path} from key indexes` : trace.path)
      }
      expect(taken.get("postingSeries from key indexes")).toBeGreaterThan(queries.length / 2)
      for (const input of unfiltered) taken.add(check(engine, events, input).path)
      expect(taken.get("totalsSeries")).toBeGreaterThan(0)
    }
  })
})
