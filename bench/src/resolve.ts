/**
 * `npm run bench:resolve`: override resolution with 100,000 overrides in one namespace, half of
 * them wildcards, through the index alone and through the Overrides service on each adapter.
 */

import * as Decision from "@keymeter/core/Decision"
import * as Keymeter from "@keymeter/core/Keymeter"
import { Namespace } from "@keymeter/core/Namespace"
import { Override } from "@keymeter/core/Override"
import { compare, matches, OverrideIndex } from "@keymeter/core/OverrideIndex"
import { Overrides } from "@keymeter/core/Overrides"
import { Catalog } from "@keymeter/core/Storage"
import { Workspace } from "@keymeter/core/Workspace"
import { MemoryStorage } from "@keymeter/storage-memory"
import { SqliteStorage } from "@keymeter/storage-sqlite"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { mulberry32 } from "./Dataset.js"

const COUNT = 100_000
const random = mulberry32(7)
const int = (n: number) => Math.floor(random() * n)

/** Half exact identifiers, half wildcard patterns of four shapes. */
const identifiers = Array.from({ length: COUNT }, (_, i) => {
  if (i % 2 === 0) return `user_${i}`
  switch (i % 8) {
    case 1:
      return `org_${i}:*` // prefix
    case 3:
      return `*@domain${i}.com` // suffix
    case 5:
      return `team_${i}_*_admin` // prefix and suffix
    default:
      return `*-${i}-*` // neither: only a middle literal
  }
})

/** Identifiers to resolve: hits on every shape, and misses. */
const probes = Array.from({ length: 20_000 }, () => {
  const i = int(COUNT)
  switch (int(6)) {
    case 0:
      return `user_${i - (i % 2)}`
    case 1:
      return `org_${i - (i % 8) + 1}:repo:${int(100)}`
    case 2:
      return `someone${int(1000)}@domain${i - (i % 8) + 3}.com`
    case 3:
      return `team_${i - (i % 8) + 5}_eu_admin`
    case 4:
      return `x-${i - (i % 8) + 7}-y`
    default:
      return `nobody_${i}`
  }
})

const overrides = identifiers.map((identifier, i) =>
  new Override({
    id: `rlor_${String(i).padStart(26, "0")}`,
    namespaceId: "rlns_bench",
    identifier,
    limit: 10,
    duration: 60_000,
    async: false,
    createdAt: 1_700_000_000_000 + i,
    updatedAt: 1_700_000_000_000 + i
  })
)

const micros = (samples: Array<number>) => {
  samples.sort((a, b) => a - b)
  const at = (q: number) => (samples[Math.floor(q * (samples.length - 1))]! * 1000).toFixed(1)
  return `median ${at(0.5)} µs, p99 ${at(0.99)} µs, max ${at(1)} µs`
}

const log = (line: string) => process.stdout.write(line + "\n")

let t = performance.now()
const index = new OverrideIndex(overrides)
log(
  `index of ${COUNT.toLocaleString("en")} overrides (${COUNT / 2} wildcards) built in ${
    (performance.now() - t).toFixed(0)
  } ms`
)

// Correctness on a sample, against brute force over every override.
for (const probe of probes.slice(0, 200)) {
  const expected = overrides.filter((o) => matches(o.identifier, probe)).sort(compare)[0]
  if (index.resolve(probe)?.id !== expected?.id) throw new Error(`index and brute force disagree on ${probe}`)
}

const timed: Array<number> = []
let hits = 0
for (const probe of probes) {
  const start = performance.now()
  if (index.resolve(probe) !== undefined) hits++
  timed.push(performance.now() - start)
}
log(`index.resolve: ${micros(timed)} (${probes.length} identifiers, ${hits} resolved)`)

t = performance.now()
for (const probe of probes.slice(0, 20)) overrides.filter((o) => matches(o.identifier, probe)).sort(compare)
log(`for scale, testing every override: ${((performance.now() - t) / 20).toFixed(1)} ms per identifier`)

// Through the Overrides service: the first resolution loads and indexes the namespace.
const WS = "ws_bench"
for (
  const [name, storage] of [
    ["memory", MemoryStorage.layer],
    ["sqlite", SqliteStorage.layer({ filename: join(mkdtempSync(join(tmpdir(), "keymeter-resolve-")), "k.db") })]
  ] as const
) {
  const runtime = ManagedRuntime.make(Keymeter.layer.pipe(Layer.provideMerge(storage)))
  const namespace = new Namespace({ id: "rlns_bench", workspaceId: WS, name: "bench" })
  await runtime.runPromise(Effect.gen(function*() {
    const catalog = yield* Catalog
    yield* catalog.putWorkspace(new Workspace({ id: WS, name: "bench" }))
    yield* catalog.putNamespace(namespace)
    for (const o of overrides) {
      yield* catalog.upsertOverride({ ...o, namespaceId: namespace.id, now: o.createdAt })
    }
  }))
  const service = await runtime.runPromise(Overrides)
  const first = performance.now()
  await runtime.runPromise(Decision.read(() => service.resolve(namespace, probes[0]!)))
  const load = performance.now() - first
  const samples: Array<number> = []
  for (const probe of probes) {
    const start = performance.now()
    // The resolution index is in memory: a lookup, no effect.
    if (service.resolve(namespace, probe) instanceof Decision.Missing) throw new Error("the index was forgotten")
    samples.push(performance.now() - start)
  }
  log(`Overrides.resolve on ${name}: first call (loads the index) ${load.toFixed(0)} ms; then ${micros(samples)}`)
  await runtime.dispose()
}
