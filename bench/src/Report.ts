/**
 * Tables of a benchmark run: per size, query × engine medians with spread and the ratio to
 * DuckDB's better layout; ingest, memory and disk; the targets, met or missed by how much.
 */
import type { LoadResult } from "./Load.js"
import { references } from "./Queries.js"
import type { ScaleOutResult } from "./ScaleOut.js"
import type { VerifyResult } from "./Verify.js"
import type { EngineResult } from "./Worker.js"

export interface HttpResult {
  readonly adapter: string
  readonly ingest?: { readonly eventsPerSecond: number; readonly events: number } | undefined
  readonly load?: ReadonlyArray<LoadResult> | undefined
}

export interface Run {
  readonly startedAt: string
  readonly machine: Record<string, string | number>
  readonly sizes: ReadonlyArray<
    { readonly size: number; readonly engines: ReadonlyArray<EngineResult>; readonly mismatches: ReadonlyArray<string> }
  >
  readonly verify?: ReadonlyArray<VerifyResult> | undefined
  readonly scaleOut?: ScaleOutResult | undefined
  readonly http: ReadonlyArray<HttpResult>
  /** Rate-limit decisions and the getRatelimits mix (`--ratelimits`), per size. */
  readonly ratelimits?: ReadonlyArray<RatelimitSection> | undefined
}

/** The rate-limit run of one size: DuckDB's layouts and keymeter's engines on the same decisions. */
export interface RatelimitSection {
  readonly size: number
  readonly engines: ReadonlyArray<EngineResult>
  readonly mismatches: ReadonlyArray<string>
  /** Each query of the mix in a line, and its grouping, in the mix's order. */
  readonly queries: ReadonlyArray<{ readonly text: string; readonly shape: string }>
}

const ms = (n: number) => (n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : n.toFixed(0))
export const count = (n: number) =>
  n >= 1e6 ? `${(n / 1e6).toFixed(n % 1e6 === 0 ? 0 : 1)}M` : `${Math.round(n / 1e3)}k`

/** Median of DuckDB's better layout for a query at a size. */
const duckBest = (engines: ReadonlyArray<EngineResult>, id: string) =>
  Math.min(...engines.filter((e) => e.engine.startsWith("duckdb")).map((e) => e.queries[id]!.median))

/** Issue 15's targets per route, by adapter (on ClickHouse, with or without its spool, issue 32's ingest only). */
const HTTP_TARGETS: Record<
  string,
  (adapter: string) =>
    | { readonly ratio: number; readonly p99?: number; readonly requestsPerSecond?: number; readonly text: string }
    | undefined
> = {
  "getVerifications (day buckets, 30 d)": (a) =>
    a.startsWith("clickhouse") ? undefined : { ratio: 0.5, p99: 10, text: ">= 0.5× node:http, p99 <= 10 ms" },
  "getVerifications, unknown root key (401)": (a) =>
    a.startsWith("clickhouse") ? undefined : { ratio: 0.5, p99: 10, text: ">= 0.5× node:http, p99 <= 10 ms" },
  "recordVerifications (100 events)": (a) =>
    a === "memory"
      ? { ratio: 0.3, text: ">= 0.3× node:http" }
      : a === "sqlite"
      ? { ratio: 0, requestsPerSecond: 3000, text: ">= 3,000 req/s" }
      : { ratio: 0, requestsPerSecond: 1000, text: ">= 1,000 req/s (issue 32)" },
  "ratelimits.limit": (a) => (a.startsWith("clickhouse") ? undefined : { ratio: 0.5, text: ">= 0.5× node:http" }),
  // Issue 16's.
  "keys.verifyKey": (a) => (a.startsWith("clickhouse") ? undefined : { ratio: 0.4, text: ">= 0.4× node:http" })
}

/** The /v2 routes and their /v1 twins: each must serve at least 0.9× its twin's requests/s (issue 29). */
const TWINS: ReadonlyArray<readonly [v1: string, v2: string]> = [
  ["ratelimits.limit", "v2 ratelimit.limit"],
  ["keys.verifyKey", "v2 keys.verifyKey"]
]

const us = (n: number) => `${n < 100 ? n.toFixed(1) : Math.round(n).toLocaleString("en")} µs`

