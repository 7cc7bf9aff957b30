/**
 * The ClickHouse server of a benchmark run: `KEYMETER_BENCH_CLICKHOUSE` when set (a server of
 * yours, left running), else one started from the Debian package's `clickhouse-server` with its
 * data under `bench/data/clickhouse/`, emptied at each run (see
 * `packages/storage-clickhouse/scripts/server.sh`).
 */
import { ClickHouseLogLevel, createClient } from "@clickhouse/client"
import { execFile, spawnSync } from "node:child_process"
import { readFileSync, rmSync } from "node:fs"
import { fileURLToPath } from "node:url"

const script = fileURLToPath(new URL("../../packages/storage-clickhouse/scripts/server.sh", import.meta.url))
const dir = fileURLToPath(new URL("../data/clickhouse/", import.meta.url))

/** A running server: its URL, and `stop` (a no-op for a server of yours). */
export const start = (): { readonly url: string; readonly stop: () => void } => {
  const given = process.env.KEYMETER_BENCH_CLICKHOUSE
  if (given) return { url: given.replace(/\/+$/, ""), stop: () => {} }
  // Every run starts empty: the databases are recreated anyway, and a server holding earlier
  // runs' data takes a minute to load it before it answers.
  spawnSync("bash", [script, "stop", dir])
  rmSync(dir, { recursive: true, force: true })
  const started = spawnSync("bash", [script, "start", dir], { encoding: "utf8" })
  if (started.status !== 0) {
    throw new Error(
      `Could not start clickhouse-server (install it: apt-get install clickhouse-server): ${started.stderr}`
    )
  }
  return { url: started.stdout.trim(), stop: () => void spawnSync("bash", [script, "stop", dir]) }
}

/** Peak RSS of the server this run started, MiB (undefined for a server of yours). */
export const serverPeakRss = (): number | undefined => {
  if (process.env.KEYMETER_BENCH_CLICKHOUSE) return undefined
  try {
    const pid = readFileSync(`${dir}pid`, "utf8").trim()
    return Math.round(Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024)
  } catch {
    return undefined
  }
}

const run = async <A>(url: string, f: (client: ReturnType<typeof createClient>) => Promise<A>) => {
  const client = createClient({ url, log: { level: ClickHouseLogLevel.OFF } })
  try {
    return await f(client)
  } finally {
    await client.close()
  }
}

/**
 * keymeter's URL for `database` on the server at `url`: its aggregations read over the native
 * protocol, as clickhouse-client's do, unless `KEYMETER_BENCH_CLICKHOUSE_READS=http`.
 */
export const keymeterUrl = (url: string, database: string) =>
  process.env.KEYMETER_BENCH_CLICKHOUSE_READS === "http"
    ? `${url}/${database}`
    : `${url}/${database}?native_port=${nativePort(url)}`

/** Drops a benchmark database (its name is ours, never input). */
export const drop = (url: string, database: string) =>
  run(url, (client) => client.command({ query: `DROP DATABASE IF EXISTS ${database}` }))

/** Bytes the database's active parts take on disk, MiB. */
export const diskMiB = (url: string, database: string) =>
  run(url, async (client) => {
    const result = await client.query({
      query: `SELECT sum(bytes_on_disk) FROM system.parts WHERE active AND database = '${database}'`,
      format: "JSONCompact"
    })
    const [[bytes]] = (await result.json<[string]>()).data
    return Math.round(Number(bytes) / 1024 / 1024)
  })

/**
 * Waits until the server merges no part of `database` (two looks a second apart), at most
 * `maxSeconds`: a query timed while ClickHouse still merges what was just inserted varies by 3x
 * from run to run. Seconds waited.
 */
export const settle = (url: string, database: string, maxSeconds = 300) =>
  run(url, async (client) => {
    const started = performance.now()
    let quiet = 0
    while (quiet < 2 && performance.now() - started < maxSeconds * 1000) {
      const result = await client.query({
        query: `SELECT count() FROM system.merges WHERE database = '${database}'`,
        format: "JSONCompact"
      })
      const [[merging]] = (await result.json<[string]>()).data
      quiet = Number(merging) === 0 ? quiet + 1 : 0
      await new Promise((resolve) => setTimeout(resolve, 1000))
    }
    return (performance.now() - started) / 1000
  })

/**
 * The native port of the server at `url`: the one this run started listens on its HTTP port + 1
 * (see server.sh); for a server of yours, `KEYMETER_BENCH_CLICKHOUSE_PORT` (default 9000).
 */
export const nativePort = (url: string) =>
  process.env.KEYMETER_BENCH_CLICKHOUSE
    ? Number(process.env.KEYMETER_BENCH_CLICKHOUSE_PORT ?? 9000)
    : Number(new URL(url).port) + 1

/**
 * `texts` (one query's statements, in order) run by `clickhouse-client` over its native protocol,
 * `runs` times after three unmeasured, each time the sum of the elapsed times it reports (`--time`),
 * ms. Output is read and discarded (`Null`). It reports whole ms, so a median cannot fall between
 * two; the mean of the middle 80% of the runs ({@link summary}), which rounding to the nearest ms
 * leaves about where it was, is what keymeter's median is compared with.
 */
export const clientTimes = async (url: string, database: string, texts: ReadonlyArray<string>, runs: number) => {
  const warm = 3
  const script = Array.from({ length: warm + runs }, () => texts.map((t) => t + ";\n").join("")).join("")
  const stderr = await new Promise<string>((resolve, reject) =>
    execFile(
      "clickhouse-client",
      [
        "--host",
        new URL(url).hostname,
        "--port",
        String(nativePort(url)),
        "--database",
        database,
        "--time",
        "--format",
        "Null",
        "--multiquery",
        "--query",
        script
      ],
      { maxBuffer: 64 * 1024 * 1024 },
      (
        error,
        _stdout,
        stderr
      ) => (error ? reject(new Error(`clickhouse-client: ${stderr || error.message}`)) : resolve(stderr))
    )
  )
  const elapsed = stderr.split("\n").filter((line) => /^\d+\.\d+$/.test(line.trim())).map((line) => Number(line) * 1000)
  if (elapsed.length !== (warm + runs) * texts.length) {
    throw new Error(`clickhouse-client reported ${elapsed.length} times for ${(warm + runs) * texts.length} statements`)
  }
  return Array.from({ length: runs }, (_, r) => {
    let sum = 0
    for (let i = 0; i < texts.length; i++) sum += elapsed[(warm + r) * texts.length + i]!
    return sum
  })
}

/** Median, and mean of the middle 80% (see {@link clientTimes}), of `samples`. */
export const summary = (samples: ReadonlyArray<number>) => {
  const sorted = [...samples].sort((a, b) => a - b)
  const cut = Math.floor(sorted.length / 10)
  const middle = sorted.slice(cut, sorted.length - cut)
  return { median: sorted[sorted.length >> 1]!, mean: middle.reduce((a, b) => a + b, 0) / middle.length }
}
