/**
 * `npm run bench -- --size 10m,50m --adapter memory,sqlite,clickhouse`: for each size, DuckDB (raw events and
 * an hourly rollup) and each adapter run in processes of their own on the same data; every answer
 * is checked against DuckDB's; then HTTP ingest and load against the standalone server. Prints
 * the tables and writes them to bench/results/ as JSON and markdown.
 *
 * `npm run bench -- --ratelimits --size 10m`: only rate-limit decisions, the same way: the decision
 * data set appended into DuckDB (raw and an hourly rollup) and into memory and SQLite, then a
 * seeded getRatelimits mix on first sight and repeat, every answer checked against DuckDB's;
 * written to bench/results/ratelimits-<sizes>.{json,md}.
 *
 * `npm run bench -- --sql --size 10m` (the default size of --sql): SQL analytics, issue 31 (see
 * Sql.ts): dashboard queries on memory, SQLite and DuckDB, first sight and repeat, every answer
 * checked against DuckDB's; then verifyKey and limit over HTTP alone and beside heavy queries
 * (`--skip-http` leaves that out; `--skip-queries` runs only that, into sql-hot-path-<size>.md). Written to
 * bench/results/sql-<size>.{json,md}.
 */
import { spawnSync } from "node:child_process"
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { cpus, loadavg, release, totalmem } from "node:os"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import * as Clickhouse from "./Clickhouse.js"
import * as Compiled from "./Compiled.js"
import * as Dataset from "./Dataset.js"
import * as Decisions from "./Decisions.js"
import * as Http from "./Http.js"
import * as Load from "./Load.js"
import * as Mix from "./Mix.js"
import type { HttpResult, RatelimitSection, Run } from "./Report.js"
import * as Report from "./Report.js"
import * as ScaleOut from "./ScaleOut.js"
import * as Sql from "./Sql.js"
import type { VerifyResult } from "./Verify.js"
import type { EngineResult } from "./Worker.js"

const { values } = parseArgs({
  options: {
    // 1m by default, 10m with --sql.
    size: { type: "string" },
    adapter: { type: "string", default: "memory,sqlite" },
    runs: { type: "string" },
    "skip-http": { type: "boolean", default: false },
    // Only the HTTP section (no query runs, no DuckDB): for iterating on the request path.
    "http-only": { type: "boolean", default: false },
    // No query runs (no DuckDB): the library's verifyKey and HTTP, for before/after comparisons.
    "skip-queries": { type: "boolean", default: false },
    // A seeded mix of N varied queries, each timed on first sight and on repeat, per engine.
    mix: { type: "string" },
    // Only rate-limit decisions: ingest and the getRatelimits mix (300 queries unless --mix), per size.
    ratelimits: { type: "boolean", default: false },
    // Only SQL analytics: the dashboard queries against DuckDB, then the hot path beside heavy queries.
    sql: { type: "boolean", default: false },
    seed: { type: "string", default: "15" },
    "http-events": { type: "string", default: "1m" },
    "load-seconds": { type: "string", default: "10" },
    // Requests/s of the hot path's paced rounds (--sql): lower it on a machine that saturates near it.
    "paced-rate": { type: "string" },
    // Rounds of each kind of the hot path's phases (--sql; default 3).
    rounds: { type: "string" },
    // Only the HTTP routes whose name holds this text (e.g. "limit"), for iterating on one.
    routes: { type: "string" },
    // Key verification through the library: keys created on memory, and on SQLite (a commit each).
    keys: { type: "string", default: "1m" },
    "sqlite-keys": { type: "string", default: "100k" },
    "skip-verify": { type: "boolean", default: false },
    // Several servers: limiter decisions (local and Redis windows, 1 and 3 processes) and
    // verifyKey through three servers sharing PostgreSQL, Redis and ClickHouse.
    "skip-scale-out": { type: "boolean", default: false }
  }
})
values.size ??= values.sql ? "10m" : "1m"
const sizes = values.size.split(",").map(Dataset.parseSize)
const adapters = values.adapter!.split(",").filter((a) => a !== "")
for (const adapter of adapters) {
  if (!["memory", "sqlite", "clickhouse"].includes(adapter)) {
    throw new Error(`Unknown adapter ${adapter} (memory, sqlite, clickhouse)`)
  }
}
const log = (line: string) => process.stdout.write(line + "\n")
const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))

