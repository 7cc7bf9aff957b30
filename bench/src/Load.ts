/**
 * HTTP load on the standalone server with autocannon (loopback, 32 connections, bounded in time),
 * each route beside a bare `node:http` baseline that serves the same bytes (status, headers,
 * body) from its own process: rounds alternate baseline and keymeter in the same run, so the ratio
 * is measured on one machine state. Every request is counted; any failure or unexpected status
 * is reported.
 */
// autocannon ships no type declarations; the results are read defensively below.
// @ts-expect-error no types
import autocannon from "autocannon"
import { spawn } from "node:child_process"
import { rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Compiled from "./Compiled.js"
import { apiId } from "./Dataset.js"
import type { Server } from "./Http.js"
import { ROOT_KEY } from "./Http.js"
import { references } from "./Queries.js"

const CONNECTIONS = 32
const ROUNDS = 2

interface Route {
  readonly route: string
  readonly method: "GET" | "POST"
  readonly path: string
  /** The path of request `n`, when requests differ (`path` is the first). */
  readonly pathOf?: (n: number) => string
  /** The status every answer must have. */
  readonly status: number
  readonly key?: string
  readonly body?: (n: number) => string
  readonly headers?: (n: number) => Record<string, string>
  /** Runs once on the server before the route is loaded. */
  readonly setup?: (server: Server) => Promise<void>
}

/** Secrets of keys created on the server for keys.verifyKey. */
const verifySecrets: Array<string> = []
const VERIFY_KEYS = 1000

/** A key created on the server by keys.createKey with `body`: its id and secret. */
const createKeyOn = async (server: Server, body: object): Promise<{ keyId: string; key: string }> => {
  const reply = await fetch(server.base + "/v1/keys.createKey", {
    method: "POST",
    headers: { authorization: `Bearer ${ROOT_KEY}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  if (reply.status !== 200) throw new Error(`createKey answered ${reply.status}: ${await reply.text()}`)
  return (await reply.json()) as { keyId: string; key: string }
}

/** Creates {@link VERIFY_KEYS} keys on the server, in tens sharing an identity, each with a limit. */
const createKeys = async (server: Server) => {
  verifySecrets.length = 0
  for (let i = 0; i < VERIFY_KEYS; i++) {
    const created = await createKeyOn(server, {
      apiId: apiId(0),
      externalId: `customer_${Math.floor(i / 10)}`,
      ratelimit: { limit: 1_000_000_000, duration: 60_000 }
    })
    verifySecrets.push(created.key)
  }
}

/** Ids of keys created with credits for keys.updateRemaining. */
const creditKeyIds: Array<string> = []

/** Creates {@link VERIFY_KEYS} keys with credits, for keys.updateRemaining. */
const createCreditKeys = async (server: Server) => {
  creditKeyIds.length = 0
  for (let i = 0; i < VERIFY_KEYS; i++) {
    creditKeyIds.push((await createKeyOn(server, { apiId: apiId(0), remaining: 1_000_000 })).keyId)
  }
}

/** 2,000 rate-limit decisions of 100 identifiers in the namespace `load`, for getRatelimits. */
const limitDecisions = async (server: Server) => {
  for (let i = 0; i < 2_000; i++) {
    const reply = await fetch(server.base + "/v1/ratelimits.limit", {
      method: "POST",
      headers: { authorization: `Bearer ${ROOT_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ namespace: "load", identifier: `user_${i % 100}`, limit: 10, duration: 60_000 })
    })
    if (reply.status !== 200) throw new Error(`ratelimits.limit answered ${reply.status}: ${await reply.text()}`)
  }
}

/**
 * The top 10 identifiers of the last day by decisions, the window ending a ms later on each
 * request when `n` is given (no answer remembered, each computed).
 */
const ratelimitsPath = (n?: number) =>
  `/v1/analytics.getRatelimits?${new URLSearchParams({
    namespaceName: "load",
    groupBy: "identifier",
    orderBy: "total",
    order: "desc",
    limit: "10",
    ...(n === undefined ? {} : { start: String(Date.now() - 86_400_000), end: String(Date.now() + 3_600_000 + n) })
  })}`

const recordBody = () =>
  JSON.stringify({
    verifications: Array.from(
      { length: 100 },
      (_, i) => ({ apiId: apiId(0), keyId: `load_${i % 10}`, outcome: "valid", tags: ["load"] })
    )
  })