/** The library verification runs as a table (header first). */
export const verifyTable = (results: ReadonlyArray<VerifyResult>): Array<Array<string>> => [
  [
    "storage",
    "keys",
    "created/s",
    "first (from storage)",
    "known key",
    "unknown, repeated",
    "unknown, fresh",
    "credits, 32 callers",
    "peak RSS"
  ],
  ...results.map((r) => [
    r.storage,
    count(r.keys),
    Math.round(r.createdPerSecond).toLocaleString("en"),
    `${us(r.first.median)}, p99 ${us(r.first.p99)}`,
    `${us(r.known.median)}, p99 ${us(r.known.p99)}`,
    `${us(r.unknownRepeated.median)}, p99 ${us(r.unknownRepeated.p99)}`,
    `${us(r.unknownFresh.median)}, p99 ${us(r.unknownFresh.p99)}`,
    `${ms(r.credits.median / 1000)} ms, p99 ${ms(r.credits.p99 / 1000)} ms, ${
      Math.round(r.credits.perSecond).toLocaleString("en")
    }/s`,
    `${r.peakRssMiB} MiB`
  ])
]

/** The rows of one size as a table (header first). */
export const queryTable = (engines: ReadonlyArray<EngineResult>): Array<Array<string>> => {
  const header = ["query", ...engines.map((e) => e.engine + (e.engine.startsWith("duckdb") ? "" : " (× DuckDB best)"))]
  const rows = references.map((reference) => {
    const best = duckBest(engines, reference.id)
    return [
      `${reference.id} ${reference.title}`,
      ...engines.map((e) => {
        const q = e.queries[reference.id]!
        const cell = `${ms(q.median)} (${ms(q.min)}–${ms(q.max)})`
        return e.engine.startsWith("duckdb") ? cell : `${cell} ${(q.median / best).toFixed(2)}×`
      })
    ]
  })
  return [header, ...rows]
}

/**
 * keymeter's median of a reference query as compared with clickhouse-client: timed in turns with it,
 * or, in results from before the turns, the engine's own timing.
 */
const keymeterBeside = (engine: EngineResult, id: string): number =>
  engine.client?.[id]?.keymeter ?? engine.queries[id]!.median

/** ClickHouse's reference queries through keymeter beside the same statements in clickhouse-client. */
export const clientTable = (engines: ReadonlyArray<EngineResult>): Array<Array<string>> | undefined => {
  const clickhouse = engines.find((e) => e.client !== undefined)
  if (clickhouse === undefined) return undefined
  return [
    [
      "query",
      "keymeter (library), median ms",
      "clickhouse-client, median / mean of the middle 80%, ms (in turns with keymeter's)",
      "×"
    ],
    ...references.map((reference) => {
      const theirs = clickhouse.client![reference.id]!
      const ours = keymeterBeside(clickhouse, reference.id)
      return [
        `${reference.id} ${reference.title}`,
        ms(ours),
        `${ms(theirs.median)} / ${ms(theirs.mean)}`,
        `${(ours / theirs.mean).toFixed(2)}×`
      ]
    })
  ]
}

export const resourceTable = (
  engines: ReadonlyArray<EngineResult>,
  ingest = "ingest, events/s (library)"
): Array<Array<string>> => [
  ["", ...engines.map((e) => e.engine)],
  [
    ingest,
    ...engines.map((e) =>
      e.ingest
        ? Math.round(e.ingest.eventsPerSecond).toLocaleString("en")
        : e.buildSeconds !== undefined
        ? `rollup built in ${e.buildSeconds.toFixed(1)} s`
        : e.openSeconds !== undefined
        ? `opened in ${e.openSeconds.toFixed(1)} s` +
          (e.hotSeconds !== undefined ? `, in memory in ${e.hotSeconds.toFixed(1)} s` : "")
        : "–"
    )
  ],
  ["peak RSS, MiB", ...engines.map((e) => String(e.peakRssMiB))],
  ...(engines.some((e) => e.serverPeakRssMiB !== undefined)
    ? [[
      "database server peak RSS, MiB",
      ...engines.map((e) => (e.serverPeakRssMiB === undefined ? "–" : String(e.serverPeakRssMiB)))
    ]]
    : []),
  ["on disk, MiB", ...engines.map((e) => (e.diskMiB === undefined ? "–" : String(e.diskMiB)))]
]

/** Each target, with whether it is met and by how much it is missed. */
/** Quantile `q` of `values` (ms), nearest rank. */
const quantile = (values: ReadonlyArray<number>, q: number) => {
  const sorted = [...values].sort((x, y) => x - y)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN
}

