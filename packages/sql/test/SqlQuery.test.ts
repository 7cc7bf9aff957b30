import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { Limits } from "../src/SqlQuery.js"
import * as SqlQuery from "../src/SqlQuery.js"
import type { Family } from "../src/Tables.js"
import type { Decision, Event } from "./Columns.js"
import { ratelimitScan, verificationScan } from "./Columns.js"

const T0 = Date.UTC(2026, 0, 30, 22, 30) // a Friday
const MIN = 60_000

/** 600 events a minute apart in ws_1 (api_a and api_b), and some of another workspace. */
const events: Array<Event> = Array.from({ length: 700 }, (_, i) => ({
  workspaceId: i >= 600 ? "ws_other" : "ws_1",
  time: T0 + i * MIN,
  apiId: i % 3 === 0 ? "api_a" : "api_b",
  keyId: `key_${i % 7}`,
  identityId: i % 2 === 1 ? "id_1" : "",
  externalId: i % 2 === 1 ? "user_1" : "",
  outcome: i % 5 === 0 ? "rateLimited" : i % 11 === 0 ? "usageExceeded" : "valid",
  tags: i % 4 === 0 ? ["a", "b"] : i % 4 === 1 ? ["b"] : [],
  spentCredits: i % 3,
  latency: (i % 10) / 4,
  region: i % 2 === 0 ? "fra" : "iad"
}))

const decisions: Array<Decision> = Array.from({ length: 300 }, (_, i) => ({
  workspaceId: "ws_1",
  time: T0 + i * MIN,
  namespaceId: i % 2 === 0 ? "ns_a" : "ns_b",
  identifier: `user_${i % 5}`,
  passed: i % 4 !== 0,
  latency: 0.5,
  overrideId: i % 10 === 0 ? "ovr_1" : ""
}))

const mine = events.filter((e) => e.workspaceId === "ws_1")

const run = (
  text: string,
  options: {
    family?: Family
    within?: ReadonlyArray<string>
    limits?: Partial<Limits>
    rowBytes?: SqlQuery.Options["rowBytes"]
    onScan?: (maxRows: number) => void
  } = {}
) =>
  SqlQuery.run(text, {
    family: options.family ?? "verifications",
    workspaceId: "ws_1",
    within: options.within,
    verifications: (scope) => {
      options.onScan?.(scope.maxRows)
      return verificationScan(events, 64)(scope)
    },
    ratelimits: ratelimitScan(decisions, 64),
    rowBytes: options.rowBytes,
    limits: { ...SqlQuery.DEFAULT_LIMITS, ...options.limits },
    now: T0 + 600 * MIN
  })

const rows = (text: string, options?: Parameters<typeof run>[1]) => Effect.map(run(text, options), (a) => a.rows)

const failure = (text: string, options?: Parameters<typeof run>[1]) =>
  Effect.map(Effect.exit(run(text, options)), (exit) => {
    if (Exit.isSuccess(exit) || exit.cause._tag !== "Fail") throw new Error(`expected a failure: ${text}`)
    return exit.cause.error
  })

const countBy = <A>(items: ReadonlyArray<A>, key: (a: A) => string) => {
  const out = new Map<string, number>()
  for (const item of items) out.set(key(item), (out.get(key(item)) ?? 0) + 1)
  return out
}