/** Runs one engine in its own process (on the decision data set with `ratelimits`). */
const runWorker = (engine: string, size: number, ratelimits = false): Array<EngineResult> => {
  const out = here(`../data/${ratelimits ? "rl-" : ""}result-${engine}-${size}.json`)
  const args = ["--engine", engine, "--size", String(size), "--out", out]
  if (values.runs) args.push("--runs", values.runs)
  if (ratelimits) args.push("--ratelimits", "--mix", values.mix ?? "300", "--seed", values.seed!)
  else if (values.mix) args.push("--mix", values.mix, "--seed", values.seed!)
  // A ClickHouse server of its own for each run: left running, it merges parts in the background
  // and takes CPU from whatever is measured next (memory's HTTP figures fell by a third beside it).
  const clickhouse = engine === "clickhouse" ? Clickhouse.start() : undefined
  if (clickhouse) args.push("--clickhouse", clickhouse.url)
  const started = performance.now()
  const child = spawnSync(process.execPath, ["--max-old-space-size=16384", ...Compiled.script("Worker.ts", args)], {
    stdio: ["ignore", "inherit", "inherit"]
  })
  clickhouse?.stop()
  if (child.status !== 0) throw new Error(`${engine} at ${size} failed (exit ${child.status})`)
  log(`  ${engine}: done in ${((performance.now() - started) / 1000).toFixed(0)} s`)
  return JSON.parse(readFileSync(out, "utf8"))
}

/** Runs the library verification bench on `storage` in its own process. */
const runVerify = (storage: string, keys: number): VerifyResult => {
  const out = here(`../data/verify-${storage.split(":")[0]}.json`)
  mkdirSync(here("../data"), { recursive: true })
  if (storage.startsWith("sqlite:")) {
    for (const suffix of ["", "-wal", "-shm", "-lock"]) {
      rmSync(storage.slice("sqlite:".length) + suffix, { force: true })
    }
  }
  const child = spawnSync(process.execPath, [
    "--max-old-space-size=16384",
    ...Compiled.script("Verify.ts", ["--storage", storage, "--keys", String(keys), "--out", out])
  ], { stdio: ["ignore", "inherit", "inherit"] })
  if (child.status !== 0) throw new Error(`verification on ${storage} failed (exit ${child.status})`)
  return JSON.parse(readFileSync(out, "utf8"))
}

/** Differences between each engine's answers and DuckDB's raw-events answers. */
const compare = (engines: ReadonlyArray<EngineResult>): Array<string> => {
  const reference = engines.find((e) => e.engine === "duckdb raw events")!
  const out: Array<string> = []
  for (const engine of engines) {
    for (const [id, answer] of Object.entries(engine.answers)) {
      const want = JSON.stringify(reference.answers[id])
      const got = JSON.stringify(answer)
      if (got !== want) out.push(`${engine.engine} ${id}: got ${got.slice(0, 300)} want ${want.slice(0, 300)}`)
    }
    // The mix and its unseen queries: every answer keymeter gave (not refused as too large) equal to DuckDB's.
    const compare = (what: string, answers: ReadonlyArray<unknown>, wanted: ReadonlyArray<unknown> | undefined) =>
      answers.forEach((answer, i) => {
        if (answer === null || engine.engine.startsWith("duckdb")) return
        const want = JSON.stringify(wanted?.[i])
        const got = JSON.stringify(answer)
        if (got !== want) {
          out.push(`${engine.engine} ${what} #${i}: got ${got.slice(0, 300)} want ${want.slice(0, 300)}`)
        }
      })
    compare("mix", engine.mix?.answers ?? [], reference.mix?.answers)
    compare("unseen mix", engine.mix?.unseen?.answers ?? [], reference.mix?.unseen?.answers)
  }
  return out
}

/**
 * Differences between each engine's getRatelimits answers (DuckDB's rollup's too) and DuckDB's
 * raw decisions' answers, printed as they are found.
 */
const compareRatelimits = (engines: ReadonlyArray<EngineResult>): Array<string> => {
  const reference = engines.find((e) => e.engine === "duckdb raw decisions")!
  const out: Array<string> = []
  for (const engine of engines.filter((e) => e !== reference)) {
    engine.mix?.answers.forEach((answer, i) => {
      // Refused by keymeter as too large: nothing to compare.
      if (answer === null) return
      const want = reference.mix!.answers[i] as string
      const got = answer as string
      if (got !== want) {
        const line = `${engine.engine} getRatelimits #${i}: got ${got.slice(0, 300)} want ${want.slice(0, 300)}`
        log(`MISMATCH ${line}`)
        out.push(line)
      }
    })
  }
  return out
}