/** Per query of the mix, DuckDB's better first-sight time (ms). */
const duckMixBest = (engines: ReadonlyArray<EngineResult>) => {
  const ducks = engines.filter((e) => e.engine.startsWith("duckdb") && e.mix !== undefined)
  if (ducks.length === 0) return undefined
  return ducks[0]!.mix!.first.map((_, i) => Math.min(...ducks.map((d) => d.mix!.first[i] ?? Infinity)))
}

/** The mix of one engine against DuckDB's better layout, query by query (refused ones left out). */
export const mixStats = (engine: EngineResult, best: ReadonlyArray<number>) => {
  const first: Array<number> = []
  const repeat: Array<number> = []
  const ratios: Array<number> = []
  /** The mix's index of each ratio. */
  const indexes: Array<number> = []
  let refused = 0
  engine.mix!.first.forEach((ms, i) => {
    if (ms === null) return void refused++
    first.push(ms)
    repeat.push(engine.mix!.repeat[i] ?? NaN)
    ratios.push(ms / best[i]!)
    indexes.push(i)
  })
  const geomean = Math.exp(ratios.reduce((sum, r) => sum + Math.log(r), 0) / ratios.length)
  const worst = Math.max(...ratios)
  return {
    first,
    repeat,
    ratios,
    indexes,
    refused,
    geomean,
    worst,
    worstIndex: indexes[ratios.indexOf(worst)] ?? -1,
    overHalf: ratios.filter((r) => r > 0.5).length,
    slower: ratios.filter((r) => r > 1).length
  }
}

/** A range of values as text: `a–b`, or `a` when they are one. */
const span = (values: ReadonlyArray<number>, format: (n: number) => string) => {
  const lo = format(Math.min(...values))
  const hi = format(Math.max(...values))
  return lo === hi ? lo : `${lo}–${hi}`
}

/**
 * Why a mix's target was missed, from its own figures: of the queries over 0.5× DuckDB on first
 * sight, which are so on repeat too (the engine's path for that shape) and which only on first
 * sight (the process meeting it); of those over the p99 bound, how large their answers were and
 * what their repeats and DuckDB took.
 */
