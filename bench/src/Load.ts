/**
 * HTTP load on the standalone server with autocannon (loopback, bounded in time): the day-bucket
 * analytics query, recordVerifications and setOverride, each alone, every request counted.
 */
// autocannon ships no type declarations; the results are read defensively below.
// @ts-expect-error no types
import autocannon from "autocannon"
import { apiId } from "./Dataset.js"
import type { Server } from "./Http.js"
import { ROOT_KEY } from "./Http.js"
import { references } from "./Queries.js"

const CONNECTIONS = 16

interface Route {
  readonly route: string
  readonly method: "GET" | "POST"
  readonly path: string
  readonly body?: (n: number) => string
  readonly headers?: (n: number) => Record<string, string>
}

const recordBody = () =>
  JSON.stringify({
    verifications: Array.from(
      { length: 100 },
      (_, i) => ({ apiId: apiId(0), keyId: `load_${i % 10}`, outcome: "valid", tags: ["load"] })
    )
  })

const day = references[0]!.query
const routes: ReadonlyArray<Route> = [
  {
    route: "getVerifications (day buckets, 30 d)",
    method: "GET",
    path: `/v1/analytics.getVerifications?${new URLSearchParams({
      apiId: day.apiId,
      groupBy: "day",
      start: String(day.start),
      end: String(day.end)
    })}`
  },
  {
    route: "recordVerifications (100 events)",
    method: "POST",
    path: "/v1/analytics.recordVerifications",
    body: recordBody
  },
  {
    // What a receipt costs: each request a new key, so each is stored with its receipt.
    route: "recordVerifications (100 events, Idempotency-Key)",
    method: "POST",
    path: "/v1/analytics.recordVerifications",
    body: recordBody,
    headers: (n) => ({ "idempotency-key": `load-${process.pid}-${n}` })
  },
  {
    route: "setOverride",
    method: "POST",
    path: "/v1/ratelimits.setOverride",
    body: (n) => JSON.stringify({ namespaceName: "load", identifier: `user_${n % 1000}`, limit: 10, duration: 60_000 })
  }
]

const fire = (server: Server, route: Route, seconds: number) =>
  new Promise<Record<string, any>>((resolve, reject) => {
    let n = 0
    autocannon(
      {
        url: server.base + route.path,
        method: route.method,
        connections: CONNECTIONS,
        duration: seconds,
        headers: { authorization: `Bearer ${ROOT_KEY}`, "content-type": "application/json" },
        ...(route.body
          ? {
            requests: [{
              setupRequest: (request: Record<string, any>) => {
                const i = n++
                return {
                  ...request,
                  body: route.body!(i),
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

/** Each route for `seconds`; requests/s (mean), latency p50/p99 in ms, failed requests. */
export const run = async (server: Server, seconds: number) => {
  const out = []
  for (const route of routes) {
    const result = await fire(server, route, seconds)
    const failed = Number(result.errors ?? 0) + Number(result.timeouts ?? 0) + Number(result.non2xx ?? 0)
    out.push({
      route: route.route,
      requestsPerSecond: Number(result.requests?.average ?? 0),
      p50: Number(result.latency?.p50 ?? NaN),
      p99: Number(result.latency?.p99 ?? NaN),
      errors: failed,
      requests: Number(result.requests?.total ?? 0)
    })
    process.stdout.write(
      `  ${route.route}: ${Math.round(out.at(-1)!.requestsPerSecond)} req/s, p99 ${
        out.at(-1)!.p99
      } ms, ${failed} failed\n`
    )
  }
  return out
}
