/**
 * The rate-limit decision data set, deterministic for a size and seed, over the verification data
 * set's 90 days (`Dataset.START` to `Dataset.END`), in time order:
 *
 * - Ten namespaces of very different sizes ({@link NAMESPACES}): `api.requests` has 100,000
 *   identifiers and the largest share of decisions, `admin` 20; identifiers have Zipf(1)
 *   popularity inside their namespace (ranks are scattered over the identifier numbers, so the
 *   popular ones are not the first names in sort order); identifiers are user ids, IPs, org ids or
 *   key ids, and a user id or IP may show up in several namespaces.
 * - Traffic follows the day (a peak in the afternoon UTC), is lower at weekends and grows 30% over
 *   the 90 days.
 * - Each identifier has its share of decisions blocked: most almost never (< 1%), some now and
 *   then (2–22%), a few abusers (30–90%); logins and signups are blocked more.
 * - 300 overrides ({@link Catalog.overrides}): 240 of one identifier in one namespace, 40 of an
 *   identifier pattern (`user_12*`: every identifier matching it), 20 of a namespace pattern
 *   (`auth.*`, `*.send`, `*`: the identifier in every namespace matching it). Half exist from the
 *   start, half are created during the 90 days: an identifier's decisions carry the override from
 *   its creation on (an identifier's own override before a pattern's, an identifier pattern before
 *   a namespace pattern).
 * - Limit and duration are the namespace's, or the override's when one decided; remaining is what
 *   the window had left (0 when blocked); cost 1 (some 0–5; `ai.tokens` 1–2,000 tokens); source
 *   `limit` (8% `multiLimit`; `default`: `verifyKey`); latency 30 µs + Exp(mean 120 µs); one
 *   decision in ten carries `meta`/`resources`.
 *
 * Columns are cached under bench/data, as the verification data set's, so a size is generated once.
 */
import type { RatelimitEvent, Source } from "@keymeter/core/RatelimitEvent"
import { detailOf } from "@keymeter/core/RatelimitEvent"
import { existsSync } from "node:fs"
import { cdf, dataDir, END, mulberry32, openColumns, pick, START, writeColumns, zipf } from "./Dataset.js"

const HOUR = 3_600_000
const DAY = 86_400_000

export const WORKSPACE = "ws_bench"

/** How a namespace's identifiers are spelt. */
type Kind = "user" | "ip" | "org" | "key"

/** A namespace of the data set. */
export interface NamespaceSpec {
  readonly id: string
  readonly name: string
  readonly identifiers: number
  readonly kind: Kind
  /** Share of all decisions (relative weight). */
  readonly weight: number
  /** The limit and window applied when no override decides. */
  readonly limit: number
  readonly duration: number
  /** How much more than its identifiers' own share a namespace blocks. */
  readonly blocking: number
}

const namespace = (
  n: number,
  name: string,
  identifiers: number,
  kind: Kind,
  weight: number,
  limit: number,
  duration: number,
  blocking = 1
): NamespaceSpec => ({ id: `rlns_bench_${n}`, name, identifiers, kind, weight, limit, duration, blocking })

/** The ten namespaces, by number. */
export const NAMESPACES: ReadonlyArray<NamespaceSpec> = [
  namespace(0, "api.requests", 100_000, "user", 40, 100, 60_000),
  namespace(1, "auth.login", 20_000, "ip", 12, 5, 60_000, 3),
  namespace(2, "auth.signup", 5_000, "ip", 3, 3, HOUR, 3),
  namespace(3, "default", 10_000, "key", 20, 1_000, 60_000),
  namespace(4, "search", 2_000, "org", 10, 30, 1_000),
  namespace(5, "exports", 1_000, "org", 1, 10, DAY, 2),
  namespace(6, "webhooks.send", 500, "org", 7, 50, 1_000),
  namespace(7, "email.send", 200, "org", 4, 100, HOUR),
  namespace(8, "ai.tokens", 100, "org", 2.5, 100_000, 60_000),
  namespace(9, "admin", 20, "user", 0.5, 10, 60_000)
]

