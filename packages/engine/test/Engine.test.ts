import { describe, expect, it } from "@effect/vitest"
import * as Aggregation from "@keymeter/core/Aggregation"
import type { AggregationQuery } from "@keymeter/core/Aggregation"
import * as Verification from "@keymeter/core/Verification"
import type { Verification as Event } from "@keymeter/core/Verification"
import { Engine } from "@keymeter/engine/Engine"
import { Partition } from "../src/internal/Partition.js"
import { Run } from "../src/internal/Run.js"

const HOUR = 3_600_000

const event = (hour: number, keyId: string, outcome: Event["outcome"] = "valid"): Event =>
  Verification.make({ time: hour * HOUR + 1234, workspaceId: "ws", apiId: "api", keyId, outcome })

const query = (overrides: Partial<AggregationQuery> = {}) =>
  Aggregation.makeQuery({ workspaceId: "ws", apiId: "api", end: 10_000 * HOUR, maxRows: 1000, ...overrides })

describe("Run", () => {
  it("indexes distinct hours with their counters, and truncates only at an hour start", () => {
    const run = new Run()
    run.append(5, 0, 0, 0, 0, 0, 0, 0, 0)
    run.append(5, 1, 0, 0, 4, 0, 0, 0, 0)
    run.append(7, 0, 0, 0, 0, 0, 0, 0, 0)
    expect(run.rows(5, 5)).toEqual([0, 2])
    expect(run.rows(6, 6)).toEqual([2, 2])
    expect(run.rows(0, 100)).toEqual([0, 3])
    expect(Array.from(run.indexCounts.subarray(0, 9))).toEqual([1, 0, 0, 0, 1, 0, 0, 0, 0])
    expect(() => run.truncate(1)).toThrow(/not the start of an hour/)
    run.truncate(2)
    expect([run.length, run.lastHour]).toEqual([2, 5])
  })
})

describe("Partition", () => {
  it("merges late rows by rewriting only the displaced tail", () => {
    const partition = new Partition(4)
    for (let h = 0; h < 100; h++) partition.add(event(h, `k${h % 3}`))
    // Late rows for hours 90..97: they displace the rows of hours 90..99 only.
    for (let h = 90; h < 98; h++) partition.add(event(h, "k1", "expired"))
    partition.maybeMerge()
    expect(partition.lateRun().length).toBe(0)
    expect(partition.main.length).toBe(108)
    const hours = partition.main.chunks[0]!.hour.subarray(0, 108)
    expect(Array.from(hours).every((h, i) => i === 0 || hours[i - 1]! <= h)).toBe(true)
  })

  it("indexes each full chunk's rows by key, and drops the index of a chunk cut by a merge", () => {
    const partition = new Partition(4)
    const n = 65_536 + 10
    for (let i = 0; i < n; i++) {
      partition.add(event(1000 + Math.floor(i / 100), `k${i % 7}`, i % 5 === 0 ? "expired" : "valid"))
    }
    const index = partition.main.chunks[0]!.keyIndex!
    expect(Array.from(index.keys)).toEqual([0, 1, 2, 3, 4, 5, 6])
    const k3 = partition.keyCodes.get("k3")!
    const entries = Array.from(index.entries.subarray(index.starts[k3]!, index.starts[k3 + 1]!))
    expect(entries.every((e, i) => (e >>> 4) % 7 === 3 && (i === 0 || entries[i - 1]! < e))).toBe(true)
    expect(entries.every((e) => (e & 15) === ((e >>> 4) % 5 === 0 ? 8 : 0))).toBe(true)
    expect(partition.main.chunks[1]!.keyIndex).toBeUndefined()
    // Late rows (hour 1650) displacing the end of the first chunk: the merge cuts it, its index
    // goes, and is rebuilt once the chunk is full again, holding the late key.
    for (let i = 0; i < 400; i++) partition.add(event(1650, "k9"))
    expect(partition.lateRun().length).toBe(400)
    partition.maybeMerge()
    expect(partition.lateRun().length).toBe(0)
    const rebuilt = partition.main.chunks[0]!.keyIndex!
    expect(Array.from(rebuilt.keys)).toContain(partition.keyCodes.get("k9"))
  })

  it("codes each event's tag set whatever the key carried before (its last two sets are tried first)", () => {
    const partition = new Partition()
    // One key mostly with its usual tags, others in between, and a second key sharing some sets.
    const sets = [["a"], ["a", "b"], ["b"], ["a", "b", "c"], ["c"]]
    const pattern = [1, 1, 0, 1, 3, 1, 1, 4, 0, 1, 2, 2, 1, 3, 3, 0, 4, 1]
    const expected = new Map<string, number>()
    pattern.forEach((s, i) => {
      const tags = sets[s]!
      for (const keyId of i % 3 === 0 ? ["k1", "k2"] : ["k1"]) {
        partition.add(
          Verification.make({ time: i * HOUR, workspaceId: "ws", apiId: "api", keyId, outcome: "valid", tags })
        )
        expected.set(tags.join(","), (expected.get(tags.join(",")) ?? 0) + 1)
      }
    })
    const counted = new Map<string, number>()
    for (let r = 0; r < partition.main.length; r++) {
      const tags = partition.tagsets[partition.main.chunks[0]!.tagset[r]!]!.join(",")
      counted.set(tags, (counted.get(tags) ?? 0) + 1)
    }
    expect(counted).toEqual(expected)
    expect(partition.tagsets.length).toBe(sets.length + 1)
  })
})

describe("Engine", () => {
  it("answers key filters from posting lists and scans alike", () => {
    const engine = new Engine()
    const events: Array<Event> = []
    for (let h = 0; h < 200; h++) {
      for (let k = 0; k < 50; k++) events.push(event(h, `k${k}`, k % 7 === 0 ? "rateLimited" : "valid"))
    }
    engine.append(events)
    const one = engine.aggregate(query({ keyIds: ["k7"], timeUnit: "day" }))!
    expect(one.size).toBe(9)
    expect(Array.from(one.counts.subarray(0, 9))).toEqual([0, 0, 0, 0, 24, 0, 0, 0, 0])
    // Most keys: a scan with the key mask.
    const many = engine.aggregate(query({ keyIds: Array.from({ length: 40 }, (_, k) => `k${k}`) }))!
    expect(many.counts[0]! + many.counts[4]!).toBe(200 * 40)
    expect(engine.aggregate(query({ groupByKey: true, maxRows: 10 }))).toBeUndefined()
  })

  it("holds an event in about 35 bytes (31 in columns, 4 in posting lists)", () => {
    const engine = new Engine()
    const batch: Array<Event> = []
    for (let i = 0; i < 1_000_000; i++) batch.push(event(Math.floor(i / 1000), `k${i % 500}`))
    engine.append(batch)
    const stats = engine.stats()
    expect(stats.events).toBe(1_000_000)
    expect(stats.bytes / stats.events).toBeLessThan(40)
  })
})

describe("Engine.apis", () => {
  it("lists the apis of a workspace that hold events, and says whether events keep details", () => {
    const engine = new Engine()
    expect(engine.apis("ws")).toEqual([])
    engine.append([
      event(1, "k0"),
      { ...event(2, "k1"), apiId: "api_b" },
      { ...event(3, "k2"), workspaceId: "ws_other", apiId: "api_c" }
    ])
    expect([...engine.apis("ws")].sort()).toEqual(["api", "api_b"])
    expect(engine.apis("ws_other")).toEqual(["api_c"])
    expect(engine.keepsDetails).toBe(true)
    expect(new Engine({ details: false }).keepsDetails).toBe(false)
  })
})