export const mixReasons = (
  engine: EngineResult,
  best: ReadonlyArray<number>,
  stats: ReturnType<typeof mixStats>,
  p99Bound: number
) => {
  const mix = engine.mix!
  const over = stats.indexes.filter((_, k) => stats.ratios[k]! > 0.5)
  const repeatRatio = (i: number) => (mix.repeat[i] ?? NaN) / best[i]!
  const byRatio = [...over].sort((a, b) => mix.first[b]! / best[b]! - mix.first[a]! / best[a]!)
  const overHalf = over.length === 0 ?
    undefined :
    `over 0.5× on first sight: ${
      byRatio.slice(0, 5).map((i) =>
        `#${i} ${(mix.first[i]! / best[i]!).toFixed(2)}× (repeat ${repeatRatio(i).toFixed(2)}×)`
      ).join(", ")
    }${byRatio.length > 5 ? ", …" : ""}; ${over.filter((i) => repeatRatio(i) > 0.5).length} of ${over.length} ` +
    "also on repeat (the others: first sight only)"
  const slow = stats.indexes.filter((_, k) => stats.first[k]! > p99Bound)
  const sizes = slow.map((i) => mix.sizes?.[i]).filter((n): n is number => typeof n === "number")
  const overP99 = slow.length === 0 ?
    undefined :
    `${slow.length} of ${stats.first.length} first sights over ${p99Bound} ms${
      sizes.length > 0 ? `, answers of ${span(sizes, (n) => n.toLocaleString("en"))} datapoints` : ""
    }, their repeats ${span(slow.map((i) => mix.repeat[i] ?? NaN), ms)} ms (${
      slow.filter((i) => (mix.repeat[i] ?? 0) > p99Bound).length
    } over ${p99Bound} ms again), DuckDB ${span(slow.map((i) => best[i]!), ms)} ms`
  return { overHalf, overP99 }
}

/**
 * The engines with the mix's unseen queries (first sight on a warmed process) as their mix, for
 * the same tables (no repeat); those that ran none left out.
 */
export const unseenOf = (engines: ReadonlyArray<EngineResult>): Array<EngineResult> =>
  engines.flatMap((e) =>
    e.mix?.unseen === undefined
      ? []
      : [{ ...e, mix: { first: e.mix.unseen.first, repeat: [], answers: e.mix.unseen.answers } }]
  )

/** The mix as a table (header first): first sight and repeat, and the ratios to DuckDB. */
export const mixTable = (engines: ReadonlyArray<EngineResult>): Array<Array<string>> | undefined => {
  const best = duckMixBest(engines)
  if (best === undefined) return undefined
  const rows = [[
    "engine",
    "first sight median / p95 / p99 / worst, ms",
    "repeat median, ms",
    "× DuckDB best: geomean / worst",
    "> 0.5× / > 1× DuckDB",
    "refused (too large)"
  ]]
  rows.push([
    "duckdb, better layout",
    [0.5, 0.95, 0.99, 1].map((q) => ms(quantile(best, q))).join(" / "),
    "–",
    "–",
    "–",
    "–"
  ])
  for (const engine of engines.filter((e) => !e.engine.startsWith("duckdb") && e.mix !== undefined)) {
    const stats = mixStats(engine, best)
    rows.push([
      engine.engine,
      [0.5, 0.95, 0.99, 1].map((q) => ms(quantile(stats.first, q))).join(" / "),
      engine.mix!.repeat.length === 0 ? "–" : ms(quantile(stats.repeat, 0.5)),
      `${stats.geomean.toFixed(3)}× / ${stats.worst.toFixed(2)}×`,
      `${stats.overHalf} / ${stats.slower} of ${stats.ratios.length}`,
      String(stats.refused)
    ])
  }
  return rows
}

export const targets = (run: Run): Array<string> => {
  const lines: Array<string> = []
  const check = (ok: boolean, text: string) => lines.push(`${ok ? "met" : "MISSED"}: ${text}`)
  // The targets are set for 10M and 50M events; smaller runs are dominated by per-call costs.
  /** Issue 15's targets of a query mix (issue 30's for getRatelimits: the same). */
  const mixTargets = (size: number, engines: ReadonlyArray<EngineResult>, what: string) => {
    const at = `at ${count(size)}`
    const best = duckMixBest(engines)
    for (const engine of engines.filter((e) => (e.engine === "memory" || e.engine === "sqlite") && e.mix)) {
      const stats = mixStats(engine, best!)
      const reasons = mixReasons(engine, best!, stats, 15)
      check(
        stats.overHalf === 0 && stats.geomean <= 0.05,
        `${engine.engine} ${what} ${at}: first sight ${stats.overHalf} of ${stats.ratios.length} queries over 0.5× ` +
          `DuckDB, worst ${stats.worst.toFixed(2)}×, geomean ${
            stats.geomean.toFixed(3)
          }× (target none over 0.5×, geomean <= 0.05×)${reasons.overHalf !== undefined ? `; ${reasons.overHalf}` : ""}`
      )
      // Issue 15's p99 is set at 10M; issue 32 holds 100M to the same.
      if (size === 10_000_000 || size >= 100_000_000) {
        const p99 = quantile(stats.first, 0.99)
        check(
          p99 <= 15,
          `${engine.engine} ${what} ${at}: first-sight p99 ${ms(p99)} ms (target <= 15 ms)${
            p99 > 15 && reasons.overP99 !== undefined ? `; ${reasons.overP99}` : ""
          }`
        )
      }
    }
  }
  for (const { engines, size } of (run.ratelimits ?? []).filter((s) => s.size >= 10_000_000)) {
    mixTargets(size, engines, "getRatelimits mix")
  }
  for (const { size, engines } of run.sizes.filter((s) => s.size >= 10_000_000)) {
    const at = `at ${count(size)}`
    mixTargets(size, engines, "mix")
    // The targets hold for each adapter's default configuration; "rollups only" is for comparison.
    for (const engine of engines.filter((e) => !e.engine.startsWith("duckdb") && e.engine !== "sqlite, rollups only")) {
      const bound = engine.engine === "memory" ? 0.2 : 1
      // ClickHouse's targets: no slower than DuckDB at 50M events; at any size, a query through
      // keymeter at most 1.2× the same statements in clickhouse-client (issue 32). No ingest target.
      if (engine.engine === "clickhouse") {
        for (const reference of references.filter(() => engine.client !== undefined)) {
          const ratio = keymeterBeside(engine, reference.id) / engine.client![reference.id]!.mean
          check(
            ratio <= 1.2,
            `clickhouse ${reference.id} ${at}: ${ratio.toFixed(3)}× clickhouse-client (target <= 1.2×)`
          )
        }
        if (size < 50_000_000) continue
        for (const reference of references) {
          const ratio = engine.queries[reference.id]!.median / duckBest(engines, reference.id)
          check(
            ratio <= 1,
            `clickhouse ${reference.id} ${at}: ${ratio.toFixed(3)}× DuckDB's better layout (target <= 1×)`
          )
        }
        continue
      }
      for (const reference of references) {
        const ratio = engine.queries[reference.id]!.median / duckBest(engines, reference.id)
        check(
          engine.engine === "memory" ? ratio <= bound : ratio < bound,
          `${engine.engine} ${reference.id} ${at}: ${ratio.toFixed(3)}× DuckDB's better layout (target ${
            engine.engine === "memory" ? "<= 0.2×" : "< 1×"
          })`
        )
      }
      if (engine.ingest === undefined) continue
      const rate = engine.ingest.eventsPerSecond
      // Issue 15's floors; at 100M, issue 32 asks 150k of SQLite.
      const wanted = engine.engine === "memory" ? 1_000_000 : size >= 100_000_000 ? 150_000 : 120_000
      check(
        rate >= wanted,
        `${engine.engine} ingest ${at}: ${Math.round(rate).toLocaleString("en")} events/s (target >= ${
          wanted.toLocaleString("en")
        })`
      )
      // Issue 15's bound is set at 50M; issue 32's at 100M is 4 GiB.
      if (engine.engine === "memory" && size >= 50_000_000) {
        const bound = size >= 100_000_000 ? 4096 : 2048
        check(
          engine.peakRssMiB <= bound,
          `memory peak RSS ${at}: ${engine.peakRssMiB} MiB (target <= ${bound})`
        )
      }
    }
  }
  for (const r of run.verify ?? []) {
    check(
      r.known.median <= 10 && r.known.p99 <= 50,
      `library verifyKey on ${r.storage}, ${count(r.keys)} keys: median ${us(r.known.median)}, p99 ${
        us(r.known.p99)
      } (target median <= 10 µs, p99 <= 50 µs${r.keys < 1_000_000 ? ", set at 1M keys" : ""})`
    )
    if (r.storage === "sqlite") {
      check(
        r.credits.p99 <= 10_000,
        `library verifyKey with credits on sqlite, 32 callers: p99 ${ms(r.credits.p99 / 1000)} ms (target <= 10 ms)`
      )
    }
  }
  for (const http of run.http) {
    for (const load of http.load ?? []) {
      const figures = `${Math.round(load.requestsPerSecond)} req/s, p99 ${load.p99} ms, ${
        load.ratio.toFixed(3)
      }× node:http`
      const wanted = HTTP_TARGETS[load.route]?.(http.adapter)
      if (wanted !== undefined) {
        check(
          load.ratio >= wanted.ratio && load.p99 <= (wanted.p99 ?? Infinity) &&
            load.requestsPerSecond >= (wanted.requestsPerSecond ?? 0),
          `HTTP ${load.route} on ${http.adapter}: ${figures} (target ${wanted.text})`
        )
      }
      check(
        load.errors === 0,
        `HTTP ${load.route} on ${http.adapter}: ${load.errors} failed requests of ${load.requests} (target 0)`
      )
    }
    for (const [v1, v2] of TWINS) {
      const one = http.load?.find((load) => load.route === v1)
      const two = http.load?.find((load) => load.route === v2)
      if (one === undefined || two === undefined) continue
      const ratio = two.requestsPerSecond / one.requestsPerSecond
      check(
        ratio >= 0.9,
        `HTTP ${v2} on ${http.adapter}: ${ratio.toFixed(3)}× ${v1}'s req/s (${Math.round(two.requestsPerSecond)} vs ${
          Math.round(one.requestsPerSecond)
        }; target >= 0.9×)`
      )
    }
  }
  if (![...run.sizes, ...(run.ratelimits ?? [])].some((s) => s.size >= 10_000_000)) {
    lines.unshift("(query, ingest and memory targets apply at 10M and 50M events: run with --size 10m,50m)")
  }
  return lines
}

