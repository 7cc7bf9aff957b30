/**
 * `npm run bench -- --sql --size 10m` (issue 31's speed criteria for SQL analytics):
 *
 * 1. Query mix against DuckDB: the verification data set (with credits, latency, region) and the
 *    decision data set loaded into DuckDB's public raw tables (`Duck.openSql`), memory, SQLite
 *    (a fresh file), and that file reopened by a new process; each query of `SqlQueries.make`
 *    timed on first sight and repeat (median of 5), the `G` queries also through v1's
 *    getVerifications; every answer checked against DuckDB's (a difference fails the run).
 * 2. The hot path under heavy queries: the standalone server on memory and on SQLite with the
 *    data set ingested over HTTP (times moved so it ends now), v2 keys.verifyKey and
 *    ratelimit.limit loaded (`Load.run`) alone, then while two clients send `SqlQueries.HEAVY`
 *    back to back to `/v2/analytics.getVerifications`, in turn several times (medians reported);
 *    then the same at a paced rate (`PACED_RATE`, `Load.paced`), where the latency tells how long
 *    a request waited for the queries rather than how busy the server was.
 */
import { spawnSync } from "node:child_process"
import { readFileSync, rmSync } from "node:fs"
import { fileURLToPath } from "node:url"
import * as Compiled from "./Compiled.js"
import * as Dataset from "./Dataset.js"
import * as Decisions from "./Decisions.js"
import * as Http from "./Http.js"
import * as Load from "./Load.js"
import { count, markdown, plain } from "./Report.js"
import * as SqlQueries from "./SqlQueries.js"
import type { SqlEngineResult, SqlTiming } from "./SqlWorker.js"

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))

/** The SQL queries' requests of one load phase. */
export interface SqlClientStats {
  readonly id: string
  readonly requests: number
  /** Answers by HTTP status. */
  readonly statuses: Record<string, number>
  /** Budgets named by the 422 answers, and how many of each. */
  readonly budgets: Record<string, number>
  /** Durations of the 200 answers, ms. */
  readonly median: number | undefined
  readonly p99: number | undefined
  readonly max: number | undefined
  /** Durations of every answer, ms (200 or not). */
  readonly allMedian: number | undefined
  readonly rows: number | undefined
}

export interface LoadPhase {
  readonly phase: string
  readonly load: ReadonlyArray<Load.LoadResult>
  readonly sql?: ReadonlyArray<SqlClientStats> | undefined
}

export interface PacedPhase {
  readonly phase: string
  readonly load: ReadonlyArray<Load.PacedResult>
  readonly sql?: ReadonlyArray<SqlClientStats> | undefined
}

export interface HotPathResult {
  readonly adapter: string
  readonly events: number
  readonly ingest: { readonly eventsPerSecond: number }
  /** Each heavy query alone on the idle server, 3 runs. */
  readonly standalone: ReadonlyArray<SqlClientStats>
  readonly phases: ReadonlyArray<LoadPhase>
  /** The paced rounds, at `pacedRate` requests/s. */
  readonly paced: ReadonlyArray<PacedPhase>
  readonly pacedRate: number
  /** Rounds of each kind of phase. */
  readonly rounds: number
  readonly serverPeakRssMiB: number
}

export interface SqlRun {
  readonly size: number
  readonly engines: ReadonlyArray<SqlEngineResult>
  readonly queries: ReadonlyArray<
    { readonly id: string; readonly title: string; readonly keymeter: string; readonly duckdb: string }
  >
  readonly mismatches: ReadonlyArray<string>
  readonly failures: ReadonlyArray<string>
  readonly hotPath: ReadonlyArray<HotPathResult>
}

/** Runs one engine of the query mix in its own process. */
const runWorker = (
  engine: string,
  size: number,
  log: (line: string) => void,
  route: "sql" | "v1" = "sql"
): SqlEngineResult => {
  const out = here(`../data/sql-result-${engine}-${route}-${size}.json`)
  const started = performance.now()
  const child = spawnSync(process.execPath, [
    "--max-old-space-size=16384",
    ...Compiled.script("SqlWorker.ts", ["--engine", engine, "--size", String(size), "--out", out, "--route", route])
  ], { stdio: ["ignore", "inherit", "inherit"] })
  if (child.status !== 0) throw new Error(`${engine} (${route}) at ${size} failed (exit ${child.status})`)
  log(
    `  ${engine}${route === "v1" ? ", v1 route" : ""}: done in ${((performance.now() - started) / 1000).toFixed(0)} s`
  )
  return JSON.parse(readFileSync(out, "utf8"))
}