/** Identifier number of popularity rank `rank` in a namespace of `n` identifiers (a permutation). */
const numberOf = (rank: number, n: number) => (rank * 7919 + 13) % n

const spell = (kind: Kind, number: number) =>
  kind === "ip"
    ? `203.${(number >> 16) & 255}.${(number >> 8) & 255}.${number & 255}`
    : `${kind}_${number}`

/** An override of the data set. */
export interface OverrideSpec {
  readonly id: string
  /** The namespaces it decides in (one, or those its pattern matches). */
  readonly namespaces: ReadonlyArray<number>
  /** What it was set on: an identifier or a pattern. */
  readonly identifier: string
  /** The namespace pattern it was set in, if any (else it is of `namespaces[0]`). */
  readonly namespacePattern?: string | undefined
  readonly limit: number
  readonly duration: number
  /** Unix ms from which it decides. */
  readonly createdAt: number
}

/** The namespaces, their identifiers and the overrides: the same for every size of a seed. */
export interface Catalog {
  /** identifiers[namespace][rank] */
  readonly identifiers: ReadonlyArray<ReadonlyArray<string>>
  readonly overrides: ReadonlyArray<OverrideSpec>
  /** The override (index in `overrides`) of each identifier, by namespace and rank; -1: none. */
  readonly overrideOf: ReadonlyArray<Int16Array>
  /** The share of each identifier's decisions that are blocked, by namespace and rank. */
  readonly blockedShare: ReadonlyArray<Float32Array>
}

const catalogs = new Map<number, Catalog>()

/** The catalog of seed `seed`. */
export const catalog = (seed = 1): Catalog => {
  const known = catalogs.get(seed)
  if (known !== undefined) return known
  const random = mulberry32(seed * 7 + 3)
  const int = (n: number) => Math.floor(random() * n)
  const identifiers = NAMESPACES.map((ns) =>
    Array.from({ length: ns.identifiers }, (_, rank) => spell(ns.kind, numberOf(rank, ns.identifiers)))
  )
  const rankOf = identifiers.map((names) => new Map(names.map((name, rank) => [name, rank])))
  const blockedShare = NAMESPACES.map((ns) =>
    Float32Array.from({ length: ns.identifiers }, () => {
      const u = random()
      const share = u < 0.7 ? 0.01 * random() : u < 0.95 ? 0.02 + 0.2 * random() : 0.3 + 0.6 * random()
      return Math.min(0.95, share * ns.blocking)
    })
  )
  const overrides: Array<OverrideSpec> = []
  const overrideOf = NAMESPACES.map((ns) => new Int16Array(ns.identifiers).fill(-1))
  const createdAt = () => (random() < 0.5 ? START - DAY : START + int(END - START))
  const add = (
    namespaces: Array<number>,
    identifier: string,
    ranks: ReadonlyArray<ReadonlyArray<number>>,
    namespacePattern?: string
  ) => {
    const ns = NAMESPACES[namespaces[0]!]!
    const raise = random() < 0.8
    const index = overrides.length
    overrides.push({
      id: `rlor_bench_${String(index).padStart(3, "0")}`,
      namespaces,
      identifier,
      namespacePattern,
      limit: raise ? ns.limit * (2 + int(20)) : Math.max(1, Math.floor(ns.limit / (2 + int(5)))),
      duration: random() < 0.7 ? ns.duration : ns.duration * (1 + int(10)),
      createdAt: createdAt()
    })
    // First come, first served: an identifier's own override, then patterns.
    namespaces.forEach((n, i) => {
      for (const rank of ranks[i]!) if (overrideOf[n]![rank] === -1) overrideOf[n]![rank] = index
    })
  }
  // Of one identifier: popular ones (a customer on a bigger plan) and any.
  const weights = cdf(NAMESPACES.map((ns) => ns.weight))
  while (overrides.length < 240) {
    const n = pick(weights, random())
    const size = NAMESPACES[n]!.identifiers
    const rank = random() < 0.5 ? int(Math.min(50, size)) : int(size)
    if (overrideOf[n]![rank] !== -1) continue
    add([n], identifiers[n]![rank]!, [[rank]])
  }
  // Of an identifier pattern: every identifier of a namespace starting with a prefix.
  for (let i = 0; i < 40; i++) {
    const n = [0, 0, 0, 3, 3, 4, 5, 6][int(8)]!
    const ns = NAMESPACES[n]!
    const prefix = `${ns.kind}_${1 + int(9)}${int(10)}${ns.identifiers > 5_000 ? int(10) : ""}`
    const ranks = identifiers[n]!.flatMap((name, rank) => (name.startsWith(prefix) ? [rank] : []))
    add([n], `${prefix}*`, [ranks])
  }
  // Of a namespace pattern: one identifier in each namespace the pattern matches.
  const patterns: ReadonlyArray<readonly [string, Array<number>]> = [
    ["auth.*", [1, 2]],
    ["*.send", [6, 7]],
    ["*", [0, 9]]
  ]
  for (let i = 0; i < 20; i++) {
    const [pattern, namespaces] = patterns[i % patterns.length]!
    const smallest = Math.min(...namespaces.map((n) => NAMESPACES[n]!.identifiers))
    const name = spell(NAMESPACES[namespaces[0]!]!.kind, int(smallest))
    const ranks = namespaces.map((n) => [rankOf[n]!.get(name)!])
    add([...namespaces], name, ranks, pattern)
  }
  const out = { identifiers, overrides, overrideOf, blockedShare }
  catalogs.set(seed, out)
  return out
}