/** Rows as aligned text columns (the first left-aligned). */
export const plain = (rows: Array<Array<string>>) => {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)))
  return rows.map((r) => r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join("  "))
    .join("\n")
}
/** Rows as a Markdown table (the first row its header). */
export const markdown = (rows: Array<Array<string>>) =>
  [
    `| ${rows[0]!.join(" | ")} |`,
    `|${rows[0]!.map((_, c) => (c === 0 ? "---" : "---:")).join("|")}|`,
    ...rows.slice(1).map((r) => `| ${r.join(" | ")} |`)
  ].join("\n")

/** Per engine: ingest, the getRatelimits mix on first sight and repeat, and against DuckDB's better layout. */
export const ratelimitSummary = (section: RatelimitSection): Array<Array<string>> => {
  const { engines } = section
  const best = duckMixBest(engines)!
  const ducks = engines.filter((e) => e.engine.startsWith("duckdb"))
  const duckRepeat = best.map((_, i) => Math.min(...ducks.map((d) => d.mix!.repeat[i] ?? Infinity)))
  const rate = (e: EngineResult | undefined) =>
    e?.ingest ? Math.round(e.ingest.eventsPerSecond).toLocaleString("en") : "–"
  const pair = (values: ReadonlyArray<number>) => `${ms(quantile(values, 0.5))} / ${ms(quantile(values, 0.99))}`
  const rows = [[
    "engine",
    "ingest, decisions/s",
    "first sight median / p99, ms",
    "repeat median / p99, ms",
    "× DuckDB best, geomean",
    "worst × (query #)",
    "> 0.5× DuckDB",
    "repeat > 0.5× DuckDB's repeat",
    "refused (too large)"
  ]]
  rows.push(["duckdb, better layout", `${rate(ducks[0])} (raw)`, pair(best), pair(duckRepeat), "–", "–", "–", "–", "–"])
  for (const engine of engines.filter((e) => !e.engine.startsWith("duckdb") && e.mix !== undefined)) {
    const stats = mixStats(engine, best)
    rows.push([
      engine.engine,
      rate(engine),
      pair(stats.first),
      pair(stats.repeat),
      `${stats.geomean.toFixed(3)}×`,
      `${stats.worst.toFixed(2)}× (#${stats.worstIndex})`,
      `${stats.overHalf} of ${stats.ratios.length}`,
      `${stats.indexes.filter((i) => engine.mix!.repeat[i]! / duckRepeat[i]! > 0.5).length} of ${stats.ratios.length}`,
      String(stats.refused)
    ])
  }
  return rows
}

