/**
 * One engine of `--sql` in a process of its own: the verification data set (with its credits,
 * latency and region) and the decision data set loaded, then every query of `SqlQueries.make`
 * run once on first sight (nothing asked of this process before; the SQL forms first, then the
 * v1 forms of the `G` queries), then each again {@link REPEATS} times. Engines: `duckdb` (the
 * public raw tables), `memory`, `sqlite` (a fresh file, events and decisions kept in full for the
 * data set's 90 days), `sqlite-reopened` (that file opened by a new process: cold process state).
 * Writes its results as JSON to `--out`.
 */
import { OUTCOME_NAMES } from "@keymeter/sql/Tables"
import { MemoryStorage } from "@keymeter/storage-memory"
import { SqliteStorage, SqliteVerificationStore } from "@keymeter/storage-sqlite"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { existsSync, rmSync, statSync, writeFileSync } from "node:fs"
import { parseArgs } from "node:util"
import * as Dataset from "./Dataset.js"
import * as Decisions from "./Decisions.js"
import * as Duck from "./Duck.js"
import * as Library from "./Library.js"
import * as SqlQueries from "./SqlQueries.js"

/** Timed runs after the first sight. */
export const REPEATS = 5
/** A query whose first sight took longer than this (ms) is not repeated. */
export const CAP_MS = 30_000

/** One query on one engine: ms of the first sight and of each repeat; its answer or why not. */
export interface SqlTiming {
  readonly first: number
  readonly repeats: ReadonlyArray<number>
  readonly median: number | undefined
  readonly rows: number | undefined
  /** The answer's rows as JSON (normalized), when it answered. */
  readonly answer?: string | undefined
  /** `QueryBudgetExceeded: …` and the like, when it did not. */
  readonly error?: string | undefined
}

export interface SqlEngineResult {
  readonly engine: string
  readonly size: number
  readonly ingest?: {
    readonly verificationsPerSecond: number
    readonly decisionsPerSecond: number
    readonly seconds: number
  } | undefined
  readonly openSeconds?: number | undefined
  readonly sql: Record<string, SqlTiming>
  /** The `G` queries through v1's getVerifications (keymeter only). */
  readonly v1: Record<string, SqlTiming>
  readonly peakRssMiB: number
  readonly diskMiB?: number | undefined
}

const { values } = parseArgs({
  options: {
    engine: { type: "string" },
    size: { type: "string" },
    out: { type: "string" },
    // "sql": the SQL forms only; "v1": the v1 forms of the G queries only, in a process of their own.
    route: { type: "string", default: "sql" }
  }
})
const size = Number(values.size)
const engine = values.engine!
const queries = SqlQueries.make(size)
const peakRss = () => Math.round(process.resourceUsage().maxRSS / 1024)
const fileSize = (paths: Array<string>) =>
  Math.round(paths.reduce((sum, path) => sum + (statSync(path, { throwIfNoEntry: false })?.size ?? 0), 0) / 1024 / 1024)

const median = (samples: ReadonlyArray<number>) =>
  samples.length === 0 ? undefined : [...samples].sort((a, b) => a - b)[samples.length >> 1]

type Outcome = { readonly rows: Array<Record<string, unknown>> } | { readonly error: string }

/**
 * First sight of every query (in order), then the repeats of each: `runs[i]` runs query `i`.
 * Done as in the Mix: all first sights before any repeat, so no query warms another's first run
 * by repeating.
 */
const measureAll = async (runs: ReadonlyArray<() => Promise<Outcome>>): Promise<Array<SqlTiming>> => {
  const firsts: Array<{ first: number; outcome: Outcome }> = []
  for (const run of runs) {
    const started = performance.now()
    const outcome = await run()
    firsts.push({ first: performance.now() - started, outcome })
  }
  const out: Array<SqlTiming> = []
  for (const [i, run] of runs.entries()) {
    const { first, outcome } = firsts[i]!
    const repeats: Array<number> = []
    if (first <= CAP_MS) {
      for (let r = 0; r < REPEATS; r++) {
        const started = performance.now()
        await run()
        repeats.push(performance.now() - started)
      }
    }
    out.push(
      "error" in outcome
        ? { first, repeats, median: median(repeats), rows: undefined, error: outcome.error }
        : { first, repeats, median: median(repeats), rows: outcome.rows.length, answer: JSON.stringify(outcome.rows) }
    )
  }
  return out
}

const dataDir = Dataset.dataDir
const yieldLoop = () => new Promise((resolve) => setImmediate(resolve))
let result: SqlEngineResult