/** Differences from DuckDB's answers (mismatches) and queries keymeter did not answer (failures). */
const check = (engines: ReadonlyArray<SqlEngineResult>, log: (line: string) => void) => {
  const duck = engines.find((e) => e.engine === "duckdb")!
  const mismatches: Array<string> = []
  const failures: Array<string> = []
  for (const engine of engines.filter((e) => e !== duck)) {
    for (const [route, timings] of [["SQL", engine.sql], ["v1 getVerifications", engine.v1]] as const) {
      for (const [id, timing] of Object.entries(timings)) {
        if (timing.error !== undefined) {
          const line = `${engine.engine} ${id} (${route}): ${timing.error}`
          log(`FAILED ${line}`)
          failures.push(line)
          continue
        }
        const want = JSON.parse(duck.sql[id]!.answer!)
        const differs = SqlQueries.difference(JSON.parse(timing.answer!), want)
        if (differs !== undefined) {
          const line = `${engine.engine} ${id} (${route}): ${differs.slice(0, 600)}`
          log(`MISMATCH ${line}`)
          mismatches.push(line)
        }
      }
    }
  }
  return { mismatches, failures }
}

/** The queries of a size, as the report lists them. */
export const queriesOf = (size: number): SqlRun["queries"] =>
  SqlQueries.make(size).map(({ duckdb, id, keymeter, title }) => ({ id, title, keymeter, duckdb }))

/** Part 1: every engine on the same data, answers checked. */
export const queryMix = (size: number, log: (line: string) => void) => {
  const t = performance.now()
  Dataset.ensure(size)
  Decisions.ensure(size)
  log(
    `\nSQL analytics: ${count(size)} verifications and ${count(size)} decisions (data sets ready in ${
      ((performance.now() - t) / 1000).toFixed(1)
    } s)`
  )
  const engines = ["duckdb", "memory", "sqlite", "sqlite-reopened"].map((engine) => runWorker(engine, size, log))
  // The v1 forms in processes of their own (see SqlWorker): memory loads the data again, SQLite
  // reopens its file (the fresh SQLite process has no v1 figures).
  for (const [engine, into] of [["memory", "memory"], ["sqlite-reopened", "sqlite, reopened"]] as const) {
    const v1 = runWorker(engine, size, log, "v1").v1
    const k = engines.findIndex((e) => e.engine === into)
    engines[k] = { ...engines[k]!, v1 }
  }
  for (const suffix of ["", "-wal", "-shm", "-lock"]) {
    rmSync(here(`../data/sql-keymeter-${size}.db${suffix}`), { force: true })
  }
  return { engines, ...check(engines, log) }
}

const percentile = (samples: ReadonlyArray<number>, p: number) => {
  if (samples.length === 0) return undefined
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]
}

interface SqlRecord {
  readonly id: string
  readonly ms: number
  readonly status: number
  readonly budget?: string | undefined
  readonly rows?: number | undefined
}

const statsOf = (records: ReadonlyArray<SqlRecord>): Array<SqlClientStats> =>
  SqlQueries.HEAVY.map(({ id }) => {
    const mine = records.filter((r) => r.id === id)
    const ok = mine.filter((r) => r.status === 200).map((r) => r.ms)
    const statuses: Record<string, number> = {}
    const budgets: Record<string, number> = {}
    for (const r of mine) {
      statuses[r.status] = (statuses[r.status] ?? 0) + 1
      if (r.budget !== undefined) budgets[r.budget] = (budgets[r.budget] ?? 0) + 1
    }
    return {
      id,
      requests: mine.length,
      statuses,
      budgets,
      median: percentile(ok, 0.5),
      p99: percentile(ok, 0.99),
      max: ok.length === 0 ? undefined : Math.max(...ok),
      allMedian: percentile(mine.map((r) => r.ms), 0.5),
      rows: mine.find((r) => r.rows !== undefined)?.rows
    }
  })