/** The mix by grouping: how many queries, DuckDB's median, and each engine's geomean, worst and count over 0.5×. */
export const ratelimitShapes = (section: RatelimitSection): Array<Array<string>> => {
  const { engines, queries } = section
  const best = duckMixBest(engines)!
  const ours = engines.filter((e) => !e.engine.startsWith("duckdb") && e.mix !== undefined)
  const shapes = [...new Set(queries.map((q) => q.shape))]
  const rows = [[
    "grouping",
    "queries",
    "DuckDB best median, ms",
    ...ours.map((e) => `${e.engine}: median ms, geomean × / worst × / > 0.5×`)
  ]]
  for (const shape of shapes) {
    const members = queries.flatMap((q, i) => (q.shape === shape ? [i] : []))
    rows.push([
      shape,
      String(members.length),
      ms(quantile(members.map((i) => best[i]!), 0.5)),
      ...ours.map((engine) => {
        const answered = members.filter((i) => engine.mix!.first[i] !== null)
        if (answered.length === 0) return "all refused"
        const ratios = answered.map((i) => engine.mix!.first[i]! / best[i]!)
        const geomean = Math.exp(ratios.reduce((sum, r) => sum + Math.log(r), 0) / ratios.length)
        return `${ms(quantile(answered.map((i) => engine.mix!.first[i]!), 0.5))}, ${geomean.toFixed(3)}× / ${
          Math.max(...ratios).toFixed(2)
        }× / ${ratios.filter((r) => r > 0.5).length}` +
          (answered.length < members.length ? ` (${members.length - answered.length} refused)` : "")
      })
    ])
  }
  return rows
}

