/**
 * The engine's query paths run over the engine's own rows once a process holds enough of them, so
 * that V8 has compiled them, and the scan loop of each query shape (see `query/Compile`), before
 * callers' first queries rather than during them. Unwarmed, a process's first few hundred queries
 * took up to twice as long as queries it had never seen once it had served hundreds (issue 32's
 * mix of 300 at 10M events, first-sight p99 56-70 ms without, 40-43 ms with, geomean 0.10-0.16×
 * DuckDB's time without, 0.09-0.11× with). Made-up rows warmed far less (no full chunk, so no
 * key-index paths; small dictionaries, so other group layouts): the queries read the real
 * partitions of apis large and small and keep nothing. One query of each loop, over short windows
 * of four apis, left the mix's first sights 1.4-1.9x as slow as its repeats in geometric mean (six
 * runs; 8-13 of 295 queries over 0.5x DuckDB's time); 300 dashboards' queries after them, over
 * windows up to 90 days of every api, 1.1-1.5x (four runs; 1-7 over 0.5x); 300 of the mix's own
 * kind asked first, 1.1-1.2x. Once per thread: compiled code and the loops' cache are shared by
 * every engine of the thread.
 */
import type { AggregationQuery, AggregationResult } from "@keymeter/core/Aggregation"
import { answer, makeQuery } from "@keymeter/core/Aggregation"
import type { TimeUnit } from "@keymeter/core/Time"
import type { Partition } from "./Partition.js"
import { CHUNK_BITS } from "./Run.js"

const HOUR = 3_600_000

/** A partition is worth warming over once its main run has this many rows (four full chunks). */
export const ROWS = 4 << CHUNK_BITS

/** The datapoint cap of the warm-up's answers: larger ones are refused, as a caller's would be. */
const CAP = 50_000

const TIME_UNITS: ReadonlyArray<TimeUnit> = ["hour", "day", "month"]
const ORDER_BY = ["total", "valid", "rateLimited", "usageExceeded"] as const
const LIMITS = [5, 10, 20, 100]

/** Every grouping the contract allows, but for the time unit. */
const GROUPINGS: ReadonlyArray<ReadonlyArray<"key" | "identity" | "tag" | "tags">> = [
  [],
  ["key"],
  ["identity"],
  ["tag"],
  ["tags"],
  ["key", "identity"],
  ["key", "tag"],
  ["key", "tags"],
  ["identity", "tag"],
  ["identity", "tags"],
  ["key", "identity", "tag"],
  ["key", "identity", "tags"]
]

/** Dashboards' queries the warm-up asks after one of each loop (see {@link queries}). */
export const DASHBOARDS = 300

/** Most rows a dashboard query of the warm-up reads (its window is cut to fit). */
export const DASHBOARD_ROWS = 1_000_000

/** A query's window, unix ms, both ends inclusive. */
interface Window {
  readonly start: number
  readonly end: number
}

/** Rows of `partition`'s main run in hours [from, to]. */
const rowsIn = (partition: Partition, from: number, to: number): number => {
  const [a, b] = partition.main.rows(from, to)
  return b - a
}

/** The filters a query may combine: keys, a tag, an external id (each a mask in the scan loops). */
const FILTERS = [0, 1, 2, 3, 4, 5, 6, 7].map((bits) => ({
  keys: (bits & 1) !== 0,
  tag: (bits & 2) !== 0,
  external: (bits & 4) !== 0
}))

/** An api's partition, named. */
export interface Named {
  readonly workspaceId: string
  readonly apiId: string
  readonly partition: Partition
}