/** One heavy query through `/v2/analytics.getVerifications`: its duration, status, budget or rows. */
const ask = async (server: Http.Server, query: (typeof SqlQueries.HEAVY)[number]): Promise<SqlRecord> => {
  const started = performance.now()
  const reply = await fetch(`${server.base}/v2/analytics.getVerifications`, {
    method: "POST",
    headers: { authorization: `Bearer ${Http.ROOT_KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ query: query.text })
  })
  const text = await reply.text()
  const ms = performance.now() - started
  if (reply.status === 200) {
    return { id: query.id, ms, status: 200, rows: (JSON.parse(text) as { data: Array<unknown> }).data.length }
  }
  // The budget a 422 names, as its message says it ("… its budget of …", "more than … rows").
  let budget: string | undefined
  if (reply.status === 422) {
    const detail = String((JSON.parse(text) as { error?: { detail?: string } }).error?.detail ?? text)
    budget = /time|ms\b|second/i.test(detail)
      ? "time"
      : /memory|MiB|MB|bytes/i.test(detail)
      ? "memory"
      : /answer has more than/i.test(detail)
      ? "rows answered"
      : /rows/i.test(detail)
      ? "rows scanned"
      : detail.slice(0, 80)
  } else if (reply.status !== 429) {
    throw new Error(`getVerifications answered ${reply.status}: ${text.slice(0, 500)}`)
  }
  return { id: query.id, ms, status: reply.status, budget }
}

/** `clients` clients sending the heavy queries back to back (client c starts at query c) until stopped. */
const heavyClients = (server: Http.Server, clients: number) => {
  let stopping = false
  const records: Array<SqlRecord> = []
  const client = async (c: number) => {
    for (let n = c; !stopping; n++) records.push(await ask(server, SqlQueries.HEAVY[n % SqlQueries.HEAVY.length]!))
  }
  const running = Array.from({ length: clients }, (_, c) => client(c))
  return {
    stop: async () => {
      stopping = true
      await Promise.all(running)
      return statsOf(records)
    }
  }
}

/**
 * Posts the first `events` events of `data` as batches of 10,000 from 4 clients, each body built
 * as it is sent (10M events would not fit as strings), times moved by `shift` ms; events/s.
 */
const ingestShifted = async (
  server: Http.Server,
  data: ReturnType<typeof Dataset.open>,
  events: number,
  shift: number
) => {
  const batch = 10_000
  let next = 0
  const started = performance.now()
  const client = async () => {
    while (next < events) {
      const from = next
      next += batch
      const slice = data.read(from, Math.min(events, from + batch))
      const items = []
      for (let i = 0; i < slice.size; i++) {
        const item = Dataset.input(slice, i)
        items.push({ ...item, time: item.time + shift })
      }
      const reply = await fetch(`${server.base}/v1/analytics.recordVerifications`, {
        method: "POST",
        headers: { authorization: `Bearer ${Http.ROOT_KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ verifications: items })
      })
      if (reply.status !== 200) throw new Error(`recordVerifications answered ${reply.status}: ${await reply.text()}`)
      await reply.arrayBuffer()
    }
  }
  await Promise.all(Array.from({ length: 4 }, client))
  return events / ((performance.now() - started) / 1000)
}

/** Rounds of the hot path: a phase alone, then one beside heavy queries, each round. */
/** Rounds of each kind of phase, by default: on a shared machine one phase alone varies 2x and more. */
const HOT_PATH_ROUNDS = 3

/** Requests/s of the paced rounds: about a third of what SQLite serves at saturation here. */
export const PACED_RATE = 3000