const day = references[0]!.query
const dayPath = `/v1/analytics.getVerifications?${new URLSearchParams({
  apiId: day.apiId,
  groupBy: "day",
  start: String(day.start),
  end: String(day.end)
})}`

/**
 * The day series over a 30-day window that starts a minute earlier on each request (50,000
 * windows): no answer is remembered, each is computed, as for dashboards that nobody shares.
 */
const variedDayPath = (n: number) =>
  `/v1/analytics.getVerifications?${new URLSearchParams({
    apiId: day.apiId,
    groupBy: "day",
    start: String(day.start! - (n % 50_000) * 60_000),
    end: String(day.end! - (n % 50_000) * 60_000)
  })}`

const routes: ReadonlyArray<Route> = [
  { route: "getVerifications (day buckets, 30 d)", method: "GET", path: dayPath, status: 200 },
  {
    route: "getVerifications (day buckets, 30 d, a new window each request)",
    method: "GET",
    path: variedDayPath(0),
    pathOf: variedDayPath,
    status: 200
  },
  { route: "getVerifications, unknown root key (401)", method: "GET", path: dayPath, status: 401, key: "sk_nope" },
  {
    route: "getRatelimits (top 10 identifiers)",
    method: "GET",
    path: ratelimitsPath(),
    status: 200,
    setup: limitDecisions
  },
  {
    route: "getRatelimits (top 10 identifiers, a new window each request)",
    method: "GET",
    path: ratelimitsPath(0),
    pathOf: ratelimitsPath,
    status: 200,
    setup: limitDecisions
  },
  {
    route: "recordVerifications (100 events)",
    method: "POST",
    path: "/v1/analytics.recordVerifications",
    status: 200,
    body: recordBody
  },
  {
    // What a receipt costs: each request a new key, so each is stored with its receipt.
    route: "recordVerifications (100 events, Idempotency-Key)",
    method: "POST",
    path: "/v1/analytics.recordVerifications",
    status: 200,
    body: recordBody,
    headers: (n) => ({ "idempotency-key": `load-${process.pid}-${Date.now()}-${n}` })
  },
  {
    route: "ratelimits.limit",
    method: "POST",
    path: "/v1/ratelimits.limit",
    status: 200,
    body: (n) =>
      JSON.stringify({ namespace: "load", identifier: `user_${n % 1000}`, limit: 1_000_000, duration: 60_000 })
  },
  {
    // A thousand keys with identities and an auto-applied limit, verified in turn (recording on).
    route: "keys.verifyKey",
    method: "POST",
    path: "/v1/keys.verifyKey",
    status: 200,
    setup: createKeys,
    body: (n) => JSON.stringify({ key: verifySecrets[Math.max(0, n) % VERIFY_KEYS], apiId: apiId(0) })
  },
  {
    // The twins in Unkey v2's dialect: the same work, v2's bodies and envelope.
    route: "v2 ratelimit.limit",
    method: "POST",
    path: "/v2/ratelimit.limit",
    status: 200,
    body: (n) =>
      JSON.stringify({ namespace: "load", identifier: `user_${n % 1000}`, limit: 1_000_000, duration: 60_000 })
  },
  {
    route: "v2 keys.verifyKey",
    method: "POST",
    path: "/v2/keys.verifyKey",
    status: 200,
    setup: createKeys,
    body: (n) => JSON.stringify({ key: verifySecrets[Math.max(0, n) % VERIFY_KEYS] })
  },
  {
    route: "setOverride",
    method: "POST",
    path: "/v1/ratelimits.setOverride",
    status: 200,
    body: (n) => JSON.stringify({ namespaceName: "load", identifier: `user_${n % 1000}`, limit: 10, duration: 60_000 })
  },
  {
    // Each request a new key: a hash, a key row and its receipt-free answer with the secret.
    route: "createKey",
    method: "POST",
    path: "/v1/keys.createKey",
    status: 200,
    body: (n) => JSON.stringify({ apiId: apiId(0), name: `load ${n}`, meta: { n } })
  },
  {
    // A thousand keys with credits, topped up in turn.
    route: "updateRemaining",
    method: "POST",
    path: "/v1/keys.updateRemaining",
    status: 200,
    setup: createCreditKeys,
    body: (n) => JSON.stringify({ keyId: creditKeyIds[Math.max(0, n) % VERIFY_KEYS], op: "increment", value: 1 })
  }
]