describe("SqlQuery", () => {
  it.effect("counts, groups, orders and limits the caller's rows only", () =>
    Effect.gen(function*() {
      expect(yield* rows("SELECT count(*) AS n FROM key_verifications_v1")).toEqual([{ n: 600 }])
      const byKey = countBy(mine, (e) => e.keyId)
      const top = [...byKey].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(1, 3)
      expect(
        yield* rows(
          "SELECT key_id, count() AS total FROM key_verifications_v1 GROUP BY key_id ORDER BY total DESC, key_id LIMIT 1, 2"
        )
      ).toEqual(top.map(([key_id, total]) => ({ key_id, total })))
      expect(yield* rows("SELECT count() AS n FROM key_verifications_v1 WHERE workspace_id = 'ws_other'")).toEqual([{
        n: 0
      }])
      expect(
        yield* rows("SELECT outcome, count() AS n FROM key_verifications_v1 GROUP BY outcome ORDER BY outcome")
      ).toEqual(
        [...countBy(mine, (e) => e.outcome.replace(/[A-Z]/g, (c) => "_" + c).toUpperCase())].sort().map(
          ([outcome, n]) => ({ outcome, n })
        )
      )
    }))

  it.effect("sums, averages, conditional and distinct counts", () =>
    Effect.gen(function*() {
      const [row] = yield* rows(
        "SELECT sum(spent_credits) AS credits, countIf(outcome = 'VALID') AS valid, sumIf(spent_credits, key_id = 'key_1') AS k1, " +
          "uniq(key_id) AS keys, count(DISTINCT region) AS regions, min(time) AS first, max(latency) AS slowest, avg(latency) AS mean " +
          "FROM key_verifications_v1"
      )
      expect(row).toEqual({
        credits: mine.reduce((s, e) => s + e.spentCredits, 0),
        valid: mine.filter((e) => e.outcome === "valid").length,
        k1: mine.filter((e) => e.keyId === "key_1").reduce((s, e) => s + e.spentCredits, 0),
        keys: 7,
        regions: 2,
        first: T0,
        slowest: 2.25,
        mean: mine.reduce((s, e) => s + e.latency, 0) / mine.length
      })
    }))

  it.effect("buckets times in UTC: minute, hour, day, Sunday weeks, months; INTERVAL arithmetic", () =>
    Effect.gen(function*() {
      const t = Date.UTC(2026, 0, 30, 22, 31, 17, 5)
      const [row] = yield* rows(
        `SELECT toStartOfMinute(${t}) AS m, toStartOfHour(${t}) AS h, toStartOfDay(${t}) AS d, toDate(${t}) AS dd, ` +
          `toStartOfWeek(${t}) AS w, toMonday(${t}) AS mo, toStartOfMonth(${t}) AS mon, ${t} - INTERVAL 1 MONTH AS back, ` +
          `${Date.UTC(2026, 2, 31)} - INTERVAL 1 MONTH AS clamp, now() - INTERVAL 2 DAY AS ago`
      )
      expect(row).toEqual({
        m: Date.UTC(2026, 0, 30, 22, 31),
        h: Date.UTC(2026, 0, 30, 22),
        d: Date.UTC(2026, 0, 30),
        dd: Date.UTC(2026, 0, 30),
        w: Date.UTC(2026, 0, 25),
        mo: Date.UTC(2026, 0, 26),
        mon: Date.UTC(2026, 0, 1),
        back: Date.UTC(2025, 11, 30, 22, 31, 17, 5),
        clamp: Date.UTC(2026, 1, 28),
        ago: T0 + 600 * MIN - 2 * 86_400_000
      })
    }))

  it.effect("a rollup table is the raw table grouped by its bucket", () =>
    Effect.gen(function*() {
      const fromRollup = yield* rows(
        "SELECT time, sum(count) AS n, sum(spent_credits) AS c FROM key_verifications_per_hour_v1 " +
          "WHERE key_space_id = 'api_a' GROUP BY time ORDER BY time"
      )
      const fromRaw = yield* rows(
        "SELECT toStartOfHour(time) AS time, count() AS n, sum(spent_credits) AS c FROM key_verifications_v1 " +
          "WHERE key_space_id = 'api_a' GROUP BY time ORDER BY time"
      )
      expect(fromRollup).toEqual(fromRaw)
      expect(fromRollup.length).toBeGreaterThan(5)
      const windowed = yield* rows(
        `SELECT sum(count) AS n FROM key_verifications_per_day_v1 WHERE time >= ${Date.UTC(2026, 0, 31)} ` +
          `AND time < ${Date.UTC(2026, 1, 1)}`
      )
      // Rows of the rollup are counted as the full rollup holds them (every dimension), whatever
      // the query reads; sums of its measures equal the raw counts.
      const [rollup] = yield* rows(
        "SELECT count() AS rows, sum(count) AS events, uniq(key_id) AS keys FROM key_verifications_per_hour_v1"
      )
      const distinct = new Set(
        mine.map((e) =>
          JSON.stringify([Math.floor(e.time / 3_600_000), e.apiId, e.keyId, e.identityId, e.outcome, e.tags])
        )
      )
      expect(rollup).toEqual({ rows: distinct.size, events: mine.length, keys: 7 })
      expect(yield* rows("SELECT sum(count) AS events, max(key_id) AS last FROM key_verifications_per_hour_v1"))
        .toEqual([{ events: mine.length, last: "key_6" }])
      expect(windowed).toEqual([{
        n: mine.filter((e) => e.time >= Date.UTC(2026, 0, 31) && e.time < Date.UTC(2026, 1, 1)).length
      }])
    }))

  it.effect("a rollup's rows are counted in full by any sum that is not of a measure", () =>
    Effect.gen(function*() {
      const rollupRows = new Set(
        mine.map((e) =>
          JSON.stringify([Math.floor(e.time / 86_400_000), e.apiId, e.keyId, e.identityId, e.outcome, e.tags])
        )
      )
      const perRow = [...rollupRows].map((row) =>
        JSON.parse(row) as [number, string, string, string, string, Array<string>]
      )
      // sum(length(key_id)) adds one length per rollup row, not per distinct key_id.
      expect(yield* rows("SELECT sum(length(key_id)) AS chars, sum(count) AS n FROM key_verifications_per_day_v1"))
        .toEqual([{ chars: perRow.reduce((sum, row) => sum + row[2].length, 0), n: mine.length }])
      expect(yield* rows("SELECT sum(has(tags, 'a')) AS tagged FROM key_verifications_per_day_v1")).toEqual([{
        tagged: perRow.filter((row) => row[5].includes("a")).length
      }])
    }))

  it.effect("arrays compare element by element in min and max", () =>
    Effect.gen(function*() {
      expect(yield* rows("SELECT min(tags) AS lo, max(tags) AS hi FROM key_verifications_v1")).toEqual([{
        lo: [],
        hi: ["b"]
      }])
      // Element-wise ["b"] < ["b", "a"] < ["b c"]; compared as joined text, "b,a" would be the max.
      expect(
        yield* rows(
          "SELECT max(t) AS hi, min(t) AS lo FROM (SELECT ['b c'] AS t UNION ALL SELECT ['b', 'a'] UNION ALL SELECT ['b'])"
        )
      ).toEqual([{ hi: ["b c"], lo: ["b"] }])
    }))

  it.effect("a small LIMIT after ORDER BY picks the rows a full sort would, ties in the order rows came", () =>
    Effect.gen(function*() {
      const base = "SELECT key_id, time, spent_credits AS c FROM key_verifications_v1 ORDER BY c DESC, key_id"
      const all = yield* rows(base)
      expect(all).toHaveLength(600)
      for (const [offset, limit] of [[0, 1], [0, 7], [3, 5], [95, 20]] as const) {
        expect(yield* rows(`${base} LIMIT ${limit} OFFSET ${offset}`)).toEqual(all.slice(offset, offset + limit))
      }
    }))

  it.effect("the first groups of many are the ones a full sort gives, HAVING and NULLs as ordered", () =>
    Effect.gen(function*() {
      // 600 groups of (key, minute) and of minute alone: a LIMIT under a quarter of them picks
      // groups by their ORDER BY values before building rows.
      const base = "SELECT key_id, toStartOfMinute(time) AS m, count() AS n, " +
        "if(spent_credits > 0, sum(spent_credits), NULL) AS c FROM key_verifications_v1 " +
        "GROUP BY key_id, m, spent_credits HAVING n > 0 AND m % 7 != 3 ORDER BY c DESC, m"
      // A string term read from each group as compared, between numeric ones kept typed.
      const byKey = base.replace("ORDER BY c DESC, m", "ORDER BY c DESC, key_id DESC, m")
      const all = yield* rows(base)
      expect(all.length).toBeGreaterThan(400)
      expect(all.at(-1)!.c).toBeNull()
      for (const [offset, limit] of [[0, 1], [0, 9], [40, 30], [all.length - 5, 10]] as const) {
        expect(yield* rows(`${base} LIMIT ${limit} OFFSET ${offset}`)).toEqual(all.slice(offset, offset + limit))
      }
      const allByKey = yield* rows(byKey)
      expect(allByKey).not.toEqual(all)
      for (const [offset, limit] of [[0, 1], [0, 9], [40, 30], [all.length - 5, 10]] as const) {
        expect(yield* rows(`${byKey} LIMIT ${limit} OFFSET ${offset}`)).toEqual(allByKey.slice(offset, offset + limit))
      }
      const single = "SELECT toStartOfMinute(time) AS m, countIf(outcome = 'VALID') AS v FROM key_verifications_v1 " +
        "GROUP BY m ORDER BY v, m DESC"
      const minutes = yield* rows(single)
      expect(yield* rows(`${single} LIMIT 12`)).toEqual(minutes.slice(0, 12))
    }))

  it.effect("a name may be top, and EXCEPT may take a parenthesized query", () =>
    Effect.gen(function*() {
      expect(
        yield* rows(
          "WITH top AS (SELECT key_id AS kid, count() AS n FROM key_verifications_v1 GROUP BY kid " +
            "ORDER BY n DESC, kid LIMIT 2) SELECT top.kid AS k FROM top ORDER BY k"
        )
      ).toHaveLength(2)
      expect(
        yield* rows(
          "SELECT DISTINCT key_id FROM key_verifications_v1 EXCEPT (SELECT key_id FROM key_verifications_v1 " +
            "WHERE key_id != 'key_3')"
        )
      ).toEqual([{ key_id: "key_3" }])
      expect((yield* failure("SELECT TOP 5 key_id FROM key_verifications_v1")).message).toMatch(/SELECT TOP/)
    }))

  it.effect("CTEs, subqueries in FROM and IN, UNION ALL, UNION DISTINCT, EXCEPT, DISTINCT", () =>
    Effect.gen(function*() {
      expect(
        yield* rows(
          "WITH per AS (SELECT key_id, count() AS c FROM key_verifications_v1 GROUP BY key_id), " +
            "big AS (SELECT key_id FROM per WHERE c >= 86) SELECT count() AS n FROM big"
        )
      ).toEqual([{ n: [...countBy(mine, (e) => e.keyId).values()].filter((c) => c >= 86).length }])
      expect(
        yield* rows(
          "SELECT k, n FROM (SELECT key_id AS k, count() AS n FROM key_verifications_v1 WHERE key_id IN " +
            "(SELECT key_id FROM key_verifications_v1 WHERE spent_credits = 2 AND key_id < 'key_2') GROUP BY k) ORDER BY k"
        )
      ).toEqual([{ k: "key_0", n: 86 }, { k: "key_1", n: 86 }])
      expect(yield* rows("SELECT 1 AS x UNION ALL SELECT 1 UNION ALL SELECT 2")).toEqual([{ x: 1 }, { x: 1 }, { x: 2 }])
      expect(yield* rows("SELECT 1 AS x UNION DISTINCT SELECT 1")).toEqual([{ x: 1 }])
      expect(
        yield* rows(
          "SELECT DISTINCT key_id FROM key_verifications_v1 EXCEPT SELECT key_id FROM key_verifications_v1 " +
            "WHERE key_id != 'key_3'"
        )
      ).toEqual([{ key_id: "key_3" }])
      expect(yield* rows("SELECT DISTINCT region FROM key_verifications_v1 ORDER BY region")).toEqual([
        { region: "fra" },
        { region: "iad" }
      ])
    }))

  it.effect("tags: has, arrayJoin; CASE, LIKE, BETWEEN, IN, aliases in WHERE and GROUP BY", () =>
    Effect.gen(function*() {
      expect(yield* rows("SELECT count() AS n FROM key_verifications_v1 WHERE has(tags, 'a')")).toEqual([{
        n: mine.filter((e) => e.tags.includes("a")).length
      }])
      expect(
        yield* rows("SELECT arrayJoin(tags) AS tag, count() AS n FROM key_verifications_v1 GROUP BY tag ORDER BY tag")
      ).toEqual([
        { tag: "a", n: mine.filter((e) => e.tags.includes("a")).length },
        { tag: "b", n: mine.filter((e) => e.tags.includes("b")).length }
      ])
      expect(
        yield* rows(
          "SELECT CASE WHEN latency < 1 THEN 'fast' ELSE 'slow' END AS speed, count() AS n FROM key_verifications_v1 " +
            "WHERE key_id LIKE 'key\\\\_%' AND spent_credits BETWEEN 1 AND 2 AND region IN ('fra') GROUP BY speed ORDER BY speed"
        )
      ).toEqual(["fast", "slow"].map((speed) => ({
        speed,
        n: mine.filter((e) => e.spentCredits >= 1 && e.region === "fra" && (e.latency < 1 ? "fast" : "slow") === speed)
          .length
      })))
    }))

  it.effect("reads decisions on the rate-limit family, and refuses the other family's tables", () =>
    Effect.gen(function*() {
      expect(
        yield* rows(
          "SELECT namespace_id, sum(passed) AS passed, sum(total) AS total FROM ratelimits_per_minute_v1 " +
            "GROUP BY namespace_id ORDER BY namespace_id",
          { family: "ratelimits" }
        )
      ).toEqual([
        { namespace_id: "ns_a", passed: 75, total: 150 },
        { namespace_id: "ns_b", passed: 150, total: 150 }
      ])
      const error = yield* failure("SELECT count() FROM ratelimits_v1")
      expect(error._tag).toBe("InvalidQuery")
      expect(error.message).toContain("this route reads verifications only")
    }))

  it.effect("names each refused construct and its line and column", () =>
    Effect.gen(function*() {
      const cases: Array<[string, string]> = [
        ["SELECT count() FROM key_verifications_v1 JOIN x ON 1", "JOIN is not supported (line 1, column 42)"],
        ["SELECT\n  count()\nFROM numbers(10)", "table functions are not supported (numbers(…)) (line 3, column 6)"],
        ["SELECT sleep(1)", "unknown function sleep"],
        ["INSERT INTO x VALUES (1)", "only SELECT queries are supported, found INSERT"],
        ["SELECT 1; SELECT 2", "only one statement per query"],
        ["SELECT key_id FROM key_verifications_v1 GROUP BY outcome", "must be in GROUP BY or inside an aggregate"],
        ["SELECT count() FROM key_verifications_v1 WHERE key_id = 1", "'=' compares String with Int"],
        ["SELECT count() FROM key_verifications_v1 SETTINGS max_threads = 1", "SETTINGS is not supported"],
        ["SELECT 1 UNION SELECT 2", "UNION needs ALL or DISTINCT"],
        ["SELECT quantile(0.9)(latency) FROM key_verifications_v1", "parametric functions are not supported"],
        ["SELECT 'open", "unterminated string"],
        ["SELECT count() FROM key_verifications_v1 WHERE sum(latency) > 1", "not allowed in WHERE"],
        ["SELECT nope FROM key_verifications_v1", "unknown column nope (line 1, column 8)"],
        ["SELECT " + "(".repeat(3000) + "1" + ")".repeat(3000), "nests too deeply"],
        ["SELECT " + Array.from({ length: 1200 }, () => "1").join(" + "), "nests too deeply"]
      ]
      // Long but reasonable expressions are fine.
      expect(yield* rows("SELECT " + Array.from({ length: 500 }, () => "1").join(" + ") + " AS n")).toEqual([{
        n: 500
      }])
      for (const [text, message] of cases) {
        const error = yield* failure(text)
        expect(error._tag, text).toBe("InvalidQuery")
        expect(error.message, text).toContain(message)
      }
    }))

  it.effect("keeps the trees of recent texts, not of refused or long ones, and answers from them the same", () =>
    Effect.gen(function*() {
      const text = "SELECT key_id, count() AS n FROM key_verifications_v1 GROUP BY key_id ORDER BY key_id"
      const tree = yield* SqlQuery.parse(text)
      expect(yield* SqlQuery.parse(text)).toBe(tree)
      expect(yield* SqlQuery.parse(text + " ")).not.toBe(tree)
      expect(yield* rows(text)).toEqual(yield* rows(text + " "))
      // A refused text is refused each time, with the same message.
      for (let i = 0; i < 2; i++) {
        expect((yield* Effect.flip(SqlQuery.parse("SELECT 'open"))).message).toContain("unterminated string")
      }
      const long = `SELECT '${"x".repeat(9_000)}' AS s`
      expect(yield* SqlQuery.parse(long)).not.toBe(yield* SqlQuery.parse(long))
      // The least recently used is forgotten first.
      for (let i = 0; i < 300; i++) yield* SqlQuery.parse(`SELECT ${i} AS n`)
      expect(yield* SqlQuery.parse(text)).not.toBe(tree)
      const kept = yield* SqlQuery.parse(text)
      for (let i = 0; i < 300; i++) {
        yield* SqlQuery.parse(`SELECT ${i + 1000} AS n`)
        if (i % 100 === 0) yield* SqlQuery.parse(text)
      }
      expect(yield* SqlQuery.parse(text)).toBe(kept)
    }))

  it.effect("stops at each budget with a 4xx naming it, and answers nothing", () =>
    Effect.gen(function*() {
      const result = yield* failure("SELECT time FROM key_verifications_v1", { limits: { resultRows: 100 } })
      expect(result).toMatchObject({ _tag: "QueryBudgetExceeded", budget: "resultRows" })
      const scanned = yield* failure("SELECT count() FROM key_verifications_v1", { limits: { scannedRows: 599 } })
      expect(scanned).toMatchObject({ _tag: "QueryBudgetExceeded", budget: "scannedRows" })
      // Within the budget when WHERE narrows the scan to one api.
      expect(
        yield* rows("SELECT count() AS n FROM key_verifications_v1 WHERE key_space_id = 'api_a'", {
          limits: { scannedRows: 200 }
        })
      ).toEqual([{ n: 200 }])
      const memory = yield* failure("SELECT time, key_id, count() FROM key_verifications_v1 GROUP BY time, key_id", {
        limits: { memoryBytes: 4096 }
      })
      expect(memory).toMatchObject({ _tag: "QueryBudgetExceeded", budget: "memory" })
      // A store that builds its batches (rowBytes) is asked for no more rows than the memory budget
      // holds, and the fault names memory: 600 rows of 1 KiB do not fit in 512 KiB.
      const asked: Array<number> = []
      const built = yield* failure("SELECT count() FROM key_verifications_v1", {
        limits: { memoryBytes: 512 * 1024 },
        rowBytes: { verifications: 1024 },
        onScan: (maxRows) => asked.push(maxRows)
      })
      expect(built).toMatchObject({ _tag: "QueryBudgetExceeded", budget: "memory" })
      expect(asked).toEqual([512])
      expect(
        yield* rows("SELECT count() AS n FROM key_verifications_v1 WHERE key_space_id = 'api_a'", {
          limits: { memoryBytes: 512 * 1024 },
          rowBytes: { verifications: 1024 }
        })
      ).toEqual([{ n: 200 }])
      const time = yield* failure("SELECT count() FROM key_verifications_v1", { limits: { timeMs: -1 } })
      expect(time).toMatchObject({ _tag: "QueryBudgetExceeded", budget: "time" })
    }))
  it.effect("gives way to other work, and its time budget counts its own slices only", () =>
    Effect.gen(function*() {
      // 200,000 events over 5,000 keys: a GROUP BY that runs for many slices, allocating little.
      const many: Array<Event> = Array.from({ length: 200_000 }, (_, i) => ({
        ...events[i % 600]!,
        time: T0 + (i % 36_000) * 1000,
        keyId: `key_${i % 5000}`
      }))
      const text = "SELECT key_id, countIf(key_id LIKE '%7%' OR outcome = 'VALID') AS n, " +
        "max(toStartOfMinute(time)) AS m FROM key_verifications_v1 GROUP BY key_id ORDER BY n DESC, key_id LIMIT 3"
      // The columns built once, as a store keeps them.
      const batches = yield* verificationScan(many, 4096)({
        workspaceId: "ws_1",
        within: undefined,
        from: -Infinity,
        to: Infinity,
        maxRows: Infinity
      })
      const ask = (timeMs: number) =>
        SqlQuery.run(text, {
          family: "verifications",
          workspaceId: "ws_1",
          within: undefined,
          verifications: () => Effect.succeed(batches),
          ratelimits: ratelimitScan(decisions, 64),
          limits: { ...SqlQuery.DEFAULT_LIMITS, timeMs },
          now: T0 + 600 * MIN
        })
      // Warm (the first run compiles), and its answer.
      const expected = yield* ask(SqlQuery.DEFAULT_LIMITS.timeMs)
      // Beside other work all along: tasks of 1 ms, one per turn of the event loop.
      const beside = (timeMs: number) =>
        Effect.gen(function*() {
          let busy = 0
          let stopped = false
          const task = () => {
            if (stopped) return
            const started = performance.now()
            while (performance.now() - started < 1) { /* busy */ }
            busy += performance.now() - started
            setImmediate(task)
          }
          setImmediate(task)
          const started = performance.now()
          const answer = yield* Effect.ensuring(ask(timeMs), Effect.sync(() => (stopped = true)))
          return { answer, busy, wall: performance.now() - started }
        })
      // Its own work there (the wall time the other work did not take), then a budget of twice
      // that: above what the query itself needs, under the wall time it takes while the other
      // work has most of the loop (here 2.3x and 2.5x away). A budget from the first run's wall time failed on a
      // loaded machine, where the second run went much faster than the first.
      const first = yield* beside(SqlQuery.DEFAULT_LIMITS.timeMs)
      const budget = 2 * (first.wall - first.busy)
      const { answer, busy, wall } = yield* beside(budget)
      expect(answer.rows).toEqual(expected.rows)
      // The other work had most of the loop, so the query ran past its budget in wall time and
      // still answered: the budget is its own work's.
      expect(busy / wall).toBeGreaterThan(0.5)
      expect(wall).toBeGreaterThan(budget)
    }), 300_000) // the query has a tenth of the loop, twice: many times its own time on a loaded CI machine
})