const cpu = cpus()
const run: {
  startedAt: string
  machine: Run["machine"]
  sizes: Array<Run["sizes"][number]>
  verify: Array<VerifyResult>
  scaleOut?: ScaleOut.ScaleOutResult
  http: Array<HttpResult>
  ratelimits?: Array<RatelimitSection>
} = {
  startedAt: new Date().toISOString(),
  machine: {
    cpu: `${cpu.length} × ${cpu[0]?.model ?? "unknown"}`,
    memory: `${Math.round(totalmem() / 1024 ** 3)} GiB`,
    os: `${process.platform} ${release()}`,
    node: process.version,
    // The machine may be shared: the 1, 5 and 15 minute load averages when the run started (and ended).
    "load at start": loadavg().map((l) => l.toFixed(2)).join(" ")
  },
  sizes: [],
  verify: [],
  http: []
}

let failed = false
if (values.sql) {
  // Its own report: nothing else of the bench runs.
  for (const size of sizes) {
    if (values["skip-queries"]) {
      // Only the hot path beside heavy queries (no DuckDB, no query mix).
      const hotPath = await Sql.hotPath(size, Number(values["load-seconds"]), log, {
        adapters,
        pacedRate: values["paced-rate"] === undefined ? undefined : Number(values["paced-rate"]),
        rounds: values.rounds === undefined ? undefined : Number(values.rounds)
      })
      const meta = { startedAt: run.startedAt, machine: run.machine, loadSeconds: Number(values["load-seconds"]) }
      log("\n" + Sql.hotPathSection(hotPath, meta, "text"))
      const name = `sql-hot-path-${Report.count(size).toLowerCase()}`
      mkdirSync(here("../results/"), { recursive: true })
      writeFileSync(
        here(`../results/${name}.md`),
        `# keymeter hot path under heavy SQL queries, ${Report.count(size)} events, ${run.startedAt}\n\n` +
          `Machine: ${Object.entries(run.machine).map(([k, v]) => `${k} ${v}`).join("; ")}.\n\n` +
          Sql.hotPathSection(hotPath, meta, "markdown") + "\n"
      )
      log(`\nwritten: bench/results/${name}.md`)
      continue
    }
    const mix = Sql.queryMix(size, log)
    const hotPath = values["skip-http"] ? [] : await Sql.hotPath(size, Number(values["load-seconds"]), log)
    const result: Sql.SqlRun = {
      size,
      engines: mix.engines,
      queries: Sql.queriesOf(size),
      mismatches: mix.mismatches,
      failures: mix.failures,
      hotPath
    }
    run.machine["load at end"] = loadavg().map((l) => l.toFixed(2)).join(" ")
    const meta = { startedAt: run.startedAt, machine: run.machine, loadSeconds: Number(values["load-seconds"]) }
    log("\n" + Sql.render(result, meta, "text"))
    const results = here("../results/")
    mkdirSync(results, { recursive: true })
    const name = `sql-${Report.count(size).toLowerCase()}`
    writeFileSync(`${results}${name}.json`, JSON.stringify({ ...meta, ...result }, null, 2))
    writeFileSync(`${results}${name}.md`, Sql.render(result, meta, "markdown") + "\n")
    log(`\nwritten: bench/results/${name}.json, bench/results/${name}.md`)
    if (result.mismatches.length > 0 || result.failures.length > 0) {
      log("\nFAILED: some keymeter answers differ from DuckDB's or were not given (see above).")
      process.exitCode = 1
    }
  }
  process.exit()
}
if (values.ratelimits) {
  run.ratelimits = []
  const queries = Mix.ratelimits(Number(values.mix ?? 300), Number(values.seed), Decisions.catalog())
  for (const adapter of adapters.filter((a) => a !== "memory" && a !== "sqlite")) {
    log(`(--ratelimits measures memory and sqlite: ${adapter} left out)`)
  }
  for (const size of sizes) {
    const t = performance.now()
    Decisions.ensure(size)
    log(
      `\n${Report.count(size)} rate-limit decisions (data set ready in ${
        ((performance.now() - t) / 1000).toFixed(1)
      } s)`
    )
    const engines = [
      ...runWorker("duckdb", size, true),
      ...adapters.filter((a) => a === "memory" || a === "sqlite").flatMap((adapter) => runWorker(adapter, size, true))
    ]
    const mismatches = compareRatelimits(engines)
    if (mismatches.length > 0) failed = true
    run.ratelimits.push({
      size,
      engines: engines.map(({ mix, ...rest }) => ({ ...rest, ...(mix ? { mix: { ...mix, answers: [] } } : {}) })),
      mismatches,
      queries: queries.map((q) => ({ text: Mix.describe(q), shape: Mix.shapeOf(q) }))
    })
  }
}
const only = values["http-only"] || values.ratelimits
for (const size of values["http-only"] || values["skip-queries"] || values.ratelimits ? [] : sizes) {
  const t = performance.now()
  Dataset.ensure(size)
  log(`\n${Report.count(size)} events (data set ready in ${((performance.now() - t) / 1000).toFixed(1)} s)`)
  // SQLite is also measured reopened (hot range reloaded, as after a restart) and without its
  // hot range (the rollups alone), both on the file its first worker wrote.
  const workers = adapters.flatMap((
    adapter
  ) => (adapter === "sqlite" ? ["sqlite", "sqlite-reopened", "sqlite-rollups"] : [adapter]))
  const engines = [...runWorker("duckdb", size), ...workers.flatMap((worker) => runWorker(worker, size))]
  const mismatches = compare(engines)
  if (mismatches.length > 0) failed = true
  run.sizes.push({
    size,
    engines: engines.map(({ answers: _, mix, ...rest }) => ({
      ...rest,
      answers: {},
      ...(mix
        ? { mix: { ...mix, answers: [], ...(mix.unseen ? { unseen: { ...mix.unseen, answers: [] } } : {}) } }
        : {})
    })),
    mismatches
  })
}