/** Part 2 on one adapter. */
const hotPathOn = async (
  adapter: "memory" | "sqlite",
  size: number,
  seconds: number,
  log: (line: string) => void,
  pacedRate = PACED_RATE,
  rounds = HOT_PATH_ROUNDS
): Promise<HotPathResult> => {
  const file = here("../data/sql-http.db")
  const server = await Http.start(adapter === "sqlite" ? `sqlite:${file}` : "memory")
  try {
    const data = Dataset.open(size)
    // The data set moved to end two minutes ago, as live traffic (SQLite keeps its last 30 days in full).
    const shift = Date.now() - 120_000 - Dataset.END
    const eventsPerSecond = await ingestShifted(server, data, size, shift)
    data.close()
    log(`  ${adapter}: ${count(size)} events ingested at ${Math.round(eventsPerSecond).toLocaleString("en")} events/s`)
    const alone: Array<SqlRecord> = []
    for (let run = 0; run < 3; run++) for (const query of SqlQueries.HEAVY) alone.push(await ask(server, query))
    const standalone = statsOf(alone)
    for (const s of standalone) {
      log(`  ${s.id} alone: ${describeStats(s)}`)
    }
    // Alone and beside the heavy queries in turn, several times: on this shared machine two phases
    // alone differ by up to 2x, so one of each tells little; the medians of several do.
    const phases: Array<LoadPhase> = []
    for (let round = 1; round <= rounds; round++) {
      log(`  round ${round}, verifyKey and limit alone:`)
      // The keys created by the first phase are verified again: no createKey waits behind the queries.
      phases.push({
        phase: `alone ${round}`,
        load: await Load.run(server, seconds, "v2 ", { baseline: false, setup: round === 1 })
      })
      log(`  round ${round}, with 2 clients sending heavy SQL queries back to back:`)
      const clients = heavyClients(server, 2)
      const load = await Load.run(server, seconds, "v2 ", { baseline: false, setup: false })
      const sql = await clients.stop()
      for (const s of sql) log(`  ${s.id}: ${describeStats(s)}`)
      phases.push({ phase: `with 2 SQL clients ${round}`, load, sql })
    }
    // The same routes at a rate the server keeps up with, alone and beside the heavy queries in turn:
    // how long a request waits for them, which a saturating load cannot tell (see `Paced.ts`).
    const paced: Array<PacedPhase> = []
    for (let round = 1; round <= rounds && pacedRate > 0; round++) {
      log(`  round ${round} at ${pacedRate} req/s, alone:`)
      paced.push({
        phase: `alone ${round}`,
        load: await Load.paced(server, pacedRate, seconds, "v2 ", { setup: false })
      })
      log(`  round ${round} at ${pacedRate} req/s, with 2 clients sending heavy SQL queries back to back:`)
      const clients = heavyClients(server, 2)
      const load = await Load.paced(server, pacedRate, seconds, "v2 ", { setup: false })
      const sql = await clients.stop()
      for (const s of sql) log(`  ${s.id}: ${describeStats(s)}`)
      paced.push({ phase: `with 2 SQL clients ${round}`, load, sql })
    }
    return {
      adapter,
      events: size,
      ingest: { eventsPerSecond },
      standalone,
      phases,
      paced,
      pacedRate,
      rounds,
      serverPeakRssMiB: server.peakRss()
    }
  } finally {
    await server.stop()
    for (const suffix of ["", "-wal", "-shm", "-lock"]) rmSync(file + suffix, { force: true })
  }
}

const describeStats = (s: SqlClientStats) =>
  `${s.requests} queries (${Object.entries(s.statuses).map(([status, n]) => `${n}× ${status}`).join(", ")}${
    Object.keys(s.budgets).length > 0
      ? `; budgets: ${Object.entries(s.budgets).map(([b, n]) => `${n}× ${b}`).join(", ")}`
      : ""
  }), 200s median ${fmt(s.median)} ms, p99 ${fmt(s.p99)} ms${s.rows !== undefined ? `, ${s.rows} rows` : ""}`

