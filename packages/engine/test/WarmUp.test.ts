import { describe, expect, it } from "@effect/vitest"
import * as Aggregation from "@keymeter/core/Aggregation"
import { Engine } from "@keymeter/engine/Engine"
import type { Partition } from "../src/internal/Partition.js"
import * as WarmUp from "../src/internal/WarmUp.js"

const HOUR = 3_600_000
const FIRST_HOUR = 480_000

/**
 * An engine holding `rows` events of api "big" (and a few of "small") over three days: 500 keys,
 * 40 identities, tag sets of up to two tags.
 */
const engineWith = (rows: number, options: { readonly warmUp?: boolean } = {}) => {
  const engine = new Engine(options)
  const small = engine.load("ws", "small", { replace: false })
  small.add(FIRST_HOUR, small.keyCode("s"), 0, 0, 0, 10)
  small.flush()
  const load = engine.load("ws", "big", { replace: false })
  const keys = Array.from({ length: 500 }, (_, k) => load.keyCode(`key_${k}`))
  const identities = Array.from(
    { length: 40 },
    (_, i) => i === 0 ? 0 : load.identityCode({ id: `id_${i}`, externalId: `ext_${i}` })
  )
  const tagsets = [[], ["a"], ["b"], ["a", "b"]].map((tags) => tags.length === 0 ? 0 : load.tagsetCode(tags))
  const perHour = Math.ceil(rows / 72)
  for (let n = 0; n < rows; n += 4) {
    const k = (n * 7919) % keys.length
    load.add(FIRST_HOUR + Math.floor(n / perHour), keys[k]!, identities[k % 40]!, tagsets[k % 4]!, n % 9, 4)
  }
  load.flush()
  return engine
}

const probe = Aggregation.makeQuery({
  workspaceId: "ws",
  apiId: "big",
  end: (FIRST_HOUR + 72) * HOUR,
  maxRows: 100_000,
  timeUnit: "day",
  groupByKey: true,
  groupByTag: "tag"
})