if (engine === "duckdb") {
  const file = `${dataDir}sql-duck-${size}.duckdb`
  const duck = await Duck.openSql(file)
  const data = Dataset.open(size)
  const decisions = Decisions.open(size)
  const started = performance.now()
  for (let from = 0; from < size; from += Library.BATCH) {
    duck.appendVerifications(data.read(from, Math.min(size, from + Library.BATCH)), OUTCOME_NAMES)
    // Native chunk memory is freed when the event loop turns: yield between batches.
    await yieldLoop()
  }
  const verificationSeconds = (performance.now() - started) / 1000
  const decisionsStarted = performance.now()
  for (let from = 0; from < size; from += Library.BATCH) {
    duck.appendDecisions(decisions.catalog, decisions.read(from, Math.min(size, from + Library.BATCH)))
    await yieldLoop()
  }
  await duck.finish()
  const decisionSeconds = (performance.now() - decisionsStarted) / 1000
  data.close()
  decisions.close()
  const timings = await measureAll(queries.map((q) => async () => {
    // DuckDB failing is the bench's fault: it fails loudly.
    return { rows: SqlQueries.normalize(await duck.query(q.duckdb)) }
  }))
  result = {
    engine: "duckdb",
    size,
    ingest: {
      verificationsPerSecond: size / verificationSeconds,
      decisionsPerSecond: size / decisionSeconds,
      seconds: verificationSeconds + decisionSeconds
    },
    sql: Object.fromEntries(queries.map((q, i) => [q.id, timings[i]!])),
    v1: {},
    peakRssMiB: peakRss(),
    diskMiB: fileSize([file, `${file}.wal`])
  }
  duck.close()
} else {
  const file = `${dataDir}sql-keymeter-${size}.db`
  let storage: Layer.Layer<any, unknown>
  let hotRangeLoaded: Effect.Effect<void> = Effect.void
  if (engine === "memory") {
    storage = MemoryStorage.layer
  } else if (engine === "sqlite" || engine === "sqlite-reopened") {
    if (engine === "sqlite") {
      for (const suffix of ["", "-wal", "-shm", "-lock"]) rmSync(file + suffix, { force: true })
    } else if (!existsSync(file)) {
      // Opening would create an empty file, whose answers are all empty.
      throw new Error(`sqlite-reopened opens the file the sqlite run writes, and ${file} is not there`)
    }
    // The data set lies in 2025: every event and decision kept in full (as `eventDays` and
    // `decisionDays` of 90 or more would keep live ones), so 90-day queries see all of them.
    storage = SqliteStorage.layer({ filename: file, eventDays: Infinity, decisionDays: Infinity }).pipe(
      Layer.tap((context) =>
        Effect.sync(() => (hotRangeLoaded = Context.get(context, SqliteVerificationStore.HotRange).loaded))
      )
    )
  } else throw new Error(`--sql runs duckdb, memory, sqlite or sqlite-reopened, not ${engine}`)
  const opening = performance.now()
  const keymeter = await Library.open(storage)
  const openSeconds = (performance.now() - opening) / 1000
  let ingest: SqlEngineResult["ingest"]
  if (engine !== "sqlite-reopened") {
    const data = Dataset.open(size)
    const decisions = Decisions.open(size)
    const started = performance.now()
    const verificationsPerSecond = await keymeter.ingest(data)
    const decisionsPerSecond = await keymeter.appendDecisions(decisions)
    ingest = { verificationsPerSecond, decisionsPerSecond, seconds: (performance.now() - started) / 1000 }
    data.close()
    decisions.close()
    // Let background work settle as in steady state (SQLite compacts closed days once idle).
    await new Promise((resolve) => setTimeout(resolve, 3000))
  }
  // v1's queries are timed once the hot range is in memory (as the bench's other SQLite runs).
  await Effect.runPromise(hotRangeLoaded)
  const sqlRun = (q: SqlQueries.SqlBenchQuery) => async (): Promise<Outcome> => {
    const answer = await keymeter.sql(q.family, q.keymeter, SqlQueries.NOW)
    return Either.isRight(answer)
      ? { rows: SqlQueries.normalize(answer.right.rows) }
      : { error: `${answer.left._tag}: ${answer.left.message}` }
  }
  const withV1 = queries.filter((q) => q.v1 !== undefined)
  const v1Run = (q: SqlQueries.SqlBenchQuery) => async (): Promise<Outcome> => {
    try {
      return { rows: q.v1!.fromV1(await keymeter.query(q.v1!.query)) }
    } catch (error) {
      return { error: String(error).slice(0, 300) }
    }
  }
  // A G query's two forms share engine state that a first run builds (caches, compiled scans): each
  // form's first sight is taken in a process of its own, after the same queries before it (the SQL
  // forms of the other questions), so that neither form's first sight is the other's second.
  const v1Route = values.route === "v1"
  if (v1Route) { for (const q of queries.filter((q) => q.v1 === undefined)) await sqlRun(q)() }
  const timings = await measureAll(v1Route ? withV1.map(v1Run) : queries.map(sqlRun))
  result = {
    engine: engine === "sqlite-reopened" ? "sqlite, reopened" : engine,
    size,
    ingest,
    ...(engine === "sqlite-reopened" ? { openSeconds } : {}),
    sql: v1Route ? {} : Object.fromEntries(queries.map((q, i) => [q.id, timings[i]!])),
    v1: v1Route ? Object.fromEntries(withV1.map((q, i) => [q.id, timings[i]!])) : {},
    peakRssMiB: peakRss(),
    ...(engine === "memory" ? {} : { diskMiB: fileSize([file, `${file}-wal`]) })
  }
  await keymeter.close()
}

writeFileSync(values.out!, JSON.stringify(result))
