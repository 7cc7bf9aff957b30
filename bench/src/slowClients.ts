/**
 * Slow clients against the standalone server: 300 connections send a valid root key and then a
 * 1 MB body at 10 bytes/s, while a probe asks a cheap GET over and over. The probe's latencies
 * with and without the slow uploads, measured in one run, show whether slow bodies stall others
 * (issue 13's target: p99 < 50 ms with them).
 *
 *   npm run slow-clients --workspace=@keymeter/bench [-- --slow 300 --probes 2000 --storage memory]
 */
import { mkdtempSync, rmSync } from "node:fs"
import { connect, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { apiId } from "./Dataset.js"
import * as Http from "./Http.js"
import { ROOT_KEY } from "./Http.js"

const { values: args } = parseArgs({
  options: {
    slow: { type: "string", default: "300" },
    probes: { type: "string", default: "2000" },
    storage: { type: "string", default: "memory" }
  }
})
const SLOW = Number(args.slow)
const PROBES = Number(args.probes)

const work = mkdtempSync(join(tmpdir(), "keymeter-slow-clients-"))
const server = await Http.start(args.storage === "sqlite" ? `sqlite:${join(work, "k.db")}` : "memory", {
  // Longer than the measurement, so the slow uploads are still open while the probe runs.
  KEYMETER_REQUEST_TIMEOUT_MS: "120000"
})
const { port } = new URL(server.base)

/** Status lines the slow uploads got back (429 past the upload budget). */
const answered = new Map<string, number>()

/** A POST announcing a 1 MB body, then 10 bytes a second of it. */
const slowUpload = (): Socket => {
  const socket = connect(Number(port), "127.0.0.1")
  socket.on("error", () => {})
  socket.once("data", (chunk: Buffer) => {
    const status = chunk.toString().split("\r\n")[0]!
    answered.set(status, (answered.get(status) ?? 0) + 1)
  })
  socket.write(
    `POST /v1/analytics.recordVerifications HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${ROOT_KEY}\r\n` +
      `Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{"verifications":[`
  )
  const timer = setInterval(() => socket.write(" ".repeat(10)), 1000)
  socket.on("close", () => clearInterval(timer))
  return socket
}

const URL_PROBE = `${server.base}/v1/analytics.getVerifications?apiId=${apiId(0)}`

/** `PROBES` GETs one after another: their latencies in ms and how many answered 200. */
const probe = async () => {
  const latencies: Array<number> = []
  let ok = 0
  for (let i = 0; i < PROBES; i++) {
    const started = performance.now()
    const response = await fetch(URL_PROBE, { headers: { authorization: `Bearer ${ROOT_KEY}` } })
    await response.arrayBuffer()
    latencies.push(performance.now() - started)
    if (response.status === 200) ok++
  }
  latencies.sort((a, b) => a - b)
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!
  return { ok, p50: at(0.5), p99: at(0.99), max: latencies[latencies.length - 1]! }
}

const row = (name: string, r: Awaited<ReturnType<typeof probe>>) =>
  `| ${name} | ${r.ok}/${PROBES} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.max.toFixed(2)} |`

try {
  await probe() // warm-up: JIT, first-query caches
  const alone = await probe()
  const sockets = Array.from({ length: SLOW }, slowUpload)
  await new Promise((resolve) => setTimeout(resolve, 2000)) // every slow upload connected and past its headers
  const open = sockets.filter((s) => !s.destroyed).length
  const withSlow = await probe()
  const stillOpen = sockets.filter((s) => !s.destroyed).length
  for (const socket of sockets) socket.destroy()
  console.log(`storage ${args.storage}; ${SLOW} slow uploads (1 MB at 10 B/s, valid key), ${open} open when`)
  console.log(
    `the probe started and ${stillOpen} when it ended; answered early: ${
      answered.size === 0 ? "none" : [...answered].map(([status, n]) => `${n} × ${status}`).join(", ")
    }; probe: GET getVerifications, one at a time\n`
  )
  console.log("| probe | 200 | p50 ms | p99 ms | max ms |")
  console.log("|---|---:|---:|---:|---:|")
  console.log(row("alone", alone))
  console.log(row(`beside ${SLOW} slow uploads`, withSlow))
} finally {
  await server.stop()
  rmSync(work, { recursive: true, force: true })
}