/** The queries over 0.5× DuckDB's better layout on first sight (each engine's `most` worst), worst first. */
export const ratelimitMisses = (section: RatelimitSection, most = 25): Array<Array<string>> => {
  const { engines, queries } = section
  const best = duckMixBest(engines)!
  const raw = engines.find((e) => e.engine === "duckdb raw decisions")
  const rollup = engines.find((e) => e.engine === "duckdb hourly rollup")
  const rows = [[
    "engine",
    "#",
    "query",
    "DuckDB raw / rollup, ms",
    "first sight, ms",
    "× DuckDB best",
    "repeat, ms"
  ]]
  for (const engine of engines.filter((e) => !e.engine.startsWith("duckdb") && e.mix !== undefined)) {
    const over = engine.mix!.first.flatMap((first, i) =>
      first !== null && first / best[i]! > 0.5 ? [{ i, first, ratio: first / best[i]! }] : []
    ).sort((a, b) => b.ratio - a.ratio)
    for (const { first, i, ratio } of over.slice(0, most)) {
      rows.push([
        engine.engine,
        String(i),
        queries[i]!.text,
        `${ms(raw?.mix?.first[i] ?? NaN)} / ${ms(rollup?.mix?.first[i] ?? NaN)}`,
        ms(first),
        `${ratio.toFixed(2)}×`,
        ms(engine.mix!.repeat[i] ?? NaN)
      ])
    }
    if (over.length > most) rows.push([engine.engine, "…", `${over.length - most} more`, "", "", "", ""])
  }
  return rows
}

/** The rate-limit sections as text or markdown lines. */
const renderRatelimits = (
  run: Run,
  format: "text" | "markdown",
  table: (rows: Array<Array<string>>) => string
): Array<string> => {
  const out: Array<string> = []
  for (const section of run.ratelimits ?? []) {
    const { engines, mismatches, queries, size } = section
    out.push(
      format === "markdown"
        ? `## getRatelimits, ${count(size)} decisions`
        : `\n== getRatelimits, ${count(size)} decisions ==`,
      "",
      `Decisions appended straight into each store in batches of 10,000 (building the decision objects included); ` +
        `then a seeded mix of ${queries.length} getRatelimits queries through the library, each timed once on first ` +
        "sight (a process that has not asked it; remembered answers off), then again. × is the ratio to DuckDB's " +
        "better layout (raw decisions or hourly rollup), query by query.",
      "",
      table(ratelimitSummary(section)),
      ""
    )
    const best = duckMixBest(engines)!
    for (const engine of engines.filter((e) => !e.engine.startsWith("duckdb") && e.mix !== undefined)) {
      const stats = mixStats(engine, best)
      if (stats.worstIndex < 0) continue
      out.push(
        `Worst on ${engine.engine}: #${stats.worstIndex} ${queries[stats.worstIndex]!.text}: ` +
          `${ms(engine.mix!.first[stats.worstIndex]!)} ms against DuckDB's ${ms(best[stats.worstIndex]!)} ms ` +
          `(${stats.worst.toFixed(2)}×).`,
        ""
      )
    }
    out.push(table(resourceTable(engines, "ingest, decisions/s")), "")
    out.push("By grouping (first sight):", "", table(ratelimitShapes(section)), "")
    const misses = ratelimitMisses(section)
    out.push(
      misses.length > 1
        ? `Queries over 0.5× DuckDB's better layout on first sight:\n\n${table(misses)}\n`
        : "No query over 0.5× DuckDB's better layout on first sight.\n",
      mismatches.length === 0
        ? "Answers: every engine's equal to DuckDB's raw decisions on every query (the hourly rollup's too)."
        : `ANSWERS DIFFER:\n${mismatches.join("\n")}`,
      ""
    )
  }
  return out
}

