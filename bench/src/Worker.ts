/**
 * One engine on one data set size, in a process of its own (so its peak RSS is its own): ingest,
 * then the reference queries warm. Writes its results as JSON to `--out`. With `--ratelimits`:
 * the rate-limit decision data set appended, then the getRatelimits mix (see `Mix.ratelimits`).
 */
import type { AggregationQuery } from "@keymeter/core/Aggregation"
import type { Storage } from "@keymeter/core/Storage"
import { VerificationStore } from "@keymeter/core/Storage"
import type { VerificationQueryInput } from "@keymeter/core/VerificationQuery"
import { ClickhouseVerificationStore } from "@keymeter/storage-clickhouse"
import { MemoryCatalog, MemoryRatelimitStore, MemoryStorage } from "@keymeter/storage-memory"
import { SqliteStorage, SqliteVerificationStore } from "@keymeter/storage-sqlite"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { createHash } from "node:crypto"
import { rmSync, statSync, writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import * as Clickhouse from "./Clickhouse.js"
import * as Dataset from "./Dataset.js"
import * as Decisions from "./Decisions.js"
import * as Duck from "./Duck.js"
import * as Library from "./Library.js"
import * as Mix from "./Mix.js"
import { references } from "./Queries.js"

// keymeter runs compiled here, as an installed one does, but under tsx's loader, which turns on
// Node's source maps: each refused query's error (its stack, formatted by Effect) then parsed
// the compiled files' source maps, tens of ms of allocation landing on the next queries' times.
// An installed keymeter runs without them.
process.setSourceMapsEnabled(false)

/** What a worker reports for one engine (DuckDB reports one per layout). */
export interface EngineResult {
  readonly engine: string
  readonly size: number
  readonly ingest?: { readonly eventsPerSecond: number; readonly seconds: number } | undefined
  readonly buildSeconds?: number | undefined
  /** Seconds to open an existing store, until it serves. */
  readonly openSeconds?: number | undefined
  /** Seconds from open until the hot range was loaded (in the background). */
  readonly hotSeconds?: number | undefined
  readonly queries: Record<
    string,
    { readonly median: number; readonly min: number; readonly max: number; readonly runs: number }
  >
  readonly answers: Record<string, unknown>
  readonly peakRssMiB: number
  /** Peak RSS of a database server the engine runs in (ClickHouse), MiB. */
  readonly serverPeakRssMiB?: number | undefined
  readonly diskMiB?: number | undefined
  /**
   * ClickHouse: each reference query's statements as keymeter sent them, run by clickhouse-client
   * on the same server (ms; issue 32: keymeter's median at most 1.2× the client's).
   */
  readonly client?: Record<
    string,
    {
      readonly median: number
      readonly mean: number
      /** keymeter's median over the same turns as the client's runs (absent in older results). */
      readonly keymeter?: number | undefined
      readonly statements: ReadonlyArray<string>
    }
  >
  /** ClickHouse: seconds waited after ingest for its merges to finish. */
  readonly settledSeconds?: number | undefined
  /** The query mix (`--mix`): each query timed once on first sight, then again; its answers. */
  readonly mix?: MixResult | undefined
}

/** Timings of the query mix, in ms, in the mix's order; `null`: refused as too large. */
export interface MixResult {
  readonly first: ReadonlyArray<number | null>
  readonly repeat: ReadonlyArray<number | null>
  readonly answers: ReadonlyArray<unknown>
  /** Datapoints (rows) in each answer, for the report's reasons; `null`: refused. */
  readonly sizes?: ReadonlyArray<number | null> | undefined
  /**
   * The getVerifications mix only: as many other queries (the next seed's), each timed once after
   * the mix ran twice, so on a process that has served hundreds of queries but never these.
   */
  readonly unseen?: { readonly first: ReadonlyArray<number | null>; readonly answers: ReadonlyArray<unknown> }
}

const { values } = parseArgs({
  options: {
    engine: { type: "string" },
    size: { type: "string" },
    out: { type: "string" },
    runs: { type: "string" },
    clickhouse: { type: "string" },
    mix: { type: "string" },
    seed: { type: "string" },
    // The rate-limit decision data set and the getRatelimits mix (duckdb, memory or sqlite).
    ratelimits: { type: "boolean", default: false }
  }
})
const mix = values.mix && !values.ratelimits ? Mix.make(Number(values.mix), Number(values.seed ?? 15)) : []
const unseenMix = values.mix && !values.ratelimits ? Mix.make(Number(values.mix), Number(values.seed ?? 15) + 1) : []

/**
 * Resolves once the process has been idle (under a tenth of a core) for half a second, or after
 * `most` ms: background work settled as in steady state (the engine's warm-up, SQLite compacting
 * closed days), at least `least` ms after the call.
 */
const settle = async (least = 3000, most = 60_000) => {
  const started = performance.now()
  await new Promise((resolve) => setTimeout(resolve, least))
  let quiet = 0
  while (quiet < 2 && performance.now() - started < most) {
    const cpu = process.cpuUsage()
    const at = performance.now()
    await new Promise((resolve) => setTimeout(resolve, 250))
    const used = process.cpuUsage(cpu)
    quiet = (used.user + used.system) / 1000 < 0.1 * (performance.now() - at) ? quiet + 1 : 0
  }
  return (performance.now() - started) / 1000
}

/**
 * Runs every query of `queries` once (first sight), then each again (repeat), then each of
 * `unseen` once (first sight on a warmed process).
 */
const runMix = async <Q = VerificationQueryInput>(
  query: (q: Q) => Promise<unknown>,
  queries: ReadonlyArray<Q> = mix as ReadonlyArray<unknown> as ReadonlyArray<Q>,
  unseen: ReadonlyArray<Q> = queries === (mix as ReadonlyArray<unknown>)
    ? unseenMix as ReadonlyArray<unknown> as ReadonlyArray<Q>
    : []
): Promise<MixResult | undefined> => {
  if (queries.length === 0) return undefined
  const once = async (q: Q) => {
    // Answers are kept as a digest of their JSON and its first characters (for a mismatch's
    // message): 300 whole answers held for the comparison (some of 90,000 datapoints) would slow
    // every later garbage collection, and at 100M events DuckDB's no longer fit in one JSON file.
    const started = performance.now()
    try {
      const answer = await query(q)
      const ms = performance.now() - started
      const text = JSON.stringify(answer)
      return {
        ms,
        answer: `sha256:${createHash("sha256").update(text).digest("hex")} ${text.slice(0, 300)}`,
        size: Array.isArray(answer) ? answer.length : null
      }
    } catch (error) {
      // Refused as too large (over the datapoint cap): left out of the comparison.
      if (/QueryTooLarge|more than \d+ datapoints/.test(String(error))) {
        return { ms: null, answer: null, size: null }
      }
      throw error
    }
  }
  const first: Array<number | null> = []
  const answers: Array<unknown> = []
  const sizes: Array<number | null> = []
  for (const q of queries) {
    const { answer, ms, size } = await once(q)
    first.push(ms)
    answers.push(answer)
    sizes.push(size)
  }
  const repeat: Array<number | null> = []
  for (const q of queries) repeat.push((await once(q)).ms)
  if (unseen.length === 0) return { first, repeat, answers, sizes }
  const later = { first: [] as Array<number | null>, answers: [] as Array<unknown> }
  for (const q of unseen) {
    const { answer, ms } = await once(q)
    later.first.push(ms)
    later.answers.push(answer)
  }
  return { first, repeat, answers, sizes, unseen: later }
}
const size = Number(values.size)
const runs = values.runs ? Number(values.runs) : undefined
/** ClickHouse beside clickhouse-client: turns of each, and runs a turn. */
const CLIENT_TURNS = 5
const CLIENT_RUNS = 11
// The verification data set, but for a rate-limit run (which reads its own).
const data = values.ratelimits ? undefined : Dataset.open(size)
const dataDir = fileURLToPath(new URL("../data/", import.meta.url))
const peakRss = () => Math.round(process.resourceUsage().maxRSS / 1024)
const fileSize = (paths: Array<string>) =>
  Math.round(paths.reduce((sum, path) => sum + (statSync(path, { throwIfNoEntry: false })?.size ?? 0), 0) / 1024 / 1024)

const results: Array<EngineResult> = []

/** The reference queries through keymeter's library API, each timed warm. */
const timeQueries = async (keymeter: Awaited<ReturnType<typeof Library.open>>) => {
  const queries: EngineResult["queries"] = {}
  const answers: Record<string, unknown> = {}
  for (const reference of references) {
    const timing = await Library.time(() => keymeter.query(reference.query), runs)
    queries[reference.id] = { median: timing.median, min: timing.min, max: timing.max, runs: timing.runs }
    answers[reference.id] = timing.result
  }
  return { queries, answers }
}

/**
 * The rate-limit run: the decisions appended in batches of 10,000 (DuckDB: DataChunks, then its
 * hourly rollup), then the getRatelimits mix, first sight and repeat.
 */
const ratelimitRun = async (): Promise<Array<EngineResult>> => {
  const decisions = Decisions.open(size)
  const queries = Mix.ratelimits(Number(values.mix ?? 300), Number(values.seed ?? 15), decisions.catalog)
  const out: Array<EngineResult> = []
  if (!["duckdb", "memory", "sqlite"].includes(values.engine!)) {
    throw new Error(`--ratelimits runs duckdb, memory or sqlite, not ${values.engine}`)
  }
  if (values.engine === "duckdb") {
    const file = `${dataDir}rl-duck-${size}.duckdb`
    const duck = await Duck.openRatelimits(file)
    const started = performance.now()
    for (let from = 0; from < size; from += Library.BATCH) {
      duck.append(decisions.catalog, decisions.read(from, Math.min(size, from + Library.BATCH)))
      // Native chunk memory is freed when the event loop turns: yield between batches.
      await new Promise((resolve) => setImmediate(resolve))
    }
    await duck.finish()
    const seconds = (performance.now() - started) / 1000
    const building = performance.now()
    await duck.buildRollup()
    const buildSeconds = (performance.now() - building) / 1000
    for (const layout of ["raw", "rollup"] as const) {
      const mixed = await runMix((q: (typeof queries)[number]) => duck.query(layout, q), queries)
      out.push({
        mix: mixed,
        engine: `duckdb ${layout === "raw" ? "raw decisions" : "hourly rollup"}`,
        size,
        ...(layout === "raw" ? { ingest: { eventsPerSecond: size / seconds, seconds } } : { buildSeconds }),
        queries: {},
        answers: {},
        peakRssMiB: peakRss(),
        diskMiB: fileSize([file, `${file}.wal`])
      })
    }
    duck.close()
  } else {
    const file = `${dataDir}rl-keymeter-${size}.db`
    for (const suffix of ["", "-wal", "-shm", "-lock"]) rmSync(file + suffix, { force: true })
    // SQLite keeps each decision in full for 30 days back from now: as live, the data set's last
    // 30 days (it lies in 2025).
    const decisionDays = (Date.now() - Dataset.END) / 86_400_000 + 30
    const storage = values.engine === "memory"
      ? MemoryStorage.layer
      : SqliteStorage.layer({ filename: file, decisionDays })
    const keymeter = await Library.open(storage)
    const started = performance.now()
    const eventsPerSecond = await keymeter.appendDecisions(decisions)
    const seconds = (performance.now() - started) / 1000
    // Let background work settle as in steady state (SQLite compacts closed days once idle).
    await settle()
    // First sight: no query has been asked of this process yet.
    const mixed = await runMix(keymeter.getRatelimits, queries)
    out.push({
      mix: mixed,
      engine: values.engine!,
      size,
      ingest: { eventsPerSecond, seconds },
      queries: {},
      answers: {},
      peakRssMiB: peakRss(),
      ...(values.engine === "sqlite" ? { diskMiB: fileSize([file, `${file}-wal`]) } : {})
    })
    await keymeter.close()
  }
  decisions.close()
  return out
}

if (values.ratelimits) {
  for (const result of await ratelimitRun()) results.push(result)
} else if (values.engine === "duckdb") {
  const file = `${dataDir}duck-${size}.duckdb`
  const duck = await Duck.open(file)
  const started = performance.now()
  for (let from = 0; from < size; from += Library.BATCH) {
    duck.append(data!.read(from, Math.min(size, from + Library.BATCH)))
    // Native chunk memory is freed when the event loop turns: yield between batches.
    await new Promise((resolve) => setImmediate(resolve))
  }
  await duck.finish()
  const seconds = (performance.now() - started) / 1000
  const building = performance.now()
  await duck.buildRollup()
  const buildSeconds = (performance.now() - building) / 1000
  for (const layout of ["raw", "rollup"] as const) {
    const queries: EngineResult["queries"] = {}
    const answers: Record<string, unknown> = {}
    for (const reference of references) {
      const timing = await Library.time(() => duck.query(layout, reference.query), runs)
      queries[reference.id] = { median: timing.median, min: timing.min, max: timing.max, runs: timing.runs }
      answers[reference.id] = timing.result
    }
    const mixed = await runMix((q) => duck.query(layout, q))
    results.push({
      ...(mixed ? { mix: mixed } : {}),
      engine: `duckdb ${layout === "raw" ? "raw events" : "hourly rollup"}`,
      size,
      ...(layout === "raw" ? { ingest: { eventsPerSecond: size / seconds, seconds } } : { buildSeconds }),
      queries,
      answers,
      peakRssMiB: peakRss(),
      diskMiB: fileSize([file, `${file}.wal`])
    })
  }
  duck.close()
} else if (values.engine === "sqlite-reopened" || values.engine === "sqlite-rollups") {
  // The file the "sqlite" worker wrote, opened again: as after a restart, with the hot range
  // reloaded from the rollups, or with no hot range (the rollups and their planner alone).
  const file = `${dataDir}keymeter-${size}.db`
  const reopened = values.engine === "sqlite-reopened"
  let hotRangeLoaded: Effect.Effect<void> = Effect.void
  const storage = SqliteStorage.layer({ filename: file, ...(reopened ? {} : { hotDays: 0 }) }).pipe(
    Layer.tap((context) =>
      Effect.sync(() => (hotRangeLoaded = Context.get(context, SqliteVerificationStore.HotRange).loaded))
    )
  )
  const started = performance.now()
  const keymeter = await Library.open(storage)
  const openSeconds = (performance.now() - started) / 1000
  // The hot range loads in the background; the queries are timed once it is in memory.
  await Effect.runPromise(hotRangeLoaded)
  const hotSeconds = (performance.now() - started) / 1000
  // Then warms its query paths over it (see `@keymeter/engine`'s WarmUp), as a server does in its
  // first seconds.
  await settle(500)
  // First sight on the reopened file comes before the reference queries warm anything.
  const mixed = await runMix(keymeter.query)
  const { queries, answers } = await timeQueries(keymeter)
  results.push({
    ...(mixed ? { mix: mixed } : {}),
    engine: reopened ? "sqlite, reopened" : "sqlite, rollups only",
    size,
    openSeconds,
    ...(reopened ? { hotSeconds } : {}),
    queries,
    answers,
    peakRssMiB: peakRss(),
    diskMiB: fileSize([file, `${file}-wal`])
  })
  await keymeter.close()
} else {
  // Memory; SQLite on a fresh file; or verifications in ClickHouse (a database per size,
  // recreated) with the catalog in memory.
  const file = `${dataDir}keymeter-${size}.db`
  const clickhouseUrl = values.clickhouse!
  const database = `keymeter_bench_${size}`
  let storage: Layer.Layer<Storage, unknown>
  let captured: Array<AggregationQuery> | undefined
  if (values.engine === "memory") {
    storage = MemoryStorage.layer
  } else if (values.engine === "clickhouse") {
    await Clickhouse.drop(clickhouseUrl, database)
    // Decisions are not measured here: they stay in memory.
    storage = Layer.mergeAll(
      MemoryCatalog.layer,
      MemoryRatelimitStore.layer,
      // The queries asked of the store while `captured` is set: what clickhouse-client runs too.
      Layer.map(
        ClickhouseVerificationStore.layer({ url: Clickhouse.keymeterUrl(clickhouseUrl, database) }),
        (context) => {
          const store = Context.get(context, VerificationStore)
          return Context.add(context, VerificationStore, {
            ...store,
            aggregate: (query) => {
              captured?.push(query)
              return store.aggregate(query)
            }
          })
        }
      )
    )
  } else {
    for (const suffix of ["", "-wal", "-shm", "-lock"]) rmSync(file + suffix, { force: true })
    storage = SqliteStorage.layer({ filename: file })
  }
  const keymeter = await Library.open(storage)
  const started = performance.now()
  const eventsPerSecond = await keymeter.ingest(data!)
  const seconds = (performance.now() - started) / 1000
  // Let background work settle as in steady state (the engine warms its query paths, SQLite
  // compacts closed days once idle, ClickHouse merges parts).
  await settle()
  // ClickHouse's merges of a fresh ingest run for minutes: queries timed meanwhile vary by 3x.
  const settledSeconds = values.engine === "clickhouse" ? await Clickhouse.settle(clickhouseUrl, database) : undefined
  // First sight: no query has been asked of this process yet.
  const mixed = await runMix(keymeter.query)
  const { queries, answers } = await timeQueries(keymeter)
  const client: EngineResult["client"] = {}
  if (values.engine === "clickhouse") {
    for (const reference of references) {
      captured = []
      await keymeter.query(reference.query)
      const texts = captured.map(ClickhouseVerificationStore.aggregateText).filter((t) => t !== undefined)
      captured = undefined
      // In turns, keymeter then clickhouse-client, so both meet the server in the same state.
      let ours: Array<number> = []
      let theirs: Array<number> = []
      for (let turn = 0; turn < CLIENT_TURNS; turn++) {
        ours = ours.concat((await Library.time(() => keymeter.query(reference.query), CLIENT_RUNS)).samples)
        theirs = theirs.concat(await Clickhouse.clientTimes(clickhouseUrl, database, texts, CLIENT_RUNS))
      }
      client[reference.id] = {
        ...Clickhouse.summary(theirs),
        keymeter: Clickhouse.summary(ours).median,
        statements: texts
      }
    }
  }
  results.push({
    ...(mixed ? { mix: mixed } : {}),
    ...(values.engine === "clickhouse" ? { client, settledSeconds } : {}),
    engine: values.engine!,
    size,
    ingest: { eventsPerSecond, seconds },
    queries,
    answers,
    peakRssMiB: peakRss(),
    ...(values.engine === "sqlite" ? { diskMiB: fileSize([file, `${file}-wal`]) } : {}),
    ...(values.engine === "clickhouse"
      ? { serverPeakRssMiB: Clickhouse.serverPeakRss(), diskMiB: await Clickhouse.diskMiB(clickhouseUrl, database) }
      : {})
  })
  await keymeter.close()
}

data?.close()
writeFileSync(values.out!, JSON.stringify(results))
