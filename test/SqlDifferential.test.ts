/**
 * SQL analytics against an independent oracle: hundreds of seeded queries of the subset (see
 * `internal/SqlGenerator`), each answered by keymeter's `SqlQuery.run` and by DuckDB (see
 * `internal/SqlOracle`) over the same seeded corpus, must agree row for row. keymeter reads the
 * corpus through a plain scan of the events, then through each store's own `scan` after the corpus
 * went in through its `append`: memory, SQLite (a file), ClickHouse (when `KEYMETER_TEST_CLICKHOUSE`
 * names a server; CI always does).
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { QueryTooLarge } from "@keymeter/core/Errors"
import type { RatelimitColumns, ScanScope, VerificationColumns } from "@keymeter/core/EventScan"
import type { RatelimitEvent } from "@keymeter/core/RatelimitEvent"
import { RatelimitStore, VerificationStore } from "@keymeter/core/Storage"
import type { Verification } from "@keymeter/core/Verification"
import { Outcomes } from "@keymeter/core/Verification"
import { SqlEngine } from "@keymeter/sql/SqlEngine"
import * as SqlQuery from "@keymeter/sql/SqlQuery"
import * as Tables from "@keymeter/sql/Tables"
import { ClickhouseRatelimitStore, ClickhouseSql, ClickhouseVerificationStore } from "@keymeter/storage-clickhouse"
import { MemoryRatelimitStore, MemoryVerificationStore } from "@keymeter/storage-memory"
import { SqliteStorage } from "@keymeter/storage-sqlite"
import { ClickhouseTestServer } from "@keymeter/testing"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { GeneratedQuery } from "./internal/SqlGenerator.js"
import { generateQueries, makeCorpus, NOW, OUTCOME_NAME, shapeOf, WORKSPACE } from "./internal/SqlGenerator.js"
import type { Table } from "./internal/SqlOracle.js"
import { difference, Oracle } from "./internal/SqlOracle.js"

const CORPUS_SEED = 20260117
const QUERY_SEED = 424242
const QUERIES = 700

const corpus = makeCorpus(CORPUS_SEED)
const queries = generateQueries(QUERY_SEED, QUERIES, corpus)
const shapes = new Set(queries.map((q) => shapeOf(q.text))).size

/** DuckDB's answer to each query (by position in `queries`). */
let expected: Array<Table | string> = []
const summary: Array<string> = []

beforeAll(async () => {
  const oracle = await Oracle.make(corpus, WORKSPACE)
  try {
    expect(await oracle.count("key_verifications_v1")).toBe(3000)
    expect(await oracle.count("ratelimits_v1")).toBe(2000)
    expected = []
    for (const query of queries) {
      try {
        expected.push(await oracle.run(query.duck))
      } catch (error) {
        expected.push(`DuckDB failed: ${error instanceof Error ? error.message : String(error)}`)
      }
    }
  } finally {
    oracle.close()
  }
}, 60_000)

afterAll(() => {
  console.log(
    `SQL differential: ${queries.length} queries, ${shapes} shapes; ${summary.join("; ") || "no store ran"}`
  )
})

// ---------------------------------------------------------------------------------------------
// A plain scan of the corpus (as packages/sql's test helpers hand the executor events)

const dictionary = <A>(values: ReadonlyArray<A>, key: (a: A) => string = String) => {
  const codes = new Map<string, number>()
  const out: Array<A> = []
  const column = values.map((value) => {
    const k = key(value)
    let code = codes.get(k)
    if (code === undefined) {
      code = out.length
      out.push(value)
      codes.set(k, code)
    }
    return code
  })
  return { codes: Uint32Array.from(column), values: out }
}

const inScope = <A extends { readonly workspaceId: string; readonly time: number }>(
  rows: ReadonlyArray<A>,
  scope: ScanScope,
  id: (a: A) => string
) =>
  rows.filter((row) =>
    row.workspaceId === scope.workspaceId && row.time >= scope.from && row.time < scope.to &&
    (scope.within === undefined || scope.within.includes(id(row)))
  )