/** The baseline: a bare node:http server in its own process, reading each body and answering `answer`. */
const BASELINE = `
const http = require("node:http")
const { status, headers, body } = JSON.parse(process.env.ANSWER)
const bytes = Buffer.from(body)
const server = http.createServer((req, res) => {
  req.on("data", () => {})
  req.on("end", () => {
    res.writeHead(status, { ...headers, "content-length": bytes.length })
    res.end(bytes)
  })
})
server.listen(0, "127.0.0.1", () => console.log("port " + server.address().port))
`

const startBaseline = (answer: { status: number; headers: Record<string, string>; body: string }) =>
  new Promise<{ base: string; stop: () => void }>((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", BASELINE], {
      env: { ...process.env, ANSWER: JSON.stringify(answer) },
      stdio: ["ignore", "pipe", "inherit"]
    })
    child.stdout.on("data", (chunk: Buffer) => {
      const match = /port (\d+)/.exec(chunk.toString())
      if (match) resolve({ base: `http://127.0.0.1:${match[1]}`, stop: () => child.kill("SIGKILL") })
    })
    child.once("exit", (code) => reject(new Error(`the baseline exited (${code})`)))
  })

const fire = (base: string, route: Route, seconds: number) =>
  new Promise<Record<string, any>>((resolve, reject) => {
    let n = 0
    autocannon(
      {
        url: base + route.path,
        method: route.method,
        connections: CONNECTIONS,
        duration: seconds,
        headers: { authorization: `Bearer ${route.key ?? ROOT_KEY}`, "content-type": "application/json" },
        ...(route.body || route.pathOf
          ? {
            requests: [{
              setupRequest: (request: Record<string, any>) => {
                const i = n++
                return {
                  ...request,
                  ...(route.pathOf ? { path: route.pathOf(i) } : {}),
                  ...(route.body ? { body: route.body(i) } : {}),
                  ...(route.headers ? { headers: { ...request.headers, ...route.headers(i) } } : {})
                }
              }
            }]
          }
          : {})
      },
      (error: unknown, result: Record<string, any>) => (error ? reject(error) : resolve(result))
    )
  })

/** One answer of keymeter to the route, as the baseline will serve it. */
const capture = async (server: Server, route: Route) => {
  const reply = await fetch(server.base + route.path, {
    method: route.method,
    headers: {
      authorization: `Bearer ${route.key ?? ROOT_KEY}`,
      "content-type": "application/json",
      ...(route.headers ? route.headers(-1) : {})
    },
    ...(route.body ? { body: route.body(0) } : {})
  })
  const headers: Record<string, string> = {}
  reply.headers.forEach((value, name) => {
    if (name !== "content-length" && name !== "date" && name !== "connection" && name !== "keep-alive") {
      headers[name] = value
    }
  })
  return { status: reply.status, headers, body: await reply.text() }
}

export interface LoadResult {
  readonly route: string
  readonly requestsPerSecond: number
  readonly p50: number
  readonly p99: number
  readonly errors: number
  readonly requests: number
  readonly baseline: { readonly requestsPerSecond: number; readonly p99: number }
  /** keymeter's requests/s over the baseline's. */
  readonly ratio: number
}

const summary = (results: ReadonlyArray<Record<string, any>>, status: number) => {
  const total = (f: (r: Record<string, any>) => number) => results.reduce((sum, r) => sum + f(r), 0)
  const requests = total((r) => Number(r.requests?.total ?? 0))
  const unexpected = status === 200
    ? total((r) => Number(r.non2xx ?? 0))
    : requests - total((r) => Number(r.statusCodeStats?.[String(status)]?.count ?? 0))
  return {
    requestsPerSecond: total((r) => Number(r.requests?.average ?? 0)) / results.length,
    p50: Math.max(...results.map((r) => Number(r.latency?.p50 ?? NaN))),
    p99: Math.max(...results.map((r) => Number(r.latency?.p99 ?? NaN))),
    errors: total((r) => Number(r.errors ?? 0) + Number(r.timeouts ?? 0)) + unexpected,
    requests
  }
}

/**
 * Each route: baseline and keymeter alternated for {@link ROUNDS} rounds of `seconds / ROUNDS`
 * each; requests/s (mean of rounds), latency p50/p99 in ms (worst round), failed requests. With
 * `baseline: false`, keymeter's rounds alone (the baseline's figures and the ratio are NaN); with
 * `setup: false`, the routes' setup is not run again (the keys of an earlier run are verified).
 */
