/**
 * Key verification through the library, as an embedding service calls it (`keymeter.keys.verify`,
 * recording on): `N` keys created (each with an identity shared by ten keys and an auto-applied
 * rate limit), each verified once (read from storage), then random keys verified one call at a
 * time (median and p99 of each call), unknown secrets (repeated and fresh), and with credits, 32
 * callers at once. Run in a process of its own by main.ts:
 * `Verify.ts --storage memory|sqlite:<file> --keys 1000000 --out result.json`.
 */
import { createKeymeter } from "keymeter"
import { writeFileSync } from "node:fs"
import { parseArgs } from "node:util"

const { values } = parseArgs({
  options: {
    storage: { type: "string", default: "memory" },
    keys: { type: "string", default: "1000000" },
    out: { type: "string" }
  }
})

/** Median and p99 of a series, in µs (the series in ms). */
export interface Quantiles {
  readonly median: number
  readonly p99: number
}

export interface VerifyResult {
  readonly storage: string
  readonly keys: number
  readonly createdPerSecond: number
  /** Each key's first verification: read from storage, then remembered. */
  readonly first: Quantiles
  /** Random known keys, remembered. */
  readonly known: Quantiles & { readonly calls: number }
  /** A thousand unknown secrets, again and again (a revoked key still in use). */
  readonly unknownRepeated: Quantiles
  /** A new unknown secret each call (guessing). */
  readonly unknownFresh: Quantiles
  /** 32 callers at once verifying keys with credits: each call µs, and calls/s. */
  readonly credits: Quantiles & { readonly callers: number; readonly perSecond: number }
  readonly peakRssMiB: number
}

const quantiles = (ms: Array<number>): Quantiles => {
  ms.sort((a, b) => a - b)
  return { median: ms[ms.length >> 1]! * 1000, p99: ms[Math.floor(ms.length * 0.99)]! * 1000 }
}

let peakRss = 0
const sampleRss = () => {
  peakRss = Math.max(peakRss, process.memoryUsage().rss)
}
const sampler = setInterval(sampleRss, 250)

// xorshift32: the same draws on every run.
let seed = 0x9e3779b9
const random = (n: number) => {
  seed ^= seed << 13
  seed ^= seed >>> 17
  seed ^= seed << 5
  return (seed >>> 0) % n
}

const keymeter = await createKeymeter({ storage: values.storage! })
const { apiId } = await keymeter.createApi({ name: "verify-bench" })
const count = Number(values.keys)
const secrets: Array<string> = new Array(count)
const log = (line: string) => process.stdout.write(`    ${line}\n`)

let started = performance.now()
for (let i = 0; i < count; i++) {
  const { key } = await keymeter.keys.create({
    apiId,
    externalId: `customer_${Math.floor(i / 10)}`,
    ratelimits: [{ name: "requests", limit: 1_000_000_000, duration: 60_000, autoApply: true }]
  })
  // Only a repeat under an idempotency key answers without the secret.
  if (key === undefined) throw new Error("a new key without its secret")
  secrets[i] = key
  if (i > 0 && i % 100_000 === 0) log(`${i.toLocaleString("en")} keys created`)
}
const createdPerSecond = count / ((performance.now() - started) / 1000)
log(`${count.toLocaleString("en")} keys created, ${Math.round(createdPerSecond).toLocaleString("en")}/s`)

const timed = async (calls: number, body: (i: number) => { key: string; apiId?: string }, valid: boolean | null) => {
  const ms: Array<number> = new Array(calls)
  for (let i = 0; i < calls; i++) {
    const request = body(i)
    const t = performance.now()
    const answer = await keymeter.keys.verify(request)
    ms[i] = performance.now() - t
    if (valid !== null && answer.valid !== valid) throw new Error(`unexpected answer ${JSON.stringify(answer)}`)
  }
  return ms
}

const first = quantiles(await timed(count, (i) => ({ key: secrets[i]!, apiId }), true))
log(`first verification: median ${first.median.toFixed(1)} µs, p99 ${first.p99.toFixed(1)} µs`)
const calls = Math.max(count, 200_000)
const known = { ...quantiles(await timed(calls, () => ({ key: secrets[random(count)]!, apiId }), true)), calls }
log(`known keys: median ${known.median.toFixed(1)} µs, p99 ${known.p99.toFixed(1)} µs`)
const bad = Array.from({ length: 1000 }, (_, i) => `bench_unknown_${i}`)
const unknownRepeated = quantiles(await timed(200_000, (i) => ({ key: bad[i % 1000]!, apiId }), false))
log(`unknown, repeated: median ${unknownRepeated.median.toFixed(1)} µs, p99 ${unknownRepeated.p99.toFixed(1)} µs`)
const unknownFresh = quantiles(await timed(100_000, (i) => ({ key: `bench_guess_${i}`, apiId }), false))
log(`unknown, fresh: median ${unknownFresh.median.toFixed(1)} µs, p99 ${unknownFresh.p99.toFixed(1)} µs`)

// Credits: 32 callers, each verifying keys with credits in turn for a few seconds.
const CALLERS = 32
const credited = await Promise.all(
  Array.from(
    { length: 1000 },
    () => keymeter.keys.create({ apiId, credits: { remaining: 1_000_000_000 } }).then((created) => created.key)
  )
)
const creditMs: Array<number> = []
const until = performance.now() + 5_000
started = performance.now()
await Promise.all(Array.from({ length: CALLERS }, async () => {
  while (performance.now() < until) {
    const key = credited[random(credited.length)]!
    const t = performance.now()
    const answer = await keymeter.keys.verify({ key, apiId, credits: { cost: 1 } })
    creditMs.push(performance.now() - t)
    if (!answer.valid) throw new Error(`unexpected answer ${JSON.stringify(answer)}`)
  }
}))
const credits = {
  ...quantiles(creditMs),
  callers: CALLERS,
  perSecond: creditMs.length / ((performance.now() - started) / 1000)
}
log(
  `credits, ${CALLERS} callers: median ${(credits.median / 1000).toFixed(2)} ms, p99 ${
    (credits.p99 / 1000).toFixed(2)
  } ms, ${Math.round(credits.perSecond).toLocaleString("en")}/s`
)

sampleRss()
clearInterval(sampler)
await keymeter.close()
const result: VerifyResult = {
  storage: values.storage!.split(":")[0]!,
  keys: count,
  createdPerSecond,
  first,
  known,
  unknownRepeated,
  unknownFresh,
  credits,
  peakRssMiB: Math.round(peakRss / 2 ** 20)
}
if (values.out !== undefined) writeFileSync(values.out, JSON.stringify(result))