const verificationScan = (events: ReadonlyArray<Verification>, batch: number) => (scope: ScanScope) =>
  Effect.suspend(() => {
    const rows = inScope(events, scope, (e) => e.apiId)
    if (rows.length > scope.maxRows) return Effect.fail(new QueryTooLarge({ message: "too many rows" }))
    const out: Array<VerificationColumns> = []
    for (let i = 0; i < rows.length; i += batch) {
      const part = rows.slice(i, i + batch)
      out.push({
        length: part.length,
        time: part.map((e) => e.time),
        apiId: dictionary(part.map((e) => e.apiId)),
        keyId: dictionary(part.map((e) => e.keyId)),
        identityId: dictionary(part.map((e) => e.identity?.id ?? "")),
        externalId: dictionary(part.map((e) => e.identity?.externalId ?? "")),
        outcome: part.map((e) => Outcomes.indexOf(e.outcome)),
        tags: dictionary(part.map((e) => e.tags), (tags) => JSON.stringify(tags)),
        spentCredits: part.map((e) => e.spentCredits ?? 0),
        latency: part.map((e) => e.latency ?? 0),
        region: dictionary(part.map((e) => e.region ?? ""))
      })
    }
    return Effect.succeed(out)
  })

const ratelimitScan = (decisions: ReadonlyArray<RatelimitEvent>, batch: number) => (scope: ScanScope) =>
  Effect.suspend(() => {
    const rows = inScope(decisions, scope, (d) => d.namespaceId)
    if (rows.length > scope.maxRows) return Effect.fail(new QueryTooLarge({ message: "too many rows" }))
    const out: Array<RatelimitColumns> = []
    for (let i = 0; i < rows.length; i += batch) {
      const part = rows.slice(i, i + batch)
      out.push({
        length: part.length,
        time: part.map((d) => d.time),
        namespaceId: dictionary(part.map((d) => d.namespaceId)),
        identifier: dictionary(part.map((d) => d.identifier)),
        passed: part.map((d) => (d.passed ? 1 : 0)),
        latency: part.map((d) => d.latency),
        overrideId: dictionary(part.map((d) => d.overrideId ?? ""))
      })
    }
    return Effect.succeed(out)
  })

// ---------------------------------------------------------------------------------------------
// Running every query and comparing

interface Scans {
  readonly verifications: SqlQuery.Scan<VerificationColumns>
  readonly ratelimits: SqlQuery.Scan<RatelimitColumns>
  /** A store that runs the queries itself. */
  readonly engine?: SqlEngine["Type"] | undefined
  /** The store's counts, read in place of events where they answer the same. */
  readonly counts?: SqlQuery.Options["counts"]
  /**
   * Name the caller's apis and namespaces (all of the corpus's, as a key scoped to each would):
   * counts are read only for named ones.
   */
  readonly named?: boolean
}

/** Every api, and every namespace, of the workspace's corpus. */
const named = {
  verifications: [...new Set(corpus.verifications.filter((e) => e.workspaceId === WORKSPACE).map((e) => e.apiId))],
  ratelimits: [...new Set(corpus.decisions.filter((d) => d.workspaceId === WORKSPACE).map((d) => d.namespaceId))]
}

const toTable = (answer: SqlQuery.Answer): Table => ({
  columns: answer.columns.map((c) => c.name),
  rows: answer.rows.map((row) => answer.columns.map((c) => row[c.name]))
})

const preview = (rows: ReadonlyArray<ReadonlyArray<unknown>>) =>
  JSON.stringify(rows.slice(0, 6)) + (rows.length > 6 ? ` … (${rows.length} rows)` : "")

const report = (query: GeneratedQuery, why: string, want: Table | string, got: Table | undefined) =>
  [
    `[${query.template}, ${query.family}] ${query.text}`,
    `  DuckDB: ${query.duck}`,
    `  ${why}`,
    `  expected: ${typeof want === "string" ? want : preview(want.rows)}`,
    `  got:      ${got === undefined ? "-" : preview(got.rows)}`
  ].join("\n")