/** Part 2: memory then SQLite. */
export const hotPath = async (
  size: number,
  seconds: number,
  log: (line: string) => void,
  options: {
    readonly adapters?: ReadonlyArray<string> | undefined
    /** Requests/s of the paced rounds: below what the machine serves at saturation (default {@link PACED_RATE}). */
    readonly pacedRate?: number | undefined
    /** Rounds of each kind of phase (default {@link HOT_PATH_ROUNDS}). */
    readonly rounds?: number | undefined
  } = {}
) => {
  const out: Array<HotPathResult> = []
  for (const adapter of ["memory", "sqlite"] as const) {
    if (options.adapters !== undefined && !options.adapters.includes(adapter)) continue
    log(`\nHot path under heavy SQL queries, ${adapter}`)
    out.push(await hotPathOn(adapter, size, seconds, log, options.pacedRate, options.rounds))
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Report

const fmt = (n: number | undefined) =>
  n === undefined || Number.isNaN(n)
    ? "–"
    : n < 10
    ? n.toFixed(2)
    : n < 100
    ? n.toFixed(1)
    : Math.round(n).toLocaleString("en")
const ratio = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined || b === 0 ? undefined : a / b
const times = (r: number | undefined) => (r === undefined ? "–" : `${r < 0.1 ? r.toFixed(3) : r.toFixed(2)}×`)
const geomean = (xs: ReadonlyArray<number>) =>
  xs.length === 0 ? undefined : Math.exp(xs.reduce((sum, x) => sum + Math.log(x), 0) / xs.length)

/** A timing as `first / repeat median (rows or error)`. */
const cell = (t: SqlTiming | undefined) =>
  t === undefined
    ? "–"
    : t.error !== undefined
    ? `${fmt(t.first)} / ${fmt(t.median)} (${t.error.split(":")[0]})`
    : `${fmt(t.first)} / ${fmt(t.median)}`

/** Query × engine: first sight / repeat median, ms, and keymeter over DuckDB for each. */
const queryTable = (run: SqlRun): Array<Array<string>> => {
  const duck = run.engines.find((e) => e.engine === "duckdb")!
  const keymeters = run.engines.filter((e) => e !== duck)
  const rows: Array<Array<string>> = [[
    "query",
    "rows",
    "DuckDB first / repeat",
    ...keymeters.flatMap((e) => [`${e.engine} first / repeat`, `× DuckDB first, repeat`])
  ]]
  const line = (label: string, id: string, of: (e: SqlEngineResult) => SqlTiming | undefined) => {
    const d = duck.sql[id]!
    rows.push([
      label,
      String(d.rows ?? "–"),
      cell(d),
      ...keymeters.flatMap((e) => {
        const t = of(e)
        return [
          cell(t),
          t === undefined || t.error !== undefined
            ? "–"
            : `${times(ratio(t.first, d.first))}, ${times(ratio(t.median, d.median))}`
        ]
      })
    ])
  }
  for (const q of run.queries) {
    line(`${q.id} ${q.title}`, q.id, (e) => e.sql[q.id])
    if (keymeters.some((e) => e.v1[q.id] !== undefined)) {
      line(`${q.id} the same through v1 getVerifications`, q.id, (e) => e.v1[q.id])
    }
  }
  return rows
}

/** Per engine: geomean and worst of keymeter/DuckDB over the SQL queries, first sight and repeat. */
const summaryTable = (run: SqlRun): Array<Array<string>> => {
  const duck = run.engines.find((e) => e.engine === "duckdb")!
  const rows: Array<Array<string>> = [[
    "engine",
    "ingest verifications/s, decisions/s",
    "× DuckDB first sight, geomean / worst",
    "× DuckDB repeat, geomean / worst",
    "v1 route over SQL route (G queries, repeat), geomean",
    "peak RSS MiB",
    "disk MiB"
  ]]
  const rate = (n: number | undefined) => (n === undefined ? "–" : Math.round(n).toLocaleString("en"))
  for (const e of run.engines) {
    const ids = run.queries.map((q) => q.id).filter((id) => e.sql[id]?.error === undefined)
    const firsts = ids.map((id) => ratio(e.sql[id]!.first, duck.sql[id]!.first)!).filter(Number.isFinite)
    const repeats = ids.map((id) => ratio(e.sql[id]!.median, duck.sql[id]!.median)).filter((r): r is number =>
      r !== undefined && Number.isFinite(r)
    )
    const v1 = Object.keys(e.v1).map((id) => ratio(e.v1[id]!.median, e.sql[id]!.median)).filter((r): r is number =>
      r !== undefined && Number.isFinite(r)
    )
    rows.push([
      e.engine,
      e.ingest
        ? `${rate(e.ingest.verificationsPerSecond)}, ${rate(e.ingest.decisionsPerSecond)}`
        : e.openSeconds !== undefined
        ? `opened in ${e.openSeconds.toFixed(1)} s`
        : "–",
      e === duck ? "–" : `${times(geomean(firsts))} / ${times(firsts.length ? Math.max(...firsts) : undefined)}`,
      e === duck ? "–" : `${times(geomean(repeats))} / ${times(repeats.length ? Math.max(...repeats) : undefined)}`,
      e === duck || v1.length === 0 ? "–" : times(geomean(v1)),
      String(e.peakRssMiB),
      e.diskMiB === undefined ? "–" : String(e.diskMiB)
    ])
  }
  return rows
}

const hotPathTable = (results: ReadonlyArray<HotPathResult>): Array<Array<string>> => {
  const rows: Array<Array<string>> = [[
    "adapter",
    "phase",
    "v2 keys.verifyKey req/s, p50 / p99 ms",
    "v2 ratelimit.limit req/s, p50 / p99 ms",
    "failed"
  ]]
  for (const r of results) {
    for (const phase of r.phases) {
      const of = (name: string) => phase.load.find((l) => l.route === name)
      const show = (l: Load.LoadResult | undefined) =>
        l === undefined ? "–" : `${Math.round(l.requestsPerSecond).toLocaleString("en")}, ${l.p50} / ${l.p99}`
      rows.push([
        r.adapter,
        phase.phase,
        show(of("v2 keys.verifyKey")),
        show(of("v2 ratelimit.limit")),
        String(phase.load.reduce((sum, l) => sum + l.errors, 0))
      ])
    }
  }
  return rows
}

/** Median of numbers (the upper one of an even count). */
const medianOf = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[values.length >> 1]

/** One route's results of the rounds alone and of those beside the heavy queries. */
const byLoad = <L extends { readonly route: string }>(
  phases: ReadonlyArray<{ readonly load: ReadonlyArray<L>; readonly sql?: unknown }>,
  route: string
) => {
  const of = (loaded: boolean) =>
    phases.filter((p) => (p.sql !== undefined) === loaded).flatMap((p) => p.load.filter((l) => l.route === route))
  return { alone: of(false), loaded: of(true) }
}

/**
 * Per adapter and route: `shown` of the rounds alone and of those beside the heavy queries (their
 * medians), and the ratio of their median p99s: the criterion is no p99 beyond alone's.
 */
const mediansTable = <L extends { readonly route: string; readonly p99: number }>(
  results: ReadonlyArray<HotPathResult>,
  phasesOf: (result: HotPathResult) => ReadonlyArray<{ readonly load: ReadonlyArray<L>; readonly sql?: unknown }>,
  heading: string,
  shown: (rounds: ReadonlyArray<L>) => string
): Array<Array<string>> => {
  const rows: Array<Array<string>> = [[
    "adapter",
    "route",
    `alone: median of ${results[0]?.rounds ?? HOT_PATH_ROUNDS} rounds, ${heading}`,
    "with 2 SQL clients: the same",
    "p99 with / alone"
  ]]
  const p99 = (rounds: ReadonlyArray<L>) => medianOf(rounds.map((l) => l.p99))!
  for (const r of results) {
    for (const route of ["v2 keys.verifyKey", "v2 ratelimit.limit"]) {
      const { alone, loaded } = byLoad(phasesOf(r), route)
      if (alone.length === 0 || loaded.length === 0) continue
      rows.push([r.adapter, route, shown(alone), shown(loaded), `${(p99(loaded) / p99(alone)).toFixed(2)}×`])
    }
  }
  return rows
}

/** The saturated rounds' medians of requests/s and p99. */
const hotPathMedians = (results: ReadonlyArray<HotPathResult>) =>
  mediansTable(
    results,
    (r) => r.phases,
    "req/s, p99 ms",
    (rounds: ReadonlyArray<Load.LoadResult>) =>
      `${Math.round(medianOf(rounds.map((l) => l.requestsPerSecond))!).toLocaleString("en")}, ${
        medianOf(rounds.map((l) => l.p99))
      }`
  )

/** The paced rounds: per adapter, route and phase, p50 / p99 / p99.9 / max of each round. */
const pacedTable = (results: ReadonlyArray<HotPathResult>): Array<Array<string>> => {
  const rows: Array<Array<string>> = [[
    "adapter",
    "phase",
    "v2 keys.verifyKey p50 / p99 / p99.9 / max ms",
    "v2 ratelimit.limit p50 / p99 / p99.9 / max ms",
    "client's longest stall, verifyKey / limit ms",
    "failed"
  ]]
  const show = (l: Load.PacedResult | undefined) =>
    l === undefined ? "–" : [l.p50, l.p99, l.p999, l.max].map((v) => v.toFixed(v < 10 ? 2 : 1)).join(" / ")
  for (const r of results) {
    for (const phase of r.paced) {
      const routes = ["v2 keys.verifyKey", "v2 ratelimit.limit"].map((route) =>
        phase.load.find((l) => l.route === route)
      )
      rows.push([
        r.adapter,
        phase.phase,
        ...routes.map(show),
        routes.map((l) => l?.clientStall.toFixed(1) ?? "–").join(" / "),
        String(phase.load.reduce((sum, l) => sum + l.failed, 0))
      ])
    }
  }
  return rows
}

/** The paced rounds' medians of p50 and p99. */
const pacedMedians = (results: ReadonlyArray<HotPathResult>) =>
  mediansTable(
    results,
    (r) => r.paced,
    "p50 / p99 ms",
    (rounds: ReadonlyArray<Load.PacedResult>) =>
      `${medianOf(rounds.map((l) => l.p50))!.toFixed(2)} / ${medianOf(rounds.map((l) => l.p99))!.toFixed(1)}`
  )

const heavyTable = (results: ReadonlyArray<HotPathResult>): Array<Array<string>> => {
  const rows: Array<Array<string>> = [[
    "adapter",
    "query",
    "when",
    "queries",
    "answers",
    "200s: median / p99 / max ms",
    "rows"
  ]]
  for (const r of results) {
    const add = (when: string, s: SqlClientStats) =>
      rows.push([
        r.adapter,
        s.id,
        when,
        String(s.requests),
        Object.entries(s.statuses).map(([status, n]) =>
          `${n}× ${status}${
            status === "422" ? ` (${Object.entries(s.budgets).map(([b, k]) => `${k} ${b}`).join(", ")})` : ""
          }`
        ).join(", "),
        s.median === undefined
          ? `– (all answers: median ${fmt(s.allMedian)})`
          : `${fmt(s.median)} / ${fmt(s.p99)} / ${fmt(s.max)}`,
        s.rows === undefined ? "–" : String(s.rows)
      ])
    for (const s of r.standalone) add("alone, 3 runs", s)
    for (const phase of r.phases) for (const s of phase.sql ?? []) add(`2 clients, ${phase.phase}`, s)
    for (const phase of r.paced) for (const s of phase.sql ?? []) add(`2 clients, paced, ${phase.phase}`, s)
  }
  return rows
}

/** The hot path section of a report: verifyKey and limit alone and beside heavy queries, in turn. */
export const hotPathSection = (
  hotPath: ReadonlyArray<HotPathResult>,
  meta: { readonly loadSeconds: number },
  format: "text" | "markdown"
): string => {
  const table = format === "text" ? plain : markdown
  const heading = (text: string) => (format === "markdown" ? `## ${text}` : `\n== ${text} ==`)
  const out: Array<string> = []
  out.push(
    heading("Hot path under heavy SQL queries (standalone server, loopback)"),
    "",
    `The data set (${count(hotPath[0]!.events)} events, moved to end two minutes before the run) ingested over ` +
      `HTTP, then v2 keys.verifyKey (1,000 keys, created before the first phase) and v2 ratelimit.limit under ` +
      `autocannon (32 connections, ` +
      `${meta.loadSeconds} s each, 2 rounds; p50/p99 the worse round) alone, then with two clients sending the ` +
      `heavy queries back to back to /v2/analytics.getVerifications, ${hotPath[0]!.rounds} times in turn; the second ` +
      "table gives the medians over the rounds. SQLite keeps verifications in full " +
      "for 30 days (its default `eventDays`), so its heavy queries scan the last 30 days; memory scans all 90. " +
      "On SQLite a query that arrives while the hot paths run goes to the server's SQL worker thread " +
      "(`SqliteSqlWorker`); on memory every query goes to its replica thread (`MemorySqlWorker`), unless the " +
      "server runs with `KEYMETER_SQL_WORKER=false`" +
      (process.env.KEYMETER_SQL_WORKER === "false"
        ? " (as in this run: every query on the event loop, in slices)."
        : "."),
    "",
    table(hotPathTable(hotPath)),
    "",
    table(hotPathMedians(hotPath)),
    ""
  )
  if (hotPath.some((r) => r.paced.length > 0)) {
    out.push(
      `Paced: the same routes at ${
        hotPath[0]!.pacedRate.toLocaleString("en")
      } requests/s (a rate both stores keep up with), ` +
        `${meta.loadSeconds} s each after a second of warm-up, alone and then beside the two clients of heavy ` +
        `queries, ${hotPath[0]!.rounds} times in turn; each latency counted from when its request was due (a client ` +
        "in its own process, 32 connections, to the µs). A saturating load tells throughput: every ms the server " +
        "gives a query lengthens every queue, and requests stuck behind a stall are few among many quick ones. " +
        "At a rate the server keeps up with, the latency tells how long a request waited for the queries. " +
        "The client's longest stall is how late its own event loop ran while counting: a request due then was " +
        "sent late, so a latency no longer than that stall may be the client's, not the server's.",
      "",
      table(pacedTable(hotPath)),
      "",
      table(pacedMedians(hotPath)),
      ""
    )
  }
  out.push(table(heavyTable(hotPath)), "")
  for (const q of SqlQueries.HEAVY) out.push(`${q.id} (${q.title}): \`${q.text.replaceAll("\n", " ")}\``, "")
  return out.join("\n")
}

/** The report of a `--sql` run. */
export const render = (
  run: SqlRun,
  meta: {
    readonly startedAt: string
    readonly machine: Record<string, string | number>
    readonly loadSeconds: number
  },
  format: "text" | "markdown"
): string => {
  const table = format === "text" ? plain : markdown
  const heading = (text: string) => (format === "markdown" ? `## ${text}` : `\n== ${text} ==`)
  const out: Array<string> = []
  if (format === "markdown") {
    out.push(`# keymeter SQL analytics benchmark, ${count(run.size)} events, ${meta.startedAt}`, "")
    out.push(`Machine: ${Object.entries(meta.machine).map(([k, v]) => `${k} ${v}`).join("; ")}.`, "")
  }
  out.push(
    heading(`Query mix against DuckDB, ${count(run.size)} verifications and ${count(run.size)} decisions`),
    "",
    "Each engine in a process of its own, data loaded first (keymeter through its library: `Verifications.record`, " +
      "the RatelimitStore's append; DuckDB by its appender into the public raw columns). Every query once on first " +
      "sight (in order, nothing asked of the process before), then each again 5 times: " +
      "first / median of repeats, ms. keymeter's queries run as `SqlAnalytics` runs them (`SqlQuery.run` over the " +
      "stores' scans, default budgets, `now()` = the data's end). × is keymeter's time over DuckDB's for the same " +
      "question (the v1 rows: v1's time over DuckDB's SQL). \"sqlite, reopened\" is the file the sqlite run wrote, " +
      "opened by a new process: its first sights are a cold process's. The G queries' v1 forms run in a " +
      "process of their own (memory loads the data again, SQLite reopens its file; none for the fresh SQLite " +
      "process) after the same SQL queries as the SQL forms: a form run after the other would find engine state " +
      "its first run built.",
    "",
    table(queryTable(run)),
    "",
    table(summaryTable(run)),
    ""
  )
  out.push(
    run.mismatches.length === 0 && run.failures.length === 0
      ? "Answers: every keymeter answer (SQL and v1) equal to DuckDB's."
      : [
        ...(run.mismatches.length > 0 ? ["ANSWERS DIFFER:", ...run.mismatches] : []),
        ...(run.failures.length > 0 ? ["NOT ANSWERED:", ...run.failures] : [])
      ].join("\n"),
    ""
  )
  if (run.hotPath.length > 0) out.push(hotPathSection(run.hotPath, meta, format))
  if (format === "markdown") {
    out.push(heading("Queries"), "")
    for (const q of run.queries) {
      out.push(
        `**${q.id} ${q.title}**`,
        "",
        "```sql",
        q.keymeter,
        "```",
        "",
        "DuckDB:",
        "",
        "```sql",
        q.duckdb,
        "```",
        ""
      )
    }
  }
  return out.join("\n")
}
