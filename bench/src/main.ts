/**
 * `npm run bench -- --size 10m --adapter memory`: ingest rate and reference-query latency.
 */
import { MemoryStorage } from "@keymeter/storage-memory"
import { SqliteStorage } from "@keymeter/storage-sqlite"
import { rmSync, statSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import * as Dataset from "./Dataset.js"
import * as Http from "./Http.js"
import * as Library from "./Library.js"
import { references } from "./Queries.js"

const { values } = parseArgs({
  options: {
    size: { type: "string", default: "1m" },
    adapter: { type: "string", default: "memory" },
    runs: { type: "string" },
    "http-events": { type: "string", default: "1m" }
  }
})

const size = Dataset.parseSize(values.size!)
const adapters = values.adapter!.split(",")
const log = (line: string) => process.stdout.write(line + "\n")

const t0 = performance.now()
const data = Dataset.load(size)
log(`data set: ${size.toLocaleString("en")} events (${((performance.now() - t0) / 1000).toFixed(1)} s to load)`)

const sqliteFile = fileURLToPath(new URL(`../data/bench-${size}.db`, import.meta.url))
const storageOf = (adapter: string) => {
  if (adapter === "memory") return MemoryStorage.layer
  if (adapter === "sqlite") {
    for (const suffix of ["", "-wal", "-shm", ".lock"]) rmSync(sqliteFile + suffix, { force: true })
    return SqliteStorage.layer({ filename: sqliteFile })
  }
  throw new Error(`Unknown adapter ${adapter} (memory, sqlite)`)
}

for (const adapter of adapters) {
  const keymeter = await Library.open(storageOf(adapter))
  const rate = await keymeter.ingest(data)
  // Let background work settle as in steady state: SQLite compacts closed days once its writer idles.
  await new Promise((resolve) => setTimeout(resolve, 3000))
  log(`\n${adapter}: ingest ${Math.round(rate).toLocaleString("en")} events/s through the library`)
  log("query                          median ms   min     max    runs  rows")
  for (const reference of references) {
    const timing = await Library.time(() => keymeter.query(reference.query), values.runs ? Number(values.runs) : undefined)
    log(
      `${`${reference.id} ${reference.title}`.padEnd(30)} ${timing.median.toFixed(2).padStart(9)} ${timing.min.toFixed(2).padStart(7)} ${
        timing.max.toFixed(2).padStart(7)
      } ${String(timing.runs).padStart(5)} ${String(timing.result.length).padStart(5)}`
    )
  }
  log(`peak RSS ${Math.round(process.resourceUsage().maxRSS / 1024)} MiB`)
  if (adapter === "sqlite") {
    const bytes = ["", "-wal"].reduce((sum, suffix) => sum + (statSync(sqliteFile + suffix, { throwIfNoEntry: false })?.size ?? 0), 0)
    log(`on disk ${Math.round(bytes / 1024 / 1024)} MiB`)
  }
  await keymeter.close()
}

// Ingest through HTTP: the standalone server as its own process, four clients over loopback.
const httpEvents = Math.min(size, Dataset.parseSize(values["http-events"]!))
for (const adapter of adapters) {
  const dir = fileURLToPath(new URL("../data/", import.meta.url))
  for (const suffix of ["", "-wal", "-shm", ".lock"]) rmSync(`${dir}http.db${suffix}`, { force: true })
  const server = await Http.start(adapter === "sqlite" ? `sqlite:${dir}http.db` : adapter)
  const rate = await Http.ingest(server, data, httpEvents)
  log(`\n${adapter}: ingest ${Math.round(rate).toLocaleString("en")} events/s through HTTP (${httpEvents.toLocaleString("en")} events, batches of 10,000, 4 clients); server peak RSS ${server.peakRss()} MiB`)
  await server.stop()
}