/** A seeded PRNG (mulberry32), uniform in [0, 1): the same queries for the same partitions. */
const random = (seed: number) => () => {
  seed = (seed + 0x6D2B79F5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), seed | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

/**
 * Dashboards' queries over `apis`: first one of each scan loop the engine generates (see
 * `query/Compile`) over the apis it chooses (see {@link choose}): every grouping × combination of
 * filters (keys, a tag, an external id), without a time unit and with one over several buckets;
 * composite groupings over the largest api and the smallest (their group layouts differ with the
 * dictionaries' sizes), the others over the apis in turn, one dimension with a top N and without
 * (top N has paths of its own, see `query/TopN`), and over the largest api, top keys (with their
 * identities or not) by total per day or month (see `query/DayAggregates`). Orders, limits, time
 * units and windows (an hour to two days, unaligned, in each api's newest week) vary from query to
 * query. Then `dashboards` queries drawn as they come: any api of a chunk or more, grouping,
 * filters and order, over a window of an hour to 90 days anywhere in the api's data, cut from its
 * start to at most {@link DASHBOARD_ROWS} rows (a quarter of that for composite groupings).
 */
export const queries = (
  apis: ReadonlyArray<Named>,
  sumCredits: boolean,
  dashboards: number = DASHBOARDS
): Array<AggregationQuery> => {
  const next = random(32)
  const int = (n: number) => Math.floor(next() * n)
  const out: Array<AggregationQuery> = []
  const every = sizeable(apis)
  const chosen = choose(every)
  if (chosen.length === 0) return out
  /** A window of an hour to two days, unaligned, in `partition`'s newest week (several `unit`s). */
  const newest = (partition: Partition, unit: TimeUnit | undefined): Window => {
    const [shortest, longest] = unit === "hour" ? [2, 24] : unit === "day" ? [25, 48] : [1, 48]
    const length = Math.round(HOUR * shortest * Math.exp(next() * Math.log(longest / shortest)))
    const end = (partition.main.lastHour + 1) * HOUR - int(6 * 24) * HOUR - int(HOUR)
    return { start: end - length, end: end - 1 }
  }
  /**
   * A window of an hour to 90 days, unaligned, anywhere in `partition`'s data, halved from its start
   * until it holds at most `budget` rows.
   */
  const anywhere = (partition: Partition, budget: number): Window => {
    const { firstHour, lastHour } = partition.main
    const hours = Math.min(lastHour - firstHour + 1, Math.round(Math.exp(next() * Math.log(90 * 24))))
    const to = firstHour + hours - 1 + int(lastHour - firstHour - hours + 2)
    let from = to - hours + 1
    while (from < to && rowsIn(partition, from, to) > budget) from = to - ((to - from) >> 1)
    const start = from * HOUR + int(HOUR)
    const end = (to + 1) * HOUR - 1 - int(HOUR)
    return { start, end: Math.max(end, start + HOUR - 1) }
  }
  /** One query of `groups`, `filter`, `timeUnit` and `window` over `api`, the rest drawn. */
  const add = (
    api: Named,
    groups: ReadonlyArray<string>,
    filter: typeof FILTERS[number],
    top: boolean,
    timeUnit: TimeUnit | undefined,
    { end, start }: Window,
    byTotal = false
  ) => {
    const { apiId, partition, workspaceId } = api
    const { externalIds, keyIds: keys, tagNames: tags } = partition
    if (keys.length === 0) return
    out.push(makeQuery({
      workspaceId,
      apiId,
      maxRows: CAP,
      start,
      end,
      timeUnit,
      groupByKey: groups.includes("key"),
      groupByIdentity: groups.includes("identity"),
      groupByTag: groups.includes("tag") ? "tag" : groups.includes("tags") ? "tags" : undefined,
      // Popular keys are mostly the first seen.
      ...(filter.keys
        ? {
          keyIds: Array.from(
            { length: 1 + int(3) },
            () => keys[int(next() < 0.5 ? Math.min(10, keys.length) : keys.length)]!
          )
        }
        : {}),
      ...(filter.tag && tags.length > 0 ? { tags: [tags[int(tags.length)]!] } : {}),
      ...(filter.external && externalIds.length > 1
        ? { externalId: externalIds[1 + int(externalIds.length - 1)]! }
        : {}),
      ...(top
        ? {
          orderBy: byTotal ? "total" : ORDER_BY[int(ORDER_BY.length)],
          order: "desc" as const,
          limit: LIMITS[int(LIMITS.length)]
        }
        : {}),
      // SQL analytics asks for credits of the engines that keep them.
      ...(sumCredits && next() < 0.1 ? { sumCredits: true } : {})
    }))
  }
  let turn = 0
  for (const groups of GROUPINGS) {
    for (const filter of FILTERS) {
      for (const timed of [false, true]) {
        const over = groups.length >= 2
          ? [...new Set([chosen[0]!, chosen[chosen.length - 1]!])]
          : [chosen[turn++ % chosen.length]!]
        const tops = groups.length === 1 ? [false, true] : groups.length === 0 ? [false] : [next() < 0.6]
        for (const top of tops) {
          for (const api of over) {
            const unit = timed ? TIME_UNITS[int(TIME_UNITS.length)] : undefined
            add(api, groups, filter, top, unit, newest(api.partition, unit))
          }
        }
      }
    }
  }
  // Top keys, and keys with their identities, by total per day or month (a path of its own), over
  // the largest api.
  for (const groups of [["key"], ["key", "identity"]]) {
    for (const filter of FILTERS.slice(0, 2)) {
      for (const unit of ["day", "month"] as const) {
        add(chosen[0]!, groups, filter, true, unit, newest(chosen[0]!.partition, unit), true)
      }
    }
  }
  // Dashboards' queries as they come. Each loop above ran over a few chunks of four apis; these run
  // the paths over many, and over every api's sizes of dictionaries, answers and group tables.
  for (let i = 0; i < dashboards; i++) {
    const api = every[int(every.length)]!
    const groups = GROUPINGS[int(GROUPINGS.length)]!
    const filter = next() < 0.6 ? FILTERS[0]! : FILTERS[int(FILTERS.length)]!
    const unit = [undefined, undefined, "hour", "day", "month"][int(5)] as TimeUnit | undefined
    // Each query within tens of ms (as the loops' queries are): composite groups cost more a row.
    const window = anywhere(api.partition, groups.length >= 2 ? DASHBOARD_ROWS / 4 : DASHBOARD_ROWS)
    add(api, groups, filter, groups.length > 0 && next() < 0.6, unit, window)
  }
  return out
}

/** The apis holding at least a chunk of rows, largest first. */
export const sizeable = (apis: ReadonlyArray<Named>): Array<Named> =>
  apis.filter((a) => a.partition.main.length >= 1 << CHUNK_BITS)
    .sort((a, b) => b.partition.size - a.partition.size)

/**
 * The apis the warm-up asks one query of each loop over: of those holding at least a chunk of rows,
 * the largest and up to three others spread over their sizes, largest first.
 */
export const choose = (apis: ReadonlyArray<Named>): Array<Named> => {
  const sized = sizeable(apis)
  const n = sized.length
  return [...new Set([0, Math.floor(n / 3), Math.floor((2 * n) / 3), n - 1])].filter((i) => i < n).map((i) => sized[i]!)
}

/** What the warm-up needs of the engine: its answers, and a count that moves with every write. */
export interface Target {
  readonly aggregate: (query: AggregationQuery) => AggregationResult | undefined
  readonly writes: () => number
}

/** Answers one query as a store and core would, keeping nothing; false when it failed. */
export const ask = (target: Target, query: AggregationQuery): boolean => {
  try {
    const result = target.aggregate(query)
    if (result !== undefined) answer(query, result, CAP)
    return true
  } catch {
    return false
  }
}

let started: Promise<number> | undefined

/** This thread's warm-up once scheduled: how many of its queries were answered. */
export const current = (): Promise<number> | undefined => started

/** Writes must pause this long before the warm-up starts (a bulk load finishing)... */
const QUIET_MS = 250
/** ...or it starts this long after it was scheduled anyway (a server that never stops recording). */
const PATIENCE_MS = 30_000

/**
 * Schedules the thread's warm-up (once: later calls get the first call's promise): it waits until
 * `target`'s writes pause, then asks `make()`'s queries one per turn of the event loop (each a
 * millisecond or two), so that no request waits long behind them. Resolves with how many were
 * answered. Its timers keep no process alive.
 */
export const schedule = (target: Target, make: () => ReadonlyArray<AggregationQuery>): Promise<number> =>
  started ??= new Promise((resolve) => {
    const since = Date.now()
    let writes = target.writes()
    const wait = () => {
      const now = target.writes()
      if (now !== writes && Date.now() - since < PATIENCE_MS) {
        writes = now
        return void setTimeout(wait, QUIET_MS).unref()
      }
      const all = make()
      let at = 0
      let answered = 0
      const step = () => {
        if (at >= all.length) return resolve(answered)
        if (ask(target, all[at++]!)) answered++
        // A timer, not setImmediate: an unreferenced immediate does not wake an idle loop.
        setTimeout(step, 0).unref()
      }
      step()
    }
    setTimeout(wait, QUIET_MS).unref()
  })
