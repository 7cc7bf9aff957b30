import { describe, expect, it } from "@effect/vitest"
import * as Aggregation from "@keymeter/core/Aggregation"
import * as Time from "@keymeter/core/Time"
import type { Identity } from "@keymeter/core/Verification"
import * as VerificationQuery from "@keymeter/core/VerificationQuery"
import type { VerificationQuery as Query } from "@keymeter/core/VerificationQuery"
import * as Either from "effect/Either"

const at = (iso: string) => Date.parse(iso)

const query = (overrides: Partial<Query>) =>
  Aggregation.makeQuery({
    apiId: "api",
    end: at("2025-01-02T00:00:00Z"),
    workspaceId: "ws",
    maxRows: 100_000,
    ...overrides
  })

/** Accumulates result rows column by column, as an adapter answers. */
class ResultBuilder {
  size = 0
  private counts: Float64Array
  private time: Array<number> | undefined
  private keyId: Array<string> | undefined
  private identity: Array<Identity> | undefined
  private tag: Array<string> | undefined
  private tags: Array<ReadonlyArray<string>> | undefined

  constructor(readonly query: Query, capacity = 64) {
    this.counts = new Float64Array(Math.max(1, capacity) * Aggregation.OUTCOMES)
    if (query.timeUnit !== undefined) this.time = []
    if (query.groupByKey) this.keyId = []
    if (query.groupByIdentity) this.identity = []
    if (query.groupByTag === "tag") this.tag = []
    if (query.groupByTag === "tags") this.tags = []
  }

  /**
   * Adds a row; `source[offset .. offset + 9)` are its counters. Only the columns the query groups
   * by are read from `dims`.
   */
  push(
    dims: {
      readonly time?: number
      readonly keyId?: string
      readonly identity?: Identity
      readonly tag?: string
      readonly tags?: ReadonlyArray<string>
    },
    source: ArrayLike<number>,
    offset = 0
  ): void {
    const row = this.size++
    if ((row + 1) * Aggregation.OUTCOMES > this.counts.length) {
      const grown = new Float64Array(this.counts.length * 2)
      grown.set(this.counts)
      this.counts = grown
    }
    const base = row * Aggregation.OUTCOMES
    for (let o = 0; o < Aggregation.OUTCOMES; o++) this.counts[base + o] = source[offset + o]!
    if (this.time) this.time.push(dims.time!)
    if (this.keyId) this.keyId.push(dims.keyId!)
    if (this.identity) this.identity.push(dims.identity!)
    if (this.tag) this.tag.push(dims.tag!)
    if (this.tags) this.tags.push(dims.tags!)
  }

  build(): Aggregation.AggregationResult {
    return {
      size: this.size,
      counts: this.counts.subarray(0, this.size * Aggregation.OUTCOMES),
      time: this.time ? Float64Array.from(this.time) : undefined,
      keyId: this.keyId,
      identity: this.identity,
      tag: this.tag,
      tags: this.tags
    }
  }
}

/** counts: valid, notFound for each row. */
const rows = (
  q: Query,
  items: Array<{ time?: number; keyId?: string; tags?: Array<string>; valid: number; notFound?: number }>
) => {
  const builder = new ResultBuilder(q)
  for (const item of items) {
    builder.push(item, [item.valid, item.notFound ?? 0, 0, 0, 0, 0, 0, 0, 0])
  }
  return builder.build()
}

const run = (q: Query, result: Aggregation.AggregationResult, cap = 100_000) => {
  const out = Aggregation.finalize(q, result, cap)
  if (Either.isLeft(out)) throw new Error(out.left.message)
  return out.right
}