/** The run as text for the terminal, or as markdown. */
export const render = (run: Run, format: "text" | "markdown"): string => {
  const table = format === "text" ? plain : markdown
  const out: Array<string> = []
  if (format === "markdown") {
    out.push(`# keymeter benchmark, ${run.startedAt}`, "")
    out.push(`Machine: ${Object.entries(run.machine).map(([k, v]) => `${k} ${v}`).join("; ")}.`, "")
    if (run.sizes.length > 0) {
      out.push(
        "Medians in ms, (min–max) over the timed runs; × is the ratio to DuckDB's better layout for that query.",
        ""
      )
    }
  }
  for (const { size, engines, mismatches } of run.sizes) {
    out.push(format === "markdown" ? `## ${count(size)} events` : `\n== ${count(size)} events ==`, "")
    out.push(table(queryTable(engines)), "")
    const client = clientTable(engines)
    if (client !== undefined) {
      const settled = engines.find((e) => e.settledSeconds !== undefined)?.settledSeconds
      out.push(
        "ClickHouse through keymeter and in clickhouse-client, in turns of 11 runs each" +
          (settled === undefined ? ":" : ` (timed once its merges had stopped, ${settled.toFixed(0)} s after ingest):`),
        table(client),
        ""
      )
    }
    out.push(table(resourceTable(engines)), "")
    const mixed = mixTable(engines)
    if (mixed !== undefined) {
      out.push(
        `Query mix (${
          mixed.length - 2
        } engines): each query timed once on first sight, then again; × is the ratio to DuckDB's better layout, query by query.`,
        "",
        table(mixed),
        ""
      )
    }
    const unseen = mixTable(unseenOf(engines))
    if (unseen !== undefined) {
      out.push(
        "The same number of other queries (the next seed's mix), each timed once after the mix ran twice: first sight " +
          "of a query on a process that has served hundreds (DuckDB's too). For comparison; the targets above are " +
          "the mix's, in a process that had answered no query.",
        "",
        table(unseen),
        ""
      )
    }
    out.push(
      mismatches.length === 0
        ? "Answers: every engine's equal to DuckDB's on every query."
        : `ANSWERS DIFFER:\n${mismatches.join("\n")}`,
      ""
    )
  }
  for (const line of renderRatelimits(run, format, table)) out.push(line)
  if ((run.verify ?? []).length > 0) {
    out.push(
      format === "markdown" ? "## verifyKey through the library" : "\n== verifyKey through the library ==",
      "",
      "One call at a time (`await keymeter.keys.verify`), recording on; medians and p99 of each call. Keys " +
        "carry an identity (ten keys each) and an auto-applied rate limit. Credits: 1,000 keys with credits, " +
        "32 callers at once for 5 s.",
      "",
      table(verifyTable(run.verify!)),
      ""
    )
  }
  if (run.scaleOut !== undefined) {
    out.push(
      format === "markdown" ? "## Several servers" : "\n== Several servers ==",
      "",
      "`keymeter.limit` through the library, 32 concurrent callers per server process, each server's own windows " +
        "or windows shared in Redis; then keys.verifyKey over HTTP through three servers sharing PostgreSQL, Redis " +
        "and ClickHouse (16 connections each).",
      "",
      table([
        ["rate-limit windows", "servers", "decisions/s", "p50 ms", "p99 ms"],
        ...run.scaleOut.limiter.map((r) => [
          r.windows,
          String(r.servers),
          Math.round(r.decisionsPerSecond).toLocaleString("en"),
          r.p50.toFixed(2),
          r.p99.toFixed(2)
        ])
      ]),
      ""
    )
    const verify = run.scaleOut.verifyThreeServers
    if (verify !== undefined) {
      out.push(
        `keys.verifyKey through three servers: ${Math.round(verify.requestsPerSecond).toLocaleString("en")} req/s, ` +
          `p99 ${verify.p99} ms, ${verify.errors} failed.`,
        ""
      )
    }
  }
  if (run.http.length > 0) {
    out.push(format === "markdown" ? "## HTTP (standalone server process, loopback)" : "\n== HTTP ==", "")
    const rows: Array<Array<string>> = [[
      "adapter",
      "route",
      "requests/s or events/s",
      "p50 ms",
      "p99 ms",
      "failed",
      "node:http req/s, p99 ms",
      "× node:http"
    ]]
    for (const http of run.http) {
      if (http.ingest) {
        rows.push([
          http.adapter,
          `recordVerifications ingest (${count(http.ingest.events)} events, batches of 10,000)`,
          `${Math.round(http.ingest.eventsPerSecond).toLocaleString("en")} events/s`,
          "–",
          "–",
          "0",
          "–",
          "–"
        ])
      }
      for (const load of http.load ?? []) {
        rows.push([
          http.adapter,
          load.route,
          `${Math.round(load.requestsPerSecond).toLocaleString("en")} req/s`,
          String(load.p50),
          String(load.p99),
          `${load.errors} of ${load.requests}`,
          `${Math.round(load.baseline.requestsPerSecond).toLocaleString("en")}, ${load.baseline.p99}`,
          `${load.ratio.toFixed(3)}×`
        ])
      }
    }
    out.push(table(rows), "")
  }
  out.push(format === "markdown" ? "## Targets" : "\n== Targets ==", "")
  for (const line of targets(run)) out.push(format === "markdown" ? `- ${line}` : line)
  return out.join("\n")
}
