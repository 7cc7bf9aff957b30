/**
 * Several servers: rate-limit decisions per second and their p99 with each server's own windows
 * and with windows shared in Redis, for one and three server processes (32 concurrent callers
 * each, `keymeter.limit` through the library); and `keys.verifyKey` over HTTP through three
 * standalone servers sharing PostgreSQL, Redis and ClickHouse. Throwaway PostgreSQL and Redis
 * servers are started from the Debian packages (`packages/testing/scripts/`), ClickHouse as for
 * the rest of the bench.
 *
 * `ScaleOut.ts --worker --ratelimit <url|local> --seconds 5` is one limiter process (JSON on stdout).
 */
// @ts-expect-error no types
import autocannon from "autocannon"
import { createKeymeter } from "keymeter"
import { spawn, spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import * as Clickhouse from "./Clickhouse.js"
import * as Compiled from "./Compiled.js"

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))
const scripts = here("../../packages/testing/scripts/")

export interface LimiterResult {
  readonly windows: "local" | "redis"
  readonly servers: number
  readonly decisionsPerSecond: number
  readonly p50: number
  readonly p99: number
}

export interface ScaleOutResult {
  readonly limiter: ReadonlyArray<LimiterResult>
  readonly verifyThreeServers?: { readonly requestsPerSecond: number; readonly p99: number; readonly errors: number }
}

const CALLERS = 32

/** One server process deciding limits as fast as 32 callers ask, for `seconds`. */
const worker = async (ratelimit: string, seconds: number) => {
  const keymeter = await createKeymeter(ratelimit === "local" ? {} : { ratelimit })
  const ms: Array<number> = []
  const until = performance.now() + seconds * 1000
  let n = 0
  await Promise.all(Array.from({ length: CALLERS }, async () => {
    while (performance.now() < until) {
      const identifier = `user_${n++ % 10_000}`
      const t = performance.now()
      await keymeter.limit({ namespace: "bench", identifier, limit: 1_000_000, duration: 60_000 })
      ms.push(performance.now() - t)
    }
  }))
  await keymeter.close()
  ms.sort((a, b) => a - b)
  process.stdout.write(
    JSON.stringify({
      decisions: ms.length,
      seconds,
      p50: ms[ms.length >> 1],
      p99: ms[Math.floor(ms.length * 0.99)]
    }) + "\n"
  )
}

const workers = (count: number, ratelimit: string, seconds: number) =>
  Promise.all(
    Array.from({ length: count }, () =>
      new Promise<{ decisions: number; seconds: number; p50: number; p99: number }>((resolve, reject) => {
        const child = spawn(process.execPath, [
          ...Compiled.script("ScaleOut.ts", ["--worker", "--ratelimit", ratelimit, "--seconds", String(seconds)])
        ], { stdio: ["ignore", "pipe", "inherit"] })
        let out = ""
        child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()))
        child.once("exit", (code) => (code === 0 ? resolve(JSON.parse(out.trim())) : reject(new Error(`exit ${code}`))))
      }))
  )

