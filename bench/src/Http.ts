/**
 * Measuring keymeter through HTTP: the standalone server runs as its own process (as `npm start`
 * runs it) and concurrent clients post batches of recordVerifications over loopback.
 */
import * as Ports from "@keymeter/testing/Ports"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Compiled from "./Compiled.js"
import type { Dataset } from "./Dataset.js"
import { apiId, APIS, input } from "./Dataset.js"

export const ROOT_KEY = "sk_bench_root_key_0123456789abcdef"

/** A running standalone server with the bench workspace provisioned. */
export interface Server {
  readonly base: string
  readonly child: ChildProcess
  /** Peak RSS of the server process, MiB. */
  readonly peakRss: () => number
  readonly stop: () => Promise<void>
}

/**
 * Starts the standalone server on `storage` (a KEYMETER_STORAGE value; a SQLite file is started
 * afresh), with `env` added (KEYMETER_ANALYTICS, say).
 */
export const start = async (storage: string, env: Record<string, string> = {}): Promise<Server> => {
  const main = Compiled.serverMain()
  if (storage.startsWith("sqlite:")) {
    for (const suffix of ["", "-wal", "-shm", "-lock"]) {
      rmSync(storage.slice("sqlite:".length) + suffix, { force: true })
    }
  }
  const dir = mkdtempSync(join(tmpdir(), "keymeter-bench-"))
  const provisioning = join(dir, "provision.json")
  writeFileSync(
    provisioning,
    JSON.stringify({
      workspaces: [{
        id: "ws_bench",
        name: "bench",
        rootKeys: [{ key: ROOT_KEY, permissions: ["*"] }],
        apis: Array.from({ length: APIS }, (_, a) => ({ id: apiId(a), name: apiId(a) }))
      }]
    })
  )
  const port = await Ports.freePort()
  const child = spawn(process.execPath, [
    // Extra node flags for the server alone, e.g. `--cpu-prof --cpu-prof-dir=prof` to profile it
    // under load (node refuses --cpu-prof in NODE_OPTIONS).
    ...(process.env.KEYMETER_BENCH_SERVER_FLAGS ?? "").split(" ").filter((flag) => flag !== ""),
    main
  ], {
    cwd: dir,
    env: {
      ...process.env,
      PORT: String(port),
      KEYMETER_STORAGE: storage,
      KEYMETER_PROVISION: provisioning,
      KEYMETER_MAX_BODY_BYTES: String(8 * 1024 * 1024),
      // The 401 route measures refusing unknown keys, not the budget that answers them 429.
      KEYMETER_MAX_AUTH_FAILURES: String(2 ** 31),
      ...env
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout!.on("data", (chunk) => (output += chunk))
  child.stderr!.on("data", (chunk) => (output += chunk))
  await new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      if (output.includes("Listening on")) {
        clearInterval(timer)
        resolve()
      } else if (child.exitCode !== null) {
        clearInterval(timer)
        reject(new Error(`server exited: ${output}`))
      }
    }, 50)
  })
  const status = () => {
    try {
      return readFileSync(`/proc/${child.pid}/status`, "utf8")
    } catch {
      return ""
    }
  }
  return {
    base: `http://127.0.0.1:${port}`,
    child,
    peakRss: () => Math.round(Number(/VmHWM:\s+(\d+)/.exec(status())?.[1] ?? 0) / 1024),
    stop: () =>
      new Promise((resolve) => {
        child.once("exit", () => resolve())
        child.kill("SIGTERM")
      })
  }
}

/** Posts the first `events` events as batches of `batch` from `concurrency` clients; events/s. */
export const ingest = async (
  server: Server,
  data: { readonly read: (from: number, to: number) => Dataset },
  events: number,
  batch = 10_000,
  concurrency = 4
) => {
  // Bodies are serialised before the clock starts: the server's work is what is measured.
  const bodies: Array<string> = []
  for (let from = 0; from < events; from += batch) {
    const slice = data.read(from, Math.min(events, from + batch))
    const items = []
    for (let i = 0; i < slice.size; i++) items.push(input(slice, i))
    bodies.push(JSON.stringify({ verifications: items }))
  }
  let next = 0
  const started = performance.now()
  const client = async () => {
    while (next < bodies.length) {
      const body = bodies[next++]!
      const reply = await fetch(`${server.base}/v1/analytics.recordVerifications`, {
        method: "POST",
        headers: { authorization: `Bearer ${ROOT_KEY}`, "content-type": "application/json" },
        body
      })
      if (reply.status !== 200) throw new Error(`recordVerifications answered ${reply.status}: ${await reply.text()}`)
      await reply.arrayBuffer()
    }
  }
  await Promise.all(Array.from({ length: concurrency }, client))
  return events / ((performance.now() - started) / 1000)
}