if (!values["skip-verify"] && !only) {
  for (const adapter of adapters.filter((a) => a === "memory" || a === "sqlite")) {
    const keys = Dataset.parseSize(adapter === "memory" ? values.keys! : values["sqlite-keys"]!)
    log(`\nverifyKey through the library on ${adapter}, ${Report.count(keys)} keys`)
    run.verify.push(runVerify(adapter === "memory" ? "memory" : `sqlite:${here("../data/verify.db")}`, keys))
  }
}

if (!values["skip-http"] && !values.ratelimits) {
  for (const size of sizes) Dataset.ensure(size)
  const data = Dataset.open(Math.max(...sizes))
  const events = Math.min(data.size, Dataset.parseSize(values["http-events"]!))
  // ClickHouse twice: a call answered once ClickHouse has its events, and once the spool has them.
  for (const adapter of adapters.flatMap((a) => a === "clickhouse" ? [a, "clickhouse (spool)"] : [a])) {
    log(`\nHTTP on ${adapter}`)
    const clickhouse = adapter.startsWith("clickhouse") ? Clickhouse.start() : undefined
    const spool = here("../data/http-spool/")
    rmSync(spool, { recursive: true, force: true })
    const server = adapter === "sqlite"
      ? await Http.start(`sqlite:${here("../data/http.db")}`)
      : clickhouse
      ? await Http.start("memory", {
        KEYMETER_ANALYTICS: `clickhouse:${Clickhouse.keymeterUrl(clickhouse.url, "keymeter_bench_http")}`,
        ...(adapter === "clickhouse (spool)" ? { KEYMETER_ANALYTICS_SPOOL: spool } : {})
      })
      : await Http.start("memory")
    const rate = await Http.ingest(server, data, events)
    const load = await Load.run(server, Number(values["load-seconds"]), values.routes)
    run.http.push({ adapter, ingest: { eventsPerSecond: rate, events }, load })
    await server.stop()
    clickhouse?.stop()
  }
  data.close()
}

if (!values["skip-scale-out"] && !only) {
  log("\nSeveral servers")
  run.scaleOut = await ScaleOut.run(Math.max(3, Math.round(Number(values["load-seconds"]) / 2)), log)
}

run.machine["load at end"] = loadavg().map((l) => l.toFixed(2)).join(" ")
log("\n" + Report.render(run, "text"))
const results = here("../results/")
mkdirSync(results, { recursive: true })
/** Writes the run as bench/results/<what>-<sizes>.{json,md}. */
const writeNamed = (what: string) => {
  const name = `${what}-${values.size!.replaceAll(",", "-").toLowerCase()}`
  writeFileSync(`${results}${name}.json`, JSON.stringify(run, null, 2))
  writeFileSync(`${results}${name}.md`, Report.render(run, "markdown") + "\n")
  log(`\nwritten: bench/results/${name}.json, bench/results/${name}.md`)
}
if (values.ratelimits) {
  // Beside the full runs' latest.md, which it leaves alone.
  writeNamed("ratelimits")
} else if (sizes.some((size) => size >= 100_000_000)) {
  // A run at 100M (issue 32) is kept beside the full runs' latest.md, which it leaves alone.
  writeNamed("events")
} else {
  const stamp = run.startedAt.replaceAll(":", "-").slice(0, 19)
  writeFileSync(`${results}${stamp}.json`, JSON.stringify(run, null, 2))
  writeFileSync(`${results}${stamp}.md`, Report.render(run, "markdown") + "\n")
  writeFileSync(`${results}latest.md`, Report.render(run, "markdown") + "\n")
  log(`\nwritten: bench/results/${stamp}.json, bench/results/${stamp}.md, bench/results/latest.md`)
}
if (failed) {
  log("\nFAILED: some answers differ from DuckDB's (see above).")
  process.exitCode = 1
}
