/**
 * The benchmark data set, deterministic for a size and seed: 10 apis with Zipf(1) traffic shares;
 * api_0 has 10,000 keys with Zipf(1) popularity (other apis 1,000); 80% of keys belong to one of
 * 2,000 identities; 30 tags, each key with a usual set of 0–3 tags used by 80% of its events;
 * ~90% valid outcomes; 90 days from 2025-01-01Z, in time order. Columns are cached under
 * bench/data so a size is generated once.
 */
import { Outcomes } from "@keymeter/core/Verification"
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readSync, writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

export const START = Date.UTC(2025, 0, 1)
export const DAYS = 90
export const END = START + DAYS * 86_400_000
export const APIS = 10
export const KEYS_API0 = 10_000
export const KEYS_OTHER = 1_000
export const IDENTITIES = 2_000
export const TAGS = Array.from({ length: 30 }, (_, i) => `tag_${String(i).padStart(2, "0")}`)
export const OUTCOMES = Outcomes
/** Weights of the outcomes, in the order of `Outcomes`. */
const OUTCOME_WEIGHTS = [90, 1.5, 1, 2, 3, 1, 0.5, 0.5, 0.5]

/** A seeded PRNG (mulberry32): uniform in [0, 1). */
export const mulberry32 = (seed: number) => () => {
  seed = (seed + 0x6D2B79F5) | 0
  let t = seed
  t = Math.imul(t ^ (t >>> 15), t | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

/** The cumulative distribution of `weights`, normalized to end at 1 (for {@link pick}). */
export const cdf = (weights: ArrayLike<number>) => {
  const out = new Float64Array(weights.length)
  let sum = 0
  for (let i = 0; i < weights.length; i++) out[i] = sum += weights[i]!
  for (let i = 0; i < out.length; i++) out[i]! /= sum
  return out
}
/** Zipf(1) over `n` ranks: rank 0 the most frequent. */
export const zipf = (n: number) => cdf(Float64Array.from({ length: n }, (_, i) => 1 / (i + 1)))
/** The index a uniform `u` falls on in a {@link cdf} table (binary search). */
export const pick = (table: Float64Array, u: number) => {
  let lo = 0
  let hi = table.length - 1
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (table[mid]! < u) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** The generated columns and their dictionaries. */
export interface Dataset {
  readonly size: number
  readonly time: Float64Array
  readonly api: Uint8Array
  readonly key: Uint16Array
  readonly tagset: Uint16Array
  readonly outcome: Uint8Array
  /** Tag sets by index (sorted tag names). */
  readonly tagsets: ReadonlyArray<ReadonlyArray<string>>
  /** keyIds[api][key] */
  readonly keyIds: ReadonlyArray<ReadonlyArray<string>>
  /** The identity of each key, or -1: identityOf[api][key] */
  readonly identityOf: ReadonlyArray<Int32Array>
}

export const identityId = (i: number) => `id_${i}`
export const externalId = (i: number) => `ext_${i}`

const generateColumns = (size: number, seed: number) => {
  const random = mulberry32(seed)
  const apiShare = zipf(APIS)
  const keyTables = Array.from({ length: APIS }, (_, a) => zipf(a === 0 ? KEYS_API0 : KEYS_OTHER))
  const outcomes = cdf(OUTCOME_WEIGHTS)
  const tagsets: Array<ReadonlyArray<string>> = [[]]
  const tagsetIndex = new Map<string, number>([["", 0]])
  const drawTagset = () => {
    const u = random()
    const count = u < 0.3 ? 0 : u < 0.6 ? 1 : u < 0.85 ? 2 : 3
    const set = new Set<string>()
    while (set.size < count) set.add(TAGS[Math.floor(random() * TAGS.length)]!)
    const tags = [...set].sort()
    const id = tags.join(",")
    let index = tagsetIndex.get(id)
    if (index === undefined) {
      index = tagsets.length
      tagsets.push(tags)
      tagsetIndex.set(id, index)
    }
    return index
  }
  const usual = Array.from(
    { length: APIS },
    (_, a) => Uint16Array.from({ length: a === 0 ? KEYS_API0 : KEYS_OTHER }, () => drawTagset())
  )
  const identityOf = Array.from(
    { length: APIS },
    (_, a) =>
      Int32Array.from(
        { length: a === 0 ? KEYS_API0 : KEYS_OTHER },
        () => random() < 0.8 ? Math.floor(random() * IDENTITIES) : -1
      )
  )
  const time = new Float64Array(size)
  const api = new Uint8Array(size)
  const key = new Uint16Array(size)
  const tagset = new Uint16Array(size)
  const outcome = new Uint8Array(size)
  const span = END - START
  for (let i = 0; i < size; i++) {
    time[i] = START + Math.floor((i * span) / size)
    const a = pick(apiShare, random())
    const k = pick(keyTables[a]!, random())
    api[i] = a
    key[i] = k
    tagset[i] = random() < 0.8 ? usual[a]![k]! : drawTagset()
    outcome[i] = pick(outcomes, random())
  }
  return { time, api, key, tagset, outcome, tagsets, identityOf }
}

/** Where generated data sets (and the engines' files) are kept. */
export const dataDir = fileURLToPath(new URL("../data/", import.meta.url))

/** A typed array a data set column is kept in. */
type ColumnArray = Float64Array | Uint32Array | Uint16Array | Uint8Array
type ColumnType =
  | Float64ArrayConstructor
  | Uint32ArrayConstructor
  | Uint16ArrayConstructor
  | Uint8ArrayConstructor

/**
 * Writes a data set's columns to `file`, one after the other (so a slice of each is one read),
 * and its dictionaries as JSON to `file.json`.
 */
export const writeColumns = (file: string, columns: ReadonlyArray<ColumnArray>, dictionaries: unknown) => {
  mkdirSync(dataDir, { recursive: true })
  writeFileSync(file, Buffer.concat(columns.map((c) => Buffer.from(c.buffer, c.byteOffset, c.byteLength))))
  writeFileSync(`${file}.json`, JSON.stringify(dictionaries))
}

/**
 * Reads a file of {@link writeColumns} a slice at a time, so a run does not hold all of it in
 * memory: `read(from, to)` gives each column's rows `from` to `to`, by the names of `spec`.
 */
export const openColumns = <Spec extends Record<string, ColumnType>>(file: string, size: number, spec: Spec) => {
  const fd = openSync(file, "r")
  const columns = Object.entries(spec)
  const read = (from: number, to: number): { readonly [K in keyof Spec]: InstanceType<Spec[K]> } => {
    const n = to - from
    const out: Record<string, ColumnArray> = {}
    let offset = 0
    for (const [name, Type] of columns) {
      const bytes = Type.BYTES_PER_ELEMENT
      const buffer = Buffer.alloc(n * bytes)
      readSync(fd, buffer, 0, n * bytes, offset + from * bytes)
      offset += size * bytes
      out[name] = new Type(buffer.buffer, buffer.byteOffset, n)
    }
    return out as { readonly [K in keyof Spec]: InstanceType<Spec[K]> }
  }
  return { read, close: () => closeSync(fd) }
}

/** The columns of the verification data set, in file order. */
const COLUMNS = { time: Float64Array, api: Uint8Array, key: Uint16Array, tagset: Uint16Array, outcome: Uint8Array }

const fileOf = (size: number, seed: number) => `${dataDir}events-${size}-${seed}.bin`

/** Generates and caches the data set of `size` events, unless it is cached already. */
export const ensure = (size: number, seed = 1): string => {
  const file = fileOf(size, seed)
  if (existsSync(file) && existsSync(`${file}.json`)) return file
  const columns = generateColumns(size, seed)
  writeColumns(
    file,
    [columns.time, columns.api, columns.key, columns.tagset, columns.outcome],
    { tagsets: columns.tagsets, identityOf: columns.identityOf.map((a) => Array.from(a)) }
  )
  return file
}

const keyIdsOf = () =>
  Array.from(
    { length: APIS },
    (_, a) => Array.from({ length: a === 0 ? KEYS_API0 : KEYS_OTHER }, (_, k) => `key_${a}_${k}`)
  )

/** The whole data set in memory (for small sizes and tools). */
export const load = (size: number, seed = 1): Dataset => {
  const data = open(size, seed)
  const whole = data.read(0, size)
  data.close()
  return whole
}

/** Reads the cached data set a slice at a time, so a run does not hold all of it in memory. */
export const open = (size: number, seed = 1) => {
  const file = ensure(size, seed)
  const { tagsets, identityOf } = JSON.parse(readFileSync(`${file}.json`, "utf8"))
  const dictionaries = {
    tagsets: tagsets as ReadonlyArray<ReadonlyArray<string>>,
    identityOf: (identityOf as Array<Array<number>>).map((ids) => Int32Array.from(ids)),
    keyIds: keyIdsOf()
  }
  const columns = openColumns(file, size, COLUMNS)
  const read = (from: number, to: number): Dataset => ({ size: to - from, ...columns.read(from, to), ...dictionaries })
  return { size, read, close: columns.close, dictionaries }
}

/** Api id of api number `a`. */
export const apiId = (a: number) => `api_${a}`

const apiIds = Array.from({ length: APIS }, (_, a) => apiId(a))
const identities = new WeakMap<object, ReadonlyArray<ReadonlyArray<{ id: string; externalId: string } | undefined>>>()

/** Regions verifications are recorded in. */
export const REGIONS = ["us-east-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-southeast-1", "sa-east-1"] as const

/** A 32-bit integer hash (the finalizer of murmur3's kin, lowbias32). */
const mix32 = (x: number) => {
  x ^= x >>> 16
  x = Math.imul(x, 0x7feb352d)
  x ^= x >>> 15
  x = Math.imul(x, 0x846ca68b)
  x ^= x >>> 16
  return x >>> 0
}

/**
 * What the columns leave out, derived from event `i`'s own values (deterministic; the cached
 * columns stay as they are): credits spent, latency and region. Two keys in five spend credits,
 * on valid verifications only: 1 mostly, one in eight 2–21; latency 80 µs + Exp(mean 400 µs), to
 * the microsecond; each key verifies in its home region 90% of the time, else any of six.
 */
export const extras = (
  data: Dataset,
  i: number
): { readonly spentCredits: number; readonly latency: number; readonly region: string } => {
  const h = extrasHash(data, i)
  const h2 = mix32(h ^ 0x9e3779b9)
  return { spentCredits: spentCreditsOf(data, i, h2), latency: latencyOf(h), region: regionOf(data, i, h2) }
}

// The parts of `extras`, so that `input` builds its event as one literal (a spread of a second
// object cost the caller's side of ingest ~0.1 µs an event).
const extrasHash = (data: Dataset, i: number) => {
  const t = data.time[i]!
  return mix32((t % 4294967296) ^ mix32(Math.floor(t / 4294967296) + data.api[i]! * 131 + data.key[i]! * 7919))
}
const spentCreditsOf = (data: Dataset, i: number, h2: number) =>
  data.outcome[i] === 0 && data.key[i]! % 5 < 2 ? (h2 % 8 === 0 ? 2 + ((h2 >>> 3) % 20) : 1) : 0
const latencyOf = (h: number) => (80 + Math.min(3_000_000, Math.floor(-Math.log(1 - h / 4294967296) * 400))) / 1000
const regionOf = (data: Dataset, i: number, h2: number) =>
  (h2 >>> 8) % 10 < 9
    ? REGIONS[(data.api[i]! * 31 + data.key[i]! * 17) % REGIONS.length]!
    : REGIONS[(h2 >>> 12) % REGIONS.length]!

/** Event `i` as a caller would submit it (ids and identities shared, as an interning parser would). */
export const input = (data: Dataset, i: number) => {
  // Keyed by the shared dictionary, so every chunk of a data set reuses the same objects.
  let byKey = identities.get(data.identityOf)
  if (byKey === undefined) {
    byKey = data.identityOf.map((ids) =>
      Array.from(ids, (id) => (id >= 0 ? { id: identityId(id), externalId: externalId(id) } : undefined))
    )
    identities.set(data.identityOf, byKey)
  }
  const a = data.api[i]!
  const k = data.key[i]!
  const h = extrasHash(data, i)
  const h2 = mix32(h ^ 0x9e3779b9)
  return {
    apiId: apiIds[a]!,
    keyId: data.keyIds[a]![k]!,
    outcome: OUTCOMES[data.outcome[i]!]!,
    time: data.time[i]!,
    tags: data.tagsets[data.tagset[i]!] as Array<string>,
    identity: byKey[a]![k],
    spentCredits: spentCreditsOf(data, i, h2),
    latency: latencyOf(h),
    region: regionOf(data, i, h2)
  }
}

/** Parses `1m`, `10m`, `50m`, `200k` or a plain number. */
export const parseSize = (text: string): number => {
  const match = /^(\d+(?:\.\d+)?)([km]?)$/i.exec(text.trim())
  if (match === null) throw new Error(`Not a size: ${text} (use e.g. 1m, 10m, 50m)`)
  const unit = match[2]!.toLowerCase() === "m" ? 1_000_000 : match[2]!.toLowerCase() === "k" ? 1_000 : 1
  return Math.round(Number(match[1]) * unit)
}
