/**
 * Aggregate, the dispatcher: random queries of every shape over random histories are answered like
 * the naive reference, each by the path the module documents (seen in a trace of the path
 * modules), and every path is taken; filters naming nothing stored and windows outside the data
 * answer nothing without calling any path.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Verification from "@keymeter/core/Verification"
import { Engine } from "../src/Engine.js"
import type { Input } from "./Fixture.js"
import { API, BASE, check, checkHistories, HOUR, queryArb, tally, WS } from "./Fixture.js"

describe("Aggregate", () => {
  it("routes every shape of query to its documented path, answering like the reference", () => {
    const taken = tally()
    checkHistories(queryArb(), { seed: 1_706_313_600, numRuns: 150, maxQueries: 6 }, (_, trace) => {
      taken.add(trace.path)
    })
    expect(taken.names()).toEqual(["dayIndex", "empty", "postingSeries", "scan", "topN", "totalsSeries"])
    for (const path of taken.names()) expect(taken.get(path), path).toBeGreaterThanOrEqual(10)
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
})