/** A few `meta`/`resources` payloads, as callers attach them. */
const DETAILS: ReadonlyArray<string | undefined> = [
  undefined,
  detailOf({ plan: "free" }, undefined),
  detailOf({ plan: "pro", region: "eu-west-1" }, undefined),
  detailOf(undefined, [{ type: "project", id: "prj_1" }]),
  detailOf({ route: "/v1/chat/completions", model: "small" }, [{ type: "model", id: "m_small", name: "small" }]),
  detailOf({ route: "/v1/export" }, [{ type: "report", id: "rep_77" }, { type: "user", id: "user_5" }]),
  detailOf({ userAgent: "curl/8.5.0" }, undefined)
]

/** The columns of the data set, in file order. */
const COLUMNS = {
  time: Float64Array,
  namespace: Uint8Array,
  rank: Uint32Array,
  passed: Uint8Array,
  /** Index + 1 of the override that decided, 0: none. */
  override: Uint16Array,
  cost: Uint16Array,
  remaining: Uint32Array,
  source: Uint8Array,
  /** µs */
  latency: Uint32Array,
  /** Index in {@link DETAILS}. */
  detail: Uint8Array
}

/** Decisions per hour, relative: the day's curve, weekends, and growth. */
const hourWeights = () => {
  const hours = (END - START) / HOUR
  return Float64Array.from({ length: hours }, (_, h) => {
    const hourOfDay = h % 24
    const weekday = new Date(START + h * HOUR).getUTCDay()
    const daily = 1 + 0.6 * Math.sin((2 * Math.PI * (hourOfDay - 8)) / 24)
    return daily * (weekday === 0 || weekday === 6 ? 0.7 : 1) * (1 + (0.3 * h) / hours)
  })
}