export const run = async (
  server: Server,
  seconds: number,
  only?: string,
  options: { readonly baseline?: boolean; readonly setup?: boolean } = {}
): Promise<Array<LoadResult>> => {
  const out: Array<LoadResult> = []
  const each = Math.max(1, Math.round(seconds / ROUNDS))
  for (const route of routes.filter((r) => only === undefined || r.route.includes(only))) {
    if (options.setup !== false) await route.setup?.(server)
    const baseline = options.baseline === false ? undefined : await startBaseline(await capture(server, route))
    const ours: Array<Record<string, any>> = []
    const theirs: Array<Record<string, any>> = []
    try {
      for (let round = 0; round < ROUNDS; round++) {
        if (baseline) theirs.push(await fire(baseline.base, route, each))
        ours.push(await fire(server.base, route, each))
      }
    } finally {
      baseline?.stop()
    }
    const mine = summary(ours, route.status)
    const base = baseline ? summary(theirs, route.status) : { requestsPerSecond: NaN, p99: NaN }
    const result: LoadResult = {
      route: route.route,
      ...mine,
      baseline: { requestsPerSecond: base.requestsPerSecond, p99: base.p99 },
      ratio: mine.requestsPerSecond / base.requestsPerSecond
    }
    out.push(result)
    process.stdout.write(
      `  ${route.route}: ${Math.round(result.requestsPerSecond)} req/s, ${
        baseline ? "" : `p50 ${result.p50} ms, `
      }p99 ${result.p99} ms, ${result.errors} failed` +
        (baseline
          ? `; node:http ${Math.round(base.requestsPerSecond)} req/s, p99 ${base.p99} ms; ${result.ratio.toFixed(3)}×\n`
          : "\n")
    )
  }
  return out
}

export interface PacedResult {
  readonly route: string
  /** Requests due per second. */
  readonly rate: number
  readonly sent: number
  readonly ok: number
  readonly failed: number
  /** Latency from when each request was due, ms. */
  readonly p50: number
  readonly p99: number
  readonly p999: number
  readonly max: number
  /** The longest the client's own event loop was late while counting, ms (see `Paced.ts`). */
  readonly clientStall: number
}

/**
 * Each route whose name contains `only`, loaded at `rate` requests/s for `seconds` by a paced
 * client in its own process (`Paced.ts`): latencies to the µs, counted from when each request was
 * due. With `setup: false`, the routes' setup is not run again.
 */
export const paced = async (
  server: Server,
  rate: number,
  seconds: number,
  only: string,
  options: { readonly setup?: boolean } = {}
): Promise<Array<PacedResult>> => {
  const out: Array<PacedResult> = []
  for (const route of routes.filter((r) => r.route.includes(only) && r.method === "POST" && r.body)) {
    if (options.setup !== false) await route.setup?.(server)
    const file = join(tmpdir(), `keymeter-paced-${process.pid}.json`)
    writeFileSync(
      file,
      JSON.stringify({
        base: server.base,
        path: route.path,
        status: route.status,
        headers: { authorization: `Bearer ${route.key ?? ROOT_KEY}`, "content-type": "application/json" },
        bodies: Array.from({ length: 1000 }, (_, n) => route.body!(n))
      })
    )
    try {
      // Not spawnSync: the heavy queries' clients run on this process's loop meanwhile.
      const stdout = await new Promise<string>((resolve, reject) => {
        const child = spawn(
          process.execPath,
          Compiled.script("Paced.ts", [
            "--requests",
            file,
            "--rate",
            String(rate),
            "--seconds",
            String(seconds),
            "--connections",
            String(CONNECTIONS)
          ]),
          { stdio: ["ignore", "pipe", "inherit"] }
        )
        let text = ""
        child.stdout.on("data", (chunk: Buffer) => (text += chunk.toString()))
        child.once("error", reject)
        child.once(
          "exit",
          (code) => (code === 0 ? resolve(text) : reject(new Error(`the paced client exited (${code})`)))
        )
      })
      const result = JSON.parse(stdout) as Omit<PacedResult, "route" | "rate">
      out.push({ route: route.route, rate, ...result })
      process.stdout.write(
        `  ${route.route} at ${rate} req/s: p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms, ` +
          `p99.9 ${result.p999.toFixed(2)} ms, max ${result.max.toFixed(1)} ms, ${result.failed} failed, ` +
          `client stalled up to ${result.clientStall.toFixed(1)} ms\n`
      )
    } finally {
      rmSync(file, { force: true })
    }
  }
  return out
}
