/**
 * `npm run bench -- --size 10m --adapter memory`: ingest rate and reference-query latency.
 */
import { MemoryStorage } from "@keymeter/storage-memory"
import { parseArgs } from "node:util"
import * as Dataset from "./Dataset.js"
import * as Library from "./Library.js"
import { references } from "./Queries.js"

const { values } = parseArgs({
  options: {
    size: { type: "string", default: "1m" },
    adapter: { type: "string", default: "memory" },
    runs: { type: "string" }
  }
})

const size = Dataset.parseSize(values.size!)
const adapters = values.adapter!.split(",")
const log = (line: string) => process.stdout.write(line + "\n")

const t0 = performance.now()
const data = Dataset.load(size)
log(`data set: ${size.toLocaleString("en")} events (${((performance.now() - t0) / 1000).toFixed(1)} s to load)`)

for (const adapter of adapters) {
  if (adapter !== "memory") throw new Error(`Unknown adapter ${adapter}`)
  const keymeter = await Library.open(MemoryStorage.layer)
  const rate = await keymeter.ingest(data)
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
  await keymeter.close()
}