const generate = (size: number, seed: number) => {
  const { overrideOf, overrides, blockedShare } = catalog(seed)
  const random = mulberry32(seed)
  const shares = cdf(NAMESPACES.map((ns) => ns.weight))
  const popularity = NAMESPACES.map((ns) => zipf(ns.identifiers))
  const columns = Object.fromEntries(
    Object.entries(COLUMNS).map(([name, Type]) => [name, new Type(size)])
  ) as { [K in keyof typeof COLUMNS]: InstanceType<typeof COLUMNS[K]> }
  // Times: the i-th decision at the (i + 0.5)/size quantile of the hourly curve, so in time order.
  const weights = hourWeights()
  const total = weights.reduce((sum, w) => sum + w, 0)
  let hour = 0
  let before = 0
  for (let i = 0; i < size; i++) {
    const target = ((i + 0.5) / size) * total
    while (hour < weights.length - 1 && before + weights[hour]! <= target) before += weights[hour++]!
    const time = START + hour * HOUR + Math.min(HOUR - 1, Math.floor(((target - before) / weights[hour]!) * HOUR))
    const n = pick(shares, random())
    const ns = NAMESPACES[n]!
    const rank = pick(popularity[n]!, random())
    const o = overrideOf[n]![rank]!
    const decided = o >= 0 && time >= overrides[o]!.createdAt ? o : -1
    const limit = decided >= 0 ? overrides[decided]!.limit : ns.limit
    const passed = random() >= blockedShare[n]![rank]!
    const cost = n === 8 ? 1 + Math.floor(random() * 2_000) : random() < 0.9 ? 1 : Math.floor(random() * 6)
    columns.time[i] = time
    columns.namespace[i] = n
    columns.rank[i] = rank
    columns.passed[i] = passed ? 1 : 0
    columns.override[i] = decided + 1
    columns.cost[i] = cost
    columns.remaining[i] = passed ? Math.floor(random() * Math.max(0, limit - cost + 1)) : 0
    columns.source[i] = n === 3 ? 2 : random() < 0.08 ? 1 : 0
    columns.latency[i] = 30 + Math.floor(-Math.log(1 - random()) * 120)
    columns.detail[i] = random() < 0.1 ? 1 + Math.floor(random() * (DETAILS.length - 1)) : 0
  }
  return columns
}

const fileOf = (size: number, seed: number) => `${dataDir}decisions-${size}-${seed}.bin`

/** Generates and caches the data set of `size` decisions, unless it is cached already. */
export const ensure = (size: number, seed = 1): string => {
  const file = fileOf(size, seed)
  if (existsSync(file) && existsSync(`${file}.json`)) return file
  const columns = generate(size, seed)
  writeColumns(file, Object.values(columns), { size, seed })
  return file
}

/** A slice of the data set: its columns. */
export type Slice = ReturnType<ReturnType<typeof open>["read"]>

/** Reads the cached data set a slice at a time. */
export const open = (size: number, seed = 1) => {
  const columns = openColumns(ensure(size, seed), size, COLUMNS)
  const read = (from: number, to: number) => ({ size: to - from, ...columns.read(from, to) })
  return { size, seed, catalog: catalog(seed), read, close: columns.close }
}

const SOURCES: ReadonlyArray<Source> = ["limit", "multiLimit", "verifyKey"]

/** Decision `i` of a slice, as the limiter would hand it to the store. */
export const event = (data: Catalog, slice: Slice, i: number): RatelimitEvent => {
  const n = slice.namespace[i]!
  const ns = NAMESPACES[n]!
  const o = slice.override[i]! - 1
  const override = o >= 0 ? data.overrides[o] : undefined
  return {
    time: slice.time[i]!,
    workspaceId: WORKSPACE,
    namespaceId: ns.id,
    identifier: data.identifiers[n]![slice.rank[i]!]!,
    passed: slice.passed[i] === 1,
    limit: override?.limit ?? ns.limit,
    duration: override?.duration ?? ns.duration,
    remaining: slice.remaining[i]!,
    cost: slice.cost[i]!,
    overrideId: override?.id,
    source: SOURCES[slice.source[i]!]!,
    latency: slice.latency[i]! / 1000,
    detail: DETAILS[slice.detail[i]!]
  }
}

/** The namespace id a query names, by id or by name. */
export const namespaceIdOf = (
  query: { readonly namespaceId?: string | undefined; readonly namespaceName?: string | undefined }
): string => query.namespaceId ?? NAMESPACES.find((ns) => ns.name === query.namespaceName)!.id
