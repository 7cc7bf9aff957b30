/**
 * A paced (open-loop) load in a process of its own: requests sent at a fixed rate whatever the
 * server's answers, each one's latency counted from when it was due (not when a free connection
 * sent it), to the µs. A load that saturates the server (autocannon's) measures its throughput:
 * any CPU the server gives elsewhere lengthens every queue. At a rate the server keeps up with,
 * the latency says how long a request waited for other work: what a heavy query may not add.
 *
 * `--requests FILE` holds `{ base, path, status, headers, bodies }`; request n posts
 * `bodies[n % length]`. The first second's requests open the connections and are not counted.
 * Prints `{ sent, ok, failed, statuses, p50, p99, p999, max }` (ms, of the counted ones) as JSON,
 * with `clientStall`: the longest this client's own event loop was late (ms) while counting. A
 * request due in a stall of the client is sent late and counted late: a stall seen by the client
 * alone is not the server's.
 */
import { readFileSync } from "node:fs"
import * as http from "node:http"
import { monitorEventLoopDelay } from "node:perf_hooks"
import { parseArgs } from "node:util"

const { values } = parseArgs({
  options: {
    requests: { type: "string" },
    rate: { type: "string" },
    seconds: { type: "string" },
    connections: { type: "string", default: "32" }
  }
})
const spec = JSON.parse(readFileSync(values.requests!, "utf8")) as {
  base: string
  path: string
  status: number
  headers: Record<string, string>
  bodies: Array<string>
}
const rate = Number(values.rate)
const seconds = Number(values.seconds)
const url = new URL(spec.base)
const agent = new http.Agent({ keepAlive: true, maxSockets: Number(values.connections) })
const bodies = spec.bodies.map((body) => Buffer.from(body))

const latencies: Array<number> = []
const statuses: Record<string, number> = {}
let failed = 0
let pending = 0

const send = (n: number, due: number) => {
  pending++
  const body = bodies[n % bodies.length]!
  const request = http.request({
    agent,
    host: url.hostname,
    port: url.port,
    method: "POST",
    path: spec.path,
    headers: { ...spec.headers, "content-length": body.length }
  }, (response) => {
    response.on("data", () => {})
    response.on("end", () => {
      pending--
      const status = response.statusCode ?? 0
      statuses[status] = (statuses[status] ?? 0) + 1
      if (status !== spec.status) failed++
      else if (n >= warm) latencies.push(performance.now() - due)
    })
  })
  request.on("error", () => {
    pending--
    failed++
  })
  request.end(body)
}

const interval = 1000 / rate
// The first second opens the connections and warms both sides; its requests are not counted.
const warm = Math.round(rate)
const total = warm + Math.round(rate * seconds)
const start = performance.now() + 20
const loop = monitorEventLoopDelay({ resolution: 1 })
loop.enable()
// Counting starts after the warm-up second: so does the client's stall.
setTimeout(() => loop.reset(), 20 + 1000).unref()
let next = 0
await new Promise<void>((resolve) => {
  const tick = () => {
    const now = performance.now()
    while (next < total && start + next * interval <= now) {
      send(next, start + next * interval)
      next++
    }
    if (next < total) setTimeout(tick, Math.max(0, start + next * interval - performance.now()))
    else resolve()
  }
  setTimeout(tick, 20)
})
while (pending > 0) await new Promise((resolve) => setTimeout(resolve, 5))
agent.destroy()

latencies.sort((a, b) => a - b)
const at = (q: number) =>
  latencies.length === 0 ? NaN : latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!
process.stdout.write(JSON.stringify({
  sent: total,
  ok: latencies.length,
  failed,
  statuses,
  p50: at(0.5),
  p99: at(0.99),
  p999: at(0.999),
  max: latencies.length === 0 ? NaN : latencies[latencies.length - 1],
  clientStall: loop.max / 1e6
}))