describe("WarmUp", () => {
  it("asks one query of each loop of the apis it chooses, in turn, over their newest week, each answered", () => {
    const engine = engineWith(80_000, { warmUp: false })
    const partitions = (engine as unknown as { partitions: Map<string, Map<string, Partition>> }).partitions.get("ws")!
    const apis = [...partitions].map(([apiId, partition]) => ({ workspaceId: "ws", apiId, partition }))
    // "small" holds less than a chunk: only "big" is read.
    expect(WarmUp.choose(apis).map((a) => a.apiId)).toEqual(["big"])
    const queries = WarmUp.queries(WarmUp.choose(apis), true, 0)
    // Each grouping x filter combination (8), without a time unit and with one; the 4 groupings of
    // one dimension with a top N and without; top keys and keys with identities by total, per day
    // and per month, key-filtered and not.
    expect(queries).toHaveLength((1 + 4 * 2 + 7) * 8 * 2 + 2 * 2 * 2)
    expect(new Set(queries.map((q) => q.apiId))).toEqual(new Set(["big"]))
    const newest = (FIRST_HOUR + 72) * HOUR
    expect(queries.every((q) => q.start! >= newest - 8 * 24 * HOUR && q.end < newest && q.start! <= q.end)).toBe(true)
    for (
      const asked of [
        (q: Aggregation.AggregationQuery) => q.groupByKey && q.groupByTag === "tag",
        (q: Aggregation.AggregationQuery) => q.groupByIdentity && q.timeUnit !== undefined,
        (q: Aggregation.AggregationQuery) => q.keyIds.length > 1 && q.tags.length > 0 && q.externalId !== undefined,
        (q: Aggregation.AggregationQuery) => q.limit !== undefined,
        (q: Aggregation.AggregationQuery) => q.timeUnit === "day" && q.groupByIdentity && q.orderBy === "total",
        (q: Aggregation.AggregationQuery) => q.sumCredits === true
      ]
    ) expect(queries.some(asked)).toBe(true)
    const target = { aggregate: (query: Aggregation.AggregationQuery) => engine.aggregate(query), writes: () => 0 }
    expect(queries.filter((q) => WarmUp.ask(target, q))).toHaveLength(queries.length)
    expect(WarmUp.current()).toBeUndefined()
  })

  it("then asks dashboards' queries over windows up to 90 days anywhere in the data, each within its rows' budget", () => {
    // 90 days of an api, 16,000 rows an hour in three of them: more than the budget together.
    const engine = new Engine({ warmUp: false })
    const load = engine.load("ws", "long", { replace: false })
    const keys = Array.from({ length: 50 }, (_, k) => load.keyCode(`key_${k}`))
    const tag = load.tagsetCode(["a"])
    const hours = 90 * 24
    for (let h = 0; h < hours; h++) {
      const rows = h >= 30 * 24 && h < 33 * 24 ? 16_000 : 20
      for (let n = 0; n < rows; n++) load.add(FIRST_HOUR + h, keys[(h + n) % 50]!, 0, n % 2 === 0 ? tag : 0, n % 9, 4)
    }
    load.flush()
    const partition = (engine as unknown as { partitions: Map<string, Map<string, Partition>> }).partitions.get("ws")!
      .get("long")!
    const apis = [{ workspaceId: "ws", apiId: "long", partition }]
    expect(partition.main.length).toBeGreaterThan(WarmUp.DASHBOARD_ROWS)
    const queries = WarmUp.queries(apis, false).slice(WarmUp.queries(apis, false, 0).length)
    expect(queries).toHaveLength(WarmUp.DASHBOARDS)
    const first = FIRST_HOUR * HOUR
    const last = (FIRST_HOUR + hours) * HOUR
    const rowsOf = (q: Aggregation.AggregationQuery) => {
      const [a, b] = partition.main.rows(Math.floor(q.start! / HOUR), Math.floor(q.end / HOUR))
      return b - a
    }
    expect(queries.every((q) => q.start! >= first && q.end < last && q.start! <= q.end)).toBe(true)
    expect(queries.every((q) => rowsOf(q) <= WarmUp.DASHBOARD_ROWS)).toBe(true)
    // Windows of every length: within an hour, over a month, and cut to the budget over the busy days.
    expect(queries.some((q) => q.end - q.start! < HOUR)).toBe(true)
    expect(queries.some((q) => q.end - q.start! > 30 * 24 * HOUR)).toBe(true)
    expect(queries.some((q) => rowsOf(q) > WarmUp.DASHBOARD_ROWS / 2)).toBe(true)
    for (const unit of [undefined, "hour", "day", "month"]) expect(queries.some((q) => q.timeUnit === unit)).toBe(true)
    expect(queries.some((q) => q.limit !== undefined)).toBe(true)
    expect(queries.some((q) => q.keyIds.length > 0)).toBe(true)
    const target = { aggregate: (query: Aggregation.AggregationQuery) => engine.aggregate(query), writes: () => 0 }
    expect(queries.filter((q) => WarmUp.ask(target, q))).toHaveLength(queries.length)
  })

  it("chooses the largest api and up to three others spread over the sizes", () => {
    const apis = [9, 1, 5, 3, 7, 2, 8, 0.5].map((chunks, i) => ({
      workspaceId: "ws",
      apiId: `api_${i}`,
      partition: { size: chunks * 65_536, main: { length: chunks * 65_536 } } as unknown as Partition
    }))
    const chosen = WarmUp.choose(apis)
    expect(chosen.map((a) => a.apiId)).toEqual(["api_0", "api_4", "api_3", "api_1"])
  })

  it("asks composite groupings of the largest api and of the smallest, the others of each in turn", () => {
    const apis = [3, 1].map((chunks) => ({
      workspaceId: "ws",
      apiId: `api_${chunks}`,
      partition: {
        size: chunks * 65_536,
        main: { length: chunks * 65_536, lastHour: FIRST_HOUR },
        keyIds: ["k0", "k1"],
        tagNames: ["a"],
        externalIds: ["", "e1"]
      } as unknown as Partition
    }))
    const queries = WarmUp.queries(apis, false, 0)
    // No grouping once, 4 of one dimension with a top N and without, 7 composite ones over each
    // api; each x 8 filters x 2. Top keys by day and month (with identities: composite) over the largest.
    expect(queries).toHaveLength((1 + 4 * 2 + 7 * 2) * 8 * 2 + 2 * 2 * 2)
    const composite = queries.filter((q) =>
      [q.groupByKey, q.groupByIdentity, q.groupByTag !== undefined].filter(Boolean).length >= 2
    )
    expect(composite.filter((q) => q.apiId === "api_3")).toHaveLength(7 * 8 * 2 + 2 * 2)
    expect(composite.filter((q) => q.apiId === "api_1")).toHaveLength(7 * 8 * 2)
    expect(queries.filter((q) => q.apiId === "api_1").length).toBeGreaterThan(7 * 8 * 2)
    expect(queries.some((q) => q.sumCredits === true)).toBe(false)
  })

  it("runs once per thread when an engine first holds four chunks of an api, and changes no answer", async () => {
    // Below the size, or turned off: nothing is scheduled.
    engineWith(WarmUp.ROWS - 4096)
    engineWith(WarmUp.ROWS, { warmUp: false })
    expect(WarmUp.current()).toBeUndefined()
    const engine = engineWith(WarmUp.ROWS)
    const before = engine.aggregate(probe)
    const running = WarmUp.current()
    expect(running).toBeDefined()
    // A second large engine of the thread finds it scheduled.
    engineWith(WarmUp.ROWS)
    expect(WarmUp.current()).toBe(running)
    expect(await running).toBe((1 + 4 * 2 + 7) * 8 * 2 + 2 * 2 * 2 + WarmUp.DASHBOARDS)
    expect(engine.stats().events).toBe(WarmUp.ROWS + 10)
    expect(engine.aggregate(probe)).toEqual(before)
  })
})