/** A throwaway server from one of the testing scripts; its URL and how to stop it. */
const throwaway = (script: string) => {
  const dir = mkdtempSync(join(tmpdir(), "keymeter-bench-"))
  const started = spawnSync("bash", [join(scripts, script), "start", dir], { encoding: "utf8" })
  if (started.status !== 0) throw new Error(`${script} failed: ${started.stderr}`)
  return {
    url: started.stdout.trim(),
    stop: () => {
      spawnSync("bash", [join(scripts, script), "stop", dir])
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

const serve = (env: Record<string, string>) =>
  new Promise<{ base: string; stop: () => void }>((resolve, reject) => {
    const child = spawn(process.execPath, [Compiled.serverMain()], {
      env: { ...process.env, PORT: "0", ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let out = ""
    const onData = (chunk: Buffer) => {
      out += chunk.toString()
      const match = /Listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)
      if (match) resolve({ base: match[1]!, stop: () => child.kill("SIGKILL") })
    }
    child.stdout.on("data", onData)
    child.stderr.on("data", onData)
    child.once("exit", (code) => reject(new Error(`a server exited (${code}): ${out}`)))
  })

const fire = (url: string, secrets: ReadonlyArray<string>, seconds: number) =>
  new Promise<Record<string, any>>((resolve, reject) => {
    let n = 0
    autocannon({
      url,
      method: "POST",
      connections: 16,
      duration: seconds,
      headers: { authorization: "Bearer sk_acme_admin_8f3e1c7a9b2d4e6f0a1c", "content-type": "application/json" },
      requests: [{
        setupRequest: (request: Record<string, any>) => ({
          ...request,
          body: JSON.stringify({ key: secrets[n++ % secrets.length], apiId: "api_main" })
        })
      }]
    }, (error: unknown, result: Record<string, any>) => (error ? reject(error) : resolve(result)))
  })

/** The whole section. */
export const run = async (seconds: number, log: (line: string) => void): Promise<ScaleOutResult> => {
  const redis = throwaway("redis-server.sh")
  const limiter: Array<LimiterResult> = []
  try {
    for (const windows of ["local", "redis"] as const) {
      for (const servers of [1, 3]) {
        const results = await workers(servers, windows === "local" ? "local" : redis.url, seconds)
        const result: LimiterResult = {
          windows,
          servers,
          decisionsPerSecond: results.reduce((sum, r) => sum + r.decisions / r.seconds, 0),
          p50: Math.max(...results.map((r) => r.p50)),
          p99: Math.max(...results.map((r) => r.p99))
        }
        limiter.push(result)
        log(
          `  limit, ${windows} windows, ${servers} server${servers > 1 ? "s" : ""}: ${
            Math.round(result.decisionsPerSecond).toLocaleString("en")
          } decisions/s, p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms`
        )
      }
    }
  } catch (error) {
    redis.stop()
    throw error
  }
  const postgres = throwaway("postgres-server.sh")
  const clickhouse = Clickhouse.start()
  const database = `keymeter_bench_scale_${process.pid}`
  const stops: Array<() => void> = []
  try {
    const env = {
      KEYMETER_STORAGE: postgres.url,
      KEYMETER_ANALYTICS: `clickhouse:${clickhouse.url}/${database}`,
      KEYMETER_RATELIMIT: redis.url,
      KEYMETER_PROVISION: here("../../examples/provision.json")
    }
    const first = await serve(env)
    stops.push(first.stop)
    const others = await Promise.all([serve(env), serve(env)])
    for (const other of others) stops.push(other.stop)
    const servers = [first, ...others]
    const secrets: Array<string> = []
    for (let i = 0; i < 300; i++) {
      const reply = await fetch(`${servers[i % 3]!.base}/v1/keys.createKey`, {
        method: "POST",
        headers: { authorization: "Bearer sk_acme_admin_8f3e1c7a9b2d4e6f0a1c", "content-type": "application/json" },
        body: JSON.stringify({
          apiId: "api_main",
          externalId: `customer_${i % 30}`,
          ratelimit: { limit: 1_000_000_000, duration: 60_000 }
        })
      })
      secrets.push(((await reply.json()) as { key: string }).key)
    }
    const results = await Promise.all(servers.map((s) => fire(`${s.base}/v1/keys.verifyKey`, secrets, seconds)))
    const verifyThreeServers = {
      requestsPerSecond: results.reduce((sum, r) => sum + Number(r.requests?.average ?? 0), 0),
      p99: Math.max(...results.map((r) => Number(r.latency?.p99 ?? NaN))),
      errors: results.reduce(
        (sum, r) => sum + Number(r.errors ?? 0) + Number(r.timeouts ?? 0) + Number(r.non2xx ?? 0),
        0
      )
    }
    log(
      `  keys.verifyKey through three servers (48 connections): ${
        Math.round(verifyThreeServers.requestsPerSecond).toLocaleString("en")
      } req/s, p99 ${verifyThreeServers.p99} ms, ${verifyThreeServers.errors} failed`
    )
    return { limiter, verifyThreeServers }
  } finally {
    for (const stop of stops) stop()
    await Clickhouse.drop(clickhouse.url, database).catch(() => {})
    clickhouse.stop()
    postgres.stop()
    redis.stop()
  }
}

if (process.argv.includes("--worker")) {
  const { values } = parseArgs({
    options: { worker: { type: "boolean" }, ratelimit: { type: "string" }, seconds: { type: "string" } }
  })
  await worker(values.ratelimit!, Number(values.seconds))
}
