import { describe, expect, it } from "@effect/vitest"
import type { AggregationQuery } from "@keymeter/core/Aggregation"
import type { Verification } from "@keymeter/core/Verification"
import { Engine } from "@keymeter/storage-memory/MemoryVerificationStore"
import { Partition } from "../src/internal/Partition.js"
import { Run } from "../src/internal/Run.js"

const HOUR = 3_600_000

const event = (hour: number, keyId: string, outcome: Verification["outcome"] = "valid"): Verification => ({
  time: hour * HOUR + 1234,
  workspaceId: "ws",
  apiId: "api",
  keyId,
  identity: undefined,
  outcome,
  tags: []
})

const query = (overrides: Partial<AggregationQuery> = {}): AggregationQuery => ({
  workspaceId: "ws",
  apiId: "api",
  keyIds: [],
  tags: [],
  externalId: undefined,
  start: undefined,
  end: 10_000 * HOUR,
  timeUnit: undefined,
  groupByKey: false,
  groupByIdentity: false,
  groupByTag: undefined,
  orderBy: undefined,
  order: "asc",
  limit: undefined,
  maxRows: 1000,
  ...overrides
})

describe("Run", () => {
  it("indexes distinct hours with their counters, and truncates only at an hour start", () => {
    const run = new Run()
    run.append(5, 0, 0, 0, 0)
    run.append(5, 1, 0, 0, 4)
    run.append(7, 0, 0, 0, 0)
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
  it("merges late rows by rewriting only the displaced tail, keeping posting lists exact", () => {
    const partition = new Partition(4)
    for (let h = 0; h < 100; h++) partition.add(event(h, `k${h % 3}`))
    // Late rows for hours 90..97: they displace the rows of hours 90..99 only.
    for (let h = 90; h < 98; h++) partition.add(event(h, "k1", "expired"))
    partition.maybeMerge()
    expect(partition.lateRun().length).toBe(0)
    expect(partition.main.length).toBe(108)
    const hours = partition.main.chunks[0]!.hour.subarray(0, 108)
    expect(Array.from(hours).every((h, i) => i === 0 || hours[i - 1]! <= h)).toBe(true)
    const k1 = partition.postings[partition.keyCodes.get("k1")!]!
    const rows = Array.from(k1.data.subarray(0, k1.length))
    expect(rows).toHaveLength(33 + 8)
    expect(rows.every((r) => partition.main.chunks[0]!.key[r] === partition.keyCodes.get("k1"))).toBe(true)
    expect(rows.every((r, i) => i === 0 || rows[i - 1]! < r)).toBe(true)
  })
})

describe("Engine", () => {
  it("answers key filters from posting lists and scans alike", () => {
    const engine = new Engine()
    const events: Array<Verification> = []
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

  it("holds an event in about 21 bytes (17 in columns, 4 in posting lists)", () => {
    const engine = new Engine()
    const batch: Array<Verification> = []
    for (let i = 0; i < 1_000_000; i++) batch.push(event(Math.floor(i / 1000), `k${i % 500}`))
    engine.append(batch)
    const stats = engine.stats()
    expect(stats.events).toBe(1_000_000)
    expect(stats.bytes / stats.events).toBeLessThan(26)
  })
})