/** Runs every query over `scans`: the disagreements, and how many answers had rows. */
const runAll = (label: string, scans: Scans) =>
  Effect.gen(function*() {
    const started = Date.now()
    const disagreements: Array<string> = []
    let answered = 0
    yield* Effect.forEach(
      queries,
      (query, i) =>
        Effect.gen(function*() {
          const want = expected[i]!
          const exit = yield* Effect.exit(SqlQuery.run(query.text, {
            family: query.family,
            workspaceId: WORKSPACE,
            within: scans.named ? named[query.family] : undefined,
            verifications: scans.verifications,
            ratelimits: scans.ratelimits,
            limits: SqlQuery.DEFAULT_LIMITS,
            now: NOW,
            engine: scans.engine,
            counts: scans.counts
          }))
          if (Exit.isFailure(exit)) {
            disagreements.push(report(query, `keymeter failed: ${Cause.pretty(exit.cause)}`, want, undefined))
            return
          }
          const got = toTable(exit.value)
          if (typeof want === "string") {
            disagreements.push(report(query, "the oracle failed", want, got))
            return
          }
          const why = difference(want, got, query.ordered)
          if (why !== undefined) disagreements.push(report(query, why, want, got))
          else if (got.rows.length > 0) answered++
        }),
      { concurrency: 4, discard: true }
    )
    summary.push(
      `${label}: ${queries.length - disagreements.length}/${queries.length} agree (${
        ((Date.now() - started) / 1000).toFixed(1)
      } s)`
    )
    return { disagreements, answered }
  })

/** The check every source passes: every query agrees with DuckDB, and most answers have rows. */
const agreeAll = (label: string, scans: Scans) =>
  Effect.gen(function*() {
    const { answered, disagreements } = yield* runAll(label, scans)
    expect(
      disagreements.length,
      `${disagreements.length} of ${queries.length} queries disagree with DuckDB (${label}):\n\n` +
        disagreements.slice(0, 25).join("\n\n")
    ).toBe(0)
    // The corpus and the queries meet: most answers are not empty.
    expect(answered).toBeGreaterThan(queries.length * 0.6)
  })

const appendCorpus = (verifications: VerificationStore["Type"], ratelimits: RatelimitStore["Type"]) =>
  Effect.gen(function*() {
    // In a few batches, as a server would: each workspace's events interleaved.
    for (let i = 0; i < corpus.verifications.length; i += 900) {
      yield* verifications.append(corpus.verifications.slice(i, i + 900))
    }
    for (let i = 0; i < corpus.decisions.length; i += 700) {
      yield* ratelimits.append(corpus.decisions.slice(i, i + 700))
    }
  })

const scansOf = (verifications: VerificationStore["Type"], ratelimits: RatelimitStore["Type"]): Scans => {
  if (verifications.scan === undefined || ratelimits.scan === undefined) throw new Error("the store has no scan")
  return { verifications: verifications.scan, ratelimits: ratelimits.scan }
}

/**
 * The store's scans and its counts, as SqlAnalytics hands them: queries that counts answer the
 * same read them (`counted` tells how many reads of counts were made). `named`: the caller's apis
 * are named (a key scoped to each); else the store lists those it counts. `partEvents`: most events
 * a part of a read holds (absent: parts as the loop's pace sizes them, whole reads where they can).
 */
const withCounts = (
  verifications: VerificationStore["Type"],
  ratelimits: RatelimitStore["Type"],
  named: boolean,
  partEvents: number | undefined
) => {
  const counted = { reads: 0, tops: 0, credits: 0 }
  const countsOf = (store: VerificationStore["Type"] | RatelimitStore["Type"]) => {
    if (store.scanCountsFrom === undefined) throw new Error("the store keeps no counts for SQL analytics")
    return {
      aggregate: (query: Parameters<typeof store.aggregate>[0]) => {
        counted.reads++
        if (query.limit !== undefined) counted.tops++
        if (query.sumCredits === true) counted.credits++
        return store.aggregate(query)
      },
      from: store.scanCountsFrom,
      sumsCredits: "sumsCredits" in store ? store.sumsCredits : undefined,
      within: store.countedIn
    }
  }
  const scans: Scans = {
    ...scansOf(verifications, ratelimits),
    counts: { verifications: countsOf(verifications), ratelimits: countsOf(ratelimits), partEvents },
    named
  }
  return { scans, counted }
}