describe("Aggregation.finalize", () => {
  it("answers exactly one datapoint without grouping, zeros when nothing matched", () => {
    const q = query({})
    expect(run(q, rows(q, []))).toEqual([{
      total: 0,
      valid: 0,
      notFound: 0,
      forbidden: 0,
      usageExceeded: 0,
      rateLimited: 0,
      unauthorized: 0,
      disabled: 0,
      insufficientPermissions: 0,
      expired: 0
    }])
    const [point] = run(q, rows(q, [{ valid: 3, notFound: 1 }]))
    expect(point).toMatchObject({ total: 4, valid: 3, notFound: 1 })
    expect(point).not.toHaveProperty("time")
  })

  it("keeps counts of 2^31 and more exact (small ones are written as integers)", () => {
    const q = query({ groupByKey: true })
    const big = 2 ** 31 + 5
    const out = run(
      q,
      rows(q, [{ keyId: "a", valid: 7, notFound: 2 }, { keyId: "b", valid: big, notFound: 2 ** 31 - 1 }])
    )
    expect(out.map((p) => [p.keyId, p.valid, p.notFound, p.total])).toEqual([
      ["a", 7, 2, 9],
      ["b", big, 2 ** 31 - 1, big + 2 ** 31 - 1]
    ])
  })

  it("zero-fills every bucket from the start to the end", () => {
    const q = query({ timeUnit: "hour", start: at("2025-01-01T09:00:00Z"), end: at("2025-01-01T12:00:00Z") })
    const out = run(q, rows(q, [{ time: at("2025-01-01T10:00:00Z"), valid: 2 }]))
    expect(out.map((p) => [new Date(p.time!).toISOString(), p.total])).toEqual([
      ["2025-01-01T09:00:00.000Z", 0],
      ["2025-01-01T10:00:00.000Z", 2],
      ["2025-01-01T11:00:00.000Z", 0],
      ["2025-01-01T12:00:00.000Z", 0]
    ])
  })

  it("includes the month of start and fills months across a year boundary", () => {
    const q = query({ timeUnit: "month", start: at("2024-11-20T13:00:00Z"), end: at("2025-02-03T00:00:00Z") })
    const out = run(q, rows(q, [{ time: at("2025-01-01T00:00:00Z"), valid: 5 }]))
    expect(out.map((p) => new Date(p.time!).toISOString().slice(0, 7))).toEqual([
      "2024-11",
      "2024-12",
      "2025-01",
      "2025-02"
    ])
    expect(out.map((p) => p.total)).toEqual([0, 0, 5, 0])
  })

  it("starts the series at the first bucket with data when start is absent, and is empty without data", () => {
    const q = query({ timeUnit: "day", end: at("2025-01-03T05:00:00Z") })
    const out = run(q, rows(q, [{ time: at("2025-01-02T00:00:00Z"), valid: 1 }]))
    expect(out.map((p) => p.time)).toEqual([at("2025-01-02T00:00:00Z"), at("2025-01-03T00:00:00Z")])
    expect(run(q, rows(q, []))).toEqual([])
  })

  it("keeps series sparse when other dimensions are grouped", () => {
    const q = query({ timeUnit: "hour", groupByKey: true, start: at("2025-01-01T00:00:00Z") })
    const out = run(q, rows(q, [{ time: at("2025-01-01T05:00:00Z"), keyId: "k", valid: 1 }]))
    expect(out).toHaveLength(1)
  })

  it("orders by time, then keyId by default; order alone reverses it", () => {
    const q = query({ timeUnit: "day", groupByKey: true, start: at("2025-01-01T00:00:00Z") })
    const data = [
      { time: at("2025-01-02T00:00:00Z"), keyId: "a", valid: 1 },
      { time: at("2025-01-01T00:00:00Z"), keyId: "b", valid: 1 },
      { time: at("2025-01-01T00:00:00Z"), keyId: "a", valid: 1 }
    ]
    const asc = run(q, rows(q, data)).map((p) => `${p.time === at("2025-01-01T00:00:00Z") ? 1 : 2}${p.keyId}`)
    expect(asc).toEqual(["1a", "1b", "2a"])
    const desc = run({ ...q, order: "desc" }, rows(q, data)).map((p) =>
      `${p.time === at("2025-01-01T00:00:00Z") ? 1 : 2}${p.keyId}`
    )
    expect(desc).toEqual(["2a", "1b", "1a"])
  })

  it("orders rows by time alike whether their times come in order (as engines give them) or not", () => {
    const q = query({ timeUnit: "hour", groupByKey: true, start: at("2025-01-01T00:00:00Z") })
    let seed = 5
    const random = (n: number) => Math.floor((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648 * n)
    const data = Array.from({ length: 400 }, (_, i) => ({
      time: at("2025-01-01T00:00:00Z") + random(12) * Time.HOUR,
      keyId: `k${random(30)}`,
      valid: i + 1
    }))
    const expected = [...data].sort((a, b) => a.time - b.time || (a.keyId < b.keyId ? -1 : a.keyId > b.keyId ? 1 : 0))
      .map((d) => `${d.time} ${d.keyId} ${d.valid}`)
    const inTimeOrder = [...data].sort((a, b) => a.time - b.time)
    for (const items of [data, inTimeOrder]) {
      const out = run(q, rows(q, items))
      // Equal (time, key) rows keep their order among themselves (stable): compare as multisets per pair.
      expect(out.map((p) => `${p.time} ${p.keyId}`)).toEqual(expected.map((e) => e.split(" ").slice(0, 2).join(" ")))
      expect(out.map((p) => `${p.time} ${p.keyId} ${p.valid}`).sort()).toEqual([...expected].sort())
    }
  })
  it("breaks orderBy ties by the default ordering, ascending, whatever the order", () => {
    const q = query({ groupByKey: true, orderBy: "total", order: "desc" })
    const data = [
      { keyId: "c", valid: 5 },
      { keyId: "b", valid: 7 },
      { keyId: "a", valid: 5 },
      { keyId: "d", valid: 1, notFound: 4 }
    ]
    expect(run(q, rows(q, data)).map((p) => p.keyId)).toEqual(["b", "a", "c", "d"])
    expect(run({ ...q, orderBy: "valid" }, rows(q, data)).map((p) => p.keyId)).toEqual(["b", "a", "c", "d"])
    expect(run({ ...q, orderBy: "notFound", order: "asc" }, rows(q, data)).map((p) => p.keyId))
      .toEqual(["a", "b", "c", "d"])
  })

  // Counts are sorted as one number packing value and position; bucket starts (~1.7e12 ms) of
  // thousands of rows would not pack exactly and are compared instead: both orders must agree.
  it("orders thousands of rows by a count or by time, ties in the default ordering", () => {
    let seed = 3
    const random = (n: number) => Math.floor((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648 * n)
    const compareKeys = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)
    const q = query({ timeUnit: "hour", groupByKey: true, start: at("2025-01-01T00:00:00Z") })
    const seen = new Set<string>()
    const data = Array.from({ length: 8000 }, () => ({
      time: at("2025-01-01T00:00:00Z") + random(500) * Time.HOUR,
      keyId: `k${random(40)}`,
      valid: random(25)
    })).filter((d) => !seen.has(`${d.time} ${d.keyId}`) && seen.add(`${d.time} ${d.keyId}`))
    expect(data.length).toBeGreaterThan(6000)
    const byDefault = (a: (typeof data)[number], b: (typeof data)[number]) =>
      a.time - b.time || compareKeys(a.keyId, b.keyId)
    const name = (d: { time?: number | undefined; keyId?: string | undefined }) => `${d.time} ${d.keyId}`
    for (const order of ["asc", "desc"] as const) {
      const sign = order === "asc" ? 1 : -1
      const byValid = [...data].sort((a, b) => sign * (a.valid - b.valid) || byDefault(a, b)).map(name)
      expect(run({ ...q, orderBy: "valid", order }, rows(q, data)).map(name)).toEqual(byValid)
      const byTime = [...data].sort((a, b) => sign * (a.time - b.time) || byDefault(a, b)).map(name)
      expect(run({ ...q, orderBy: "time", order }, rows(q, data)).map(name)).toEqual(byTime)
    }
  })

  it("applies limit after ordering; the top-N selection equals a full sort", () => {
    const q = query({ groupByKey: true, orderBy: "total", order: "desc", limit: 3 })
    let seed = 7
    const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648
    const data = Array.from({ length: 500 }, (_, i) => ({ keyId: `k${i}`, valid: Math.floor(random() * 20) }))
    const top = run(q, rows(q, data)).map((p) => p.keyId)
    const all = run({ ...q, limit: undefined }, rows(q, data)).map((p) => p.keyId)
    expect(top).toEqual(all.slice(0, 3))
    expect(run({ ...q, limit: 1000 }, rows(q, data))).toHaveLength(500)
  })

  it("orders by an adapter's ranks of its columns as by their values, however wide the ranks", () => {
    const q = query({ timeUnit: "day", groupByKey: true, groupByTag: "tags", start: at("2025-01-01T00:00:00Z") })
    let seed = 11
    const random = (n: number) => Math.floor((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648 * n)
    const keys = ["k10", "k2", "k1", "a", "k20"]
    const tagsets = [[], ["b"], ["a", "b"], ["a,b"], ["c"]]
    const data = Array.from({ length: 300 }, () => ({
      time: at("2025-01-01T00:00:00Z") + random(2) * Time.DAY,
      keyId: keys[random(keys.length)]!,
      tags: tagsets[random(tagsets.length)]!,
      valid: 1 + random(5)
    }))
    const plain = rows(q, data)
    const expected = run(q, plain)
    // A dictionary's ranks: sorted values, ties (tag sets joining alike) sharing one; spread
    // `stride` apart, as a large dictionary's are among an answer's few rows.
    const ranksOf = <A>(values: ReadonlyArray<A>, key: (a: A) => string, stride: number) => {
      const distinct = [...new Set(values.map(key))].sort()
      return {
        ranks: Uint32Array.from(values, (v) => distinct.indexOf(key(v)) * stride),
        count: (distinct.length - 1) * stride + 1
      }
    }
    for (const stride of [1, 1000]) {
      const ranked = {
        ...plain,
        ranks: {
          keyId: ranksOf(plain.keyId!, (k) => k, stride),
          tags: ranksOf(plain.tags!, (t) => t.join(","), stride)
        }
      }
      expect(run(q, ranked)).toEqual(expected)
      expect(run({ ...q, orderBy: "valid", order: "desc", limit: 40 }, ranked))
        .toEqual(run({ ...q, orderBy: "valid", order: "desc", limit: 40 }, plain))
    }
    // Ranks that disagree with the values are followed (the adapter's word): keys reversed.
    const reversed = { ...plain, ranks: { keyId: ranksOf(plain.keyId!, (k) => k, 1) } }
    const n = reversed.ranks.keyId.count
    reversed.ranks.keyId.ranks.forEach((r, i, a) => (a[i] = n - 1 - r))
    expect(run(q, reversed).map((p) => p.keyId)).not.toEqual(expected.map((p) => p.keyId))
  })

  it("fails with QueryTooLarge over the cap, counting zero-filled buckets", () => {
    const q = query({ timeUnit: "hour", start: 0, end: 1000 * Time.HOUR })
    const result = Aggregation.finalize(q, rows(q, []), 100)
    expect(Either.isLeft(result) && result.left._tag).toBe("QueryTooLarge")
    const sparse = query({ groupByKey: true })
    const many = rows(sparse, Array.from({ length: 11 }, (_, i) => ({ keyId: `k${i}`, valid: 1 })))
    expect(Either.isLeft(Aggregation.finalize(sparse, many, 10))).toBe(true)
    expect(Either.isRight(Aggregation.finalize({ ...sparse, limit: 1 }, many, 11))).toBe(true)
  })
})

describe("Aggregation.expandTags", () => {
  it("counts a row once per tag, merges equal tags and drops untagged rows", () => {
    const q = query({ groupByTag: "tags" })
    const result = rows(q, [
      { tags: ["a", "b"], valid: 2 },
      { tags: ["b"], valid: 3 },
      { tags: [], valid: 100 }
    ])
    const expanded = Aggregation.expandTags({ ...q, groupByTag: "tag" }, result)
    const out = run({ ...q, groupByTag: "tag" }, expanded)
    expect(out.map((p) => [p.tag, p.total])).toEqual([["a", 2], ["b", 5]])
  })

  it("adds up credits as it adds up counters, when the result sums them", () => {
    const q = query({ groupByTag: "tags" })
    const counted = rows(q, [
      { tags: ["a", "b"], valid: 2 },
      { tags: ["b"], valid: 3 },
      { tags: [], valid: 100 }
    ])
    // Credits of the valid counter of each row: 10, 7 and 1.
    const credits = new Float64Array(counted.counts.length)
    ;[10, 7, 1].forEach((spent, row) => credits[row * Aggregation.OUTCOMES] = spent)
    const expanded = Aggregation.expandTags({ ...q, groupByTag: "tag" }, { ...counted, credits })
    expect(expanded.tag).toEqual(["a", "b"])
    expect(Array.from(expanded.credits!)).toEqual([10, 0, 0, 0, 0, 0, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0, 0, 0])
    expect(Aggregation.expandTags({ ...q, groupByTag: "tag" }, counted).credits).toBeUndefined()
  })
})

describe("Aggregation.addCounters", () => {
  it("adds every outcome's counter of one row to another row, and nothing else", () => {
    const n = Aggregation.OUTCOMES
    const into = new Float64Array(3 * n).fill(1)
    const from = Float64Array.from({ length: 2 * n }, (_, i) => i + 1)
    Aggregation.addCounters(into, n, from, n)
    expect(Array.from(into)).toEqual([
      ...Array(n).fill(1),
      ...Array.from({ length: n }, (_, o) => 1 + n + o + 1),
      ...Array(n).fill(1)
    ])
  })
})

describe("Aggregation.aggregationQuery", () => {
  it("gives every path's query the same fields in the same order, present when absent", () => {
    const normalized = VerificationQuery.normalize(
      { apiId: "api_1", groupBy: ["tags", "day", "key"], limit: 5, orderBy: "valid", order: "desc", tag: ["b"] },
      Date.UTC(2026, 0, 2)
    )
    if (Either.isLeft(normalized)) throw normalized.left
    const caller = Aggregation.aggregationQuery(normalized.right, "ws_1", 100)
    const built = Aggregation.makeQuery({
      maxRows: 3,
      sumCredits: true,
      end: 7,
      apiId: "a",
      workspaceId: "w",
      limit: 2
    })
    const bare = Aggregation.makeQuery({ workspaceId: "w", apiId: "a", end: 7, maxRows: 3 })
    // The same keys in the same order: one hidden class for the engine's optimized code.
    expect(Object.keys(built)).toEqual(Object.keys(caller))
    expect(Object.keys(bare)).toEqual(Object.keys(caller))
    expect(caller).toMatchObject({
      workspaceId: "ws_1",
      maxRows: 100,
      groupByKey: true,
      groupByTag: "tags",
      tags: ["b"]
    })
    expect(built).toMatchObject({ sumCredits: true, limit: 2, keyIds: [], order: "asc", groupByKey: false })
    expect(bare.sumCredits).toBeUndefined()
  })
})