describe("SQL analytics against DuckDB", () => {
  it("generates hundreds of distinct queries of many shapes, over the corpus DuckDB holds", () => {
    expect(new Set(queries.map((q) => q.text)).size).toBe(queries.length)
    expect(queries.length).toBeGreaterThanOrEqual(500)
    expect(shapes).toBeGreaterThanOrEqual(400)
    for (const family of ["verifications", "ratelimits"] as const) {
      expect(queries.filter((q) => q.family === family).length).toBeGreaterThan(100)
    }
    // The oracle's outcome names are the tables'.
    expect(Outcomes.map((o) => OUTCOME_NAME[o])).toEqual(Tables.OUTCOME_NAMES)
    const failed = expected.filter((e) => typeof e === "string")
    expect(failed, String(failed[0])).toEqual([])
  })

  it.effect("a plain scan of the events", () =>
    agreeAll("plain scan", {
      verifications: verificationScan(corpus.verifications, 257),
      ratelimits: ratelimitScan(corpus.decisions, 257)
    }), 60_000)

  it.live("the memory store", () =>
    Effect.gen(function*() {
      const verifications = MemoryVerificationStore.make()
      const ratelimits = MemoryRatelimitStore.make()
      yield* appendCorpus(verifications, ratelimits)
      yield* agreeAll("memory", scansOf(verifications, ratelimits))
      // Every api of the workspace, as the store lists them (SQLite's run names them).
      // Parts of about 40 events: the counts of a query read in many steps, whose rows add up.
      const { counted, scans } = withCounts(verifications, ratelimits, false, 40)
      yield* agreeAll("memory, counts where they answer", scans)
      summary.push(
        `memory read counts ${counted.reads} times, ${counted.tops} of them the top groups only, ` +
          `${counted.credits} with credits summed`
      )
      expect(counted.reads).toBeGreaterThan(300)
      // The pinned SELECTs of first groups by a counter read only the top groups.
      expect(counted.tops).toBeGreaterThan(0)
      // Sums of spent credits are read from counts too.
      expect(counted.credits).toBeGreaterThan(50)
      // Parts as a server sizes them: whole reads where a day holds few rows, days by pace else.
      const paced = withCounts(verifications, ratelimits, false, undefined)
      yield* agreeAll("memory, counts in parts by pace", paced.scans)
      summary.push(`memory read counts in parts by pace ${paced.counted.reads} times`)
      expect(paced.counted.reads).toBeGreaterThan(300)
      // Fewer reads: whole ones, and parts of many days.
      expect(paced.counted.reads).toBeLessThan(counted.reads / 2)
    }), 90_000)

  it.live(
    "a SELECT that weighs outcomes only in sums reads a row of counts per group, not per outcome",
    () =>
      Effect.gen(function*() {
        const verifications = MemoryVerificationStore.make()
        const ratelimits = MemoryRatelimitStore.make()
        yield* appendCorpus(verifications, ratelimits)
        const { scans } = withCounts(verifications, ratelimits, false, undefined)
        const from = Date.UTC(2025, 11, 20)
        const to = Date.UTC(2026, 0, 10)
        const window = `WHERE key_space_id = 'api_a' AND time >= ${from} AND time < ${to}`
        const run = (text: string, scannedRows: number) =>
          Effect.exit(SqlQuery.run(text, {
            family: "verifications",
            workspaceId: WORKSPACE,
            within: undefined,
            verifications: scans.verifications,
            ratelimits: scans.ratelimits,
            limits: { ...SqlQuery.DEFAULT_LIMITS, scannedRows },
            now: NOW,
            counts: scans.counts
          }))
        /** The fewest scanned rows the query answers within: the rows it reads. */
        const rowsRead = (text: string) =>
          Effect.gen(function*() {
            let [low, high] = [1, 100_000]
            while (low < high) {
              const mid = Math.floor((low + high) / 2)
              if (Exit.isSuccess(yield* run(text, mid))) high = mid
              else low = mid + 1
            }
            return low
          })
        const events = corpus.verifications.filter((e) =>
          e.workspaceId === WORKSPACE && e.apiId === "api_a" && e.time >= from && e.time < to
        )
        const dayOf = (time: number) => time - time % 86_400_000
        const days = new Set(events.map((e) => dayOf(e.time)))
        const dayOutcomes = new Set(events.map((e) => `${dayOf(e.time)} ${e.outcome}`))
        expect(dayOutcomes.size).toBeGreaterThan(days.size * 2)

        const together = `SELECT toStartOfDay(time) AS day, count() AS total, countIf(outcome = 'VALID') AS valid,
        sumIf(2, outcome IN ('RATE_LIMITED', 'USAGE_EXCEEDED')) AS twice_blocked, avg(toDayOfWeek(time)) AS weekday
        FROM key_verifications_v1 ${window} GROUP BY day ORDER BY day`
        expect(yield* rowsRead(together)).toBe(days.size)
        const answer = yield* run(together, 100_000)
        expect(Exit.isSuccess(answer) && answer.value.rows).toEqual(
          [...days].sort((a, b) => a - b).map((day) => {
            const of = events.filter((e) => dayOf(e.time) === day)
            return {
              day,
              total: of.length,
              valid: of.filter((e) => e.outcome === "valid").length,
              twice_blocked: 2 * of.filter((e) => e.outcome === "rateLimited" || e.outcome === "usageExceeded").length,
              weekday: new Date(day).getUTCDay() || 7
            }
          })
        )
        // The outcome grouped, in WHERE, or weighed by an aggregate that is not a sum: a row per outcome.
        for (
          const apart of [
            `SELECT toStartOfDay(time) AS day, outcome, count() AS n FROM key_verifications_v1 ${window}
           GROUP BY day, outcome`,
            `SELECT toStartOfDay(time) AS day, count() AS n FROM key_verifications_v1 ${window}
           AND outcome != 'VALID' GROUP BY day`,
            `SELECT toStartOfDay(time) AS day, avg(if(outcome = 'VALID', 1, 0)) AS valid_share
           FROM key_verifications_v1 ${window} GROUP BY day`,
            `SELECT toStartOfDay(time) AS day, count(DISTINCT outcome) AS kinds FROM key_verifications_v1 ${window}
           GROUP BY day`
          ]
        ) {
          const rows = yield* rowsRead(apart)
          expect(rows, apart).toBeGreaterThanOrEqual(dayOutcomes.size - (apart.includes("!=") ? days.size : 0))
          expect(rows, apart).toBeLessThanOrEqual(dayOutcomes.size)
        }
      }),
    60_000
  )

  it.live("the SQLite store, on a file", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "keymeter-sql-differential-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const context = yield* Layer.build(
        SqliteStorage.layer({
          filename: join(dir, "keymeter.db"),
          synchronous: "normal",
          // The corpus's first days are older than the default 30 kept in full.
          eventDays: Infinity,
          decisionDays: Infinity
        })
      )
      const verifications = Context.get(context, VerificationStore)
      const ratelimits = Context.get(context, RatelimitStore)
      yield* appendCorpus(verifications, ratelimits)
      yield* agreeAll("sqlite", scansOf(verifications, ratelimits))
      const { counted, scans } = withCounts(verifications, ratelimits, true, 40)
      yield* agreeAll("sqlite, counts where they answer", scans)
      summary.push(
        `sqlite read counts ${counted.reads} times, ${counted.tops} of them the top groups only, ` +
          `${counted.credits} with credits summed`
      )
      expect(counted.reads).toBeGreaterThan(300)
      // The pinned SELECTs of first groups by a counter read only the top groups.
      expect(counted.tops).toBeGreaterThan(0)
      // Sums of spent credits are read from the events, grouped by SQLite.
      expect(counted.credits).toBeGreaterThan(50)
    }).pipe(Effect.scoped), 120_000)

  const skip = ClickhouseTestServer.skip()
  if (skip !== undefined) summary.push(`clickhouse: not run (${skip})`)
  describe.skipIf(skip !== undefined)("on ClickHouse", () => {
    it.live("the ClickHouse stores", () =>
      Effect.gen(function*() {
        const url = yield* ClickhouseTestServer.freshDatabase()
        const verifications = yield* ClickhouseVerificationStore.make({ url })
        const ratelimits = yield* ClickhouseRatelimitStore.make({ url, decisionRetentionDays: Infinity })
        yield* appendCorpus(verifications, ratelimits)
        yield* agreeAll("clickhouse", scansOf(verifications, ratelimits))
        // The same queries run in ClickHouse, but for those it declines (run in-process as above).
        const engine = yield* ClickhouseSql.make({ url, decisionRetentionDays: Infinity })
        const declined: Array<string> = []
        yield* agreeAll("clickhouse, queries run in ClickHouse", {
          ...scansOf(verifications, ratelimits),
          engine: SqlEngine.of({
            run: (request) => {
              const running = engine.run(request)
              if (running === undefined) declined.push(request.plan.query.at + "")
              return running
            }
          })
        })
        summary.push(`clickhouse ran ${queries.length - declined.length} of ${queries.length} queries itself`)
        expect(declined).toEqual([])
      }).pipe(Effect.scoped), 240_000)
  })
})
