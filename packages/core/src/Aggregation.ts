/**
 * The aggregation contract between core and storage adapters. An adapter answers an
 * {@link AggregationQuery} with an {@link AggregationResult}: one row per non-empty
 * (time bucket, group) pair, in columns, counters in a flat `Float64Array`. Core then applies the
 * rules every adapter must share — zero fill, ordering with tie-breaks, limit, the datapoint cap —
 * and builds datapoints only for the rows it returns.
 */
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import type { Datapoint } from "./Datapoint.js"
import { QueryTooLarge } from "./Errors.js"
import { answerOrder } from "./internal/AnswerOrder.js"
import { datapoints } from "./internal/Datapoints.js"
import {
  compareIdentities,
  compareStrings,
  givenRanks,
  joinTags,
  rankColumn,
  timeRanks
} from "./internal/DefaultOrder.js"
import * as Time from "./Time.js"
import type { Identity } from "./Verification.js"
import { Outcomes } from "./Verification.js"
import type { VerificationQuery } from "./VerificationQuery.js"
import { isZeroFilled } from "./VerificationQuery.js"

/** Number of outcome counters per row: one per outcome, in the order of `Verification.Outcomes`. */
export const OUTCOMES = Outcomes.length

/** Names of the counter columns of adapters that store rows of counters: `c0` .. `c8`, by outcome code. */
export const COUNTER_COLUMNS: ReadonlyArray<string> = Outcomes.map((_, code) => `c${code}`)

/** A query as an adapter receives it. */
export interface AggregationQuery extends VerificationQuery {
  readonly workspaceId: string
  /** An adapter may stop and fail with {@link tooLarge} once it holds more rows than this. */
  readonly maxRows: number
  /**
   * Also sum the spent credits of each counter's events (`AggregationResult.credits`): asked only
   * of stores that say they do (`VerificationStore.sumsCredits`), by SQL analytics.
   */
  readonly sumCredits?: boolean | undefined
}

/**
 * `query` asked of a store for `workspaceId`, with every field present and in one order, whichever
 * path builds it (a caller's query, SQL's parts, the engine's warm-up, a test): objects of one
 * hidden class, so the code a store's engine optimized over one path's queries serves the others'.
 * Queries spread together from differently ordered fields had maps of their own, and the first
 * caller's query after the engine's warm-up deoptimized every function that read one.
 */
export const aggregationQuery = (
  query: VerificationQuery,
  workspaceId: string,
  maxRows: number,
  sumCredits?: boolean | undefined
): AggregationQuery => ({
  workspaceId,
  apiId: query.apiId,
  keyIds: query.keyIds,
  tags: query.tags,
  externalId: query.externalId,
  start: query.start,
  end: query.end,
  timeUnit: query.timeUnit,
  groupByKey: query.groupByKey,
  groupByIdentity: query.groupByIdentity,
  groupByTag: query.groupByTag,
  orderBy: query.orderBy,
  order: query.order,
  limit: query.limit,
  maxRows,
  sumCredits
})

/**
 * A query with no filter, no grouping, no order and no limit, but for the fields given: for
 * adapters' tests and benchmarks, which build queries directly rather than from a caller's input.
 */
export const makeQuery = (
  fields: Pick<AggregationQuery, "workspaceId" | "apiId" | "end" | "maxRows"> & Partial<AggregationQuery>
): AggregationQuery =>
  aggregationQuery(
    {
      keyIds: fields.keyIds ?? [],
      tags: fields.tags ?? [],
      externalId: fields.externalId,
      start: fields.start,
      timeUnit: fields.timeUnit,
      groupByKey: fields.groupByKey ?? false,
      groupByIdentity: fields.groupByIdentity ?? false,
      groupByTag: fields.groupByTag,
      orderBy: fields.orderBy,
      order: fields.order ?? "asc",
      limit: fields.limit,
      apiId: fields.apiId,
      end: fields.end
    },
    fields.workspaceId,
    fields.maxRows,
    fields.sumCredits
  )

/**
 * An adapter's answer. Rows are unique by (time, keyId, identity, tag or tags). A column is present
 * exactly when the query groups by it: `time` with a time unit, `tag` for `groupByTag: "tag"`,
 * `tags` (sorted) for `"tags"`.
 */
export interface AggregationResult {
  readonly size: number
  /**
   * Set when the adapter answered `orderBy` + `limit` itself and returned only the rows that can
   * make the first `limit` (every row tied with the last of them included): how many rows the
   * complete answer holds, for the datapoint cap.
   */
  readonly groups?: number | undefined
  /** `counts[row * OUTCOMES + outcome]`, outcomes in the order of `Verification.Outcomes`. */
  readonly counts: Float64Array
  /** With `sumCredits`: the spent credits of the events each counter counts, laid out as `counts`. */
  readonly credits?: Float64Array | undefined
  readonly time?: Float64Array | undefined
  readonly keyId?: ReadonlyArray<string> | undefined
  readonly identity?: ReadonlyArray<Identity> | undefined
  readonly tag?: ReadonlyArray<string> | undefined
  readonly tags?: ReadonlyArray<ReadonlyArray<string>> | undefined
  /**
   * Ranks an adapter may give of its value columns (see {@link ColumnRanks}): the default
   * ordering then sorts their rows by them instead of comparing the values (strings), as an
   * adapter that keeps its values in ranked dictionaries can.
   */
  readonly ranks?: {
    readonly keyId?: ColumnRanks | undefined
    readonly identity?: ColumnRanks | undefined
    readonly tag?: ColumnRanks | undefined
    readonly tags?: ColumnRanks | undefined
  } | undefined
}

/**
 * A column's ranks: `ranks[row]` below `count`, ordered as the rows' values are by
 * {@link columnOrder} (equal values, equal ranks; gaps allowed).
 */
export interface ColumnRanks {
  readonly ranks: Uint32Array
  readonly count: number
}

/**
 * How the default ordering compares the values of each column (tag sets by their tags joined with
 * `,`): what an adapter's {@link ColumnRanks} must agree with.
 */
export const columnOrder = {
  keyId: { compare: compareStrings },
  identity: { compare: compareIdentities },
  tag: { compare: compareStrings },
  tags: { compare: compareStrings, keyOf: joinTags }
} as const

/**
 * Most buckets of a time series (zero-filled, so its cost is its window, not its data): bounds
 * what one read costs to build and send, whatever the datapoint cap.
 */
export const MAX_SERIES_BUCKETS = 10_000

/** The failure for an answer over the cap, with advice on narrowing the query. */
export const tooLarge = (query: VerificationQuery, cap: number): QueryTooLarge => {
  const advice = query.timeUnit === "hour"
    ? "a shorter window, a coarser time unit (day or month)"
    : "a shorter window, a coarser time unit"
  return new QueryTooLarge({
    message: `The answer would hold more than ${cap} datapoints; narrow it with ${advice}, ` +
      "filters (keyId, tag, externalId) or fewer groupBy dimensions"
  })
}

/** An adapter's answer, or {@link tooLarge} when it had more than `query.maxRows` rows (undefined). */
export const orTooLarge = (
  query: AggregationQuery,
  result: AggregationResult | undefined
): Exit.Exit<AggregationResult, QueryTooLarge> =>
  result === undefined ? Exit.fail(tooLarge(query, query.maxRows)) : Exit.succeed(result)

/**
 * Turns a result grouped by tag set (`tags` column) into one grouped by single tag (`tag`
 * column): a row counts once for each of its tags, rows without tags drop out, and equal
 * (time, key, identity, tag) rows are summed (their credits too, when summed).
 */
export const expandTags = (query: VerificationQuery, result: AggregationResult): AggregationResult => {
  const tags = result.tags
  if (tags === undefined) return result
  const size = result.size
  // Rows are told apart by (time, key, identity) as one dense number per row, combined a column
  // at a time; then each (prefix, tag) pair gets a row. No string is built per row.
  let prefixOf = new Uint32Array(size)
  let prefixes = 1
  const columns = [
    result.time && timeRanks(result.time, size),
    result.keyId && (givenRanks(result.ranks?.keyId, size) ?? rankColumn(result.keyId, size, compareStrings)),
    result.identity &&
    (givenRanks(result.ranks?.identity, size) ?? rankColumn(result.identity, size, compareIdentities))
  ]
  for (const column of columns) {
    if (column === undefined) continue
    const { count, ranks } = column
    const combined = new Map<number, number>()
    const next = new Uint32Array(size)
    for (let row = 0; row < size; row++) {
      const id = prefixOf[row]! * count + ranks[row]!
      let at = combined.get(id)
      if (at === undefined) combined.set(id, at = combined.size)
      next[row] = at
    }
    prefixOf = next
    prefixes = combined.size
  }
  const tagIndex = new Map<string, number>()
  const tagNames: Array<string> = []
  const codesOf = new Map<ReadonlyArray<string>, Array<number>>()
  for (let row = 0; row < size; row++) {
    const set = tags[row]!
    if (codesOf.has(set)) continue
    codesOf.set(
      set,
      set.map((tag) => {
        let code = tagIndex.get(tag)
        if (code === undefined) {
          tagIndex.set(tag, code = tagNames.length)
          tagNames.push(tag)
        }
        return code
      })
    )
  }
  const nTags = tagNames.length
  // A dense table of targets when it is small, else a map.
  const dense = prefixes * nTags <= 1 << 22 ? new Int32Array(prefixes * nTags).fill(-1) : undefined
  const targets = dense === undefined ? new Map<number, number>() : undefined
  let counts = new Float64Array(Math.max(1, size) * OUTCOMES)
  const credits = result.credits
  let sums = credits === undefined ? undefined : new Float64Array(counts.length)
  const source: Array<number> = []
  const tagOf: Array<number> = []
  for (let row = 0; row < size; row++) {
    for (const code of codesOf.get(tags[row]!)!) {
      const id = prefixOf[row]! * nTags + code
      let target = dense !== undefined ? dense[id]! : targets!.get(id) ?? -1
      if (target < 0) {
        target = source.length
        if (dense !== undefined) dense[id] = target
        else targets!.set(id, target)
        source.push(row)
        tagOf.push(code)
        if ((target + 1) * OUTCOMES > counts.length) {
          counts = grown(counts)
          if (sums !== undefined) sums = grown(sums)
        }
      }
      addCounters(counts, target * OUTCOMES, result.counts, row * OUTCOMES)
      if (sums !== undefined) addCounters(sums, target * OUTCOMES, credits!, row * OUTCOMES)
    }
  }
  const n = source.length
  return {
    size: n,
    counts: counts.subarray(0, n * OUTCOMES),
    ...(sums !== undefined ? { credits: sums.subarray(0, n * OUTCOMES) } : {}),
    time: query.timeUnit !== undefined ? Float64Array.from(source, (row) => result.time![row]!) : undefined,
    keyId: result.keyId ? source.map((row) => result.keyId![row]!) : undefined,
    identity: result.identity ? source.map((row) => result.identity![row]!) : undefined,
    tag: tagOf.map((code) => tagNames[code]!),
    tags: undefined
  }
}

/**
 * Adds the counters of row `at` of `from` to row `to` of `into` (offsets of their first counter).
 * Written out: V8 compiles a loop over the nine to twice the time, and whole answers are added up
 * this way (a 90-day hourly series: 2,160 rows).
 */
export const addCounters = (into: Float64Array, to: number, from: Float64Array, at: number): void => {
  into[to]! += from[at]!
  into[to + 1]! += from[at + 1]!
  into[to + 2]! += from[at + 2]!
  into[to + 3]! += from[at + 3]!
  into[to + 4]! += from[at + 4]!
  into[to + 5]! += from[at + 5]!
  into[to + 6]! += from[at + 6]!
  into[to + 7]! += from[at + 7]!
  into[to + 8]! += from[at + 8]!
}

/** A counter array (counts or credits) of twice the length, holding the same values first. */
export const grown = (array: Float64Array<ArrayBuffer>): Float64Array<ArrayBuffer> => {
  const copy = new Float64Array(array.length * 2)
  copy.set(array)
  return copy
}

/**
 * The counters of the last zero-filled series, reused by the next: {@link finalize} builds its
 * datapoints from them before it returns, so none outlives it. A fresh array cost as much again
 * as filling it (90 days of hours: 155 KB allocated outside V8's heap, whose first writes fault in
 * its pages, and which hastens collections).
 */
let seriesCounts = new Float64Array(0)

const zeroFill = (
  query: VerificationQuery,
  result: AggregationResult,
  cap: number
): Either.Either<AggregationResult, QueryTooLarge> => {
  const unit = query.timeUnit!
  let first: number
  if (query.start !== undefined) {
    first = Time.bucketStart(unit, query.start)
  } else {
    if (result.size === 0) return Either.right(result)
    let min = Infinity
    for (let i = 0; i < result.size; i++) min = Math.min(min, result.time![i]!)
    first = Time.bucketStart(unit, min)
  }
  const last = Time.bucketStart(unit, query.end)
  const size = Time.bucketCount(unit, first, last)
  if (size > Math.min(cap, MAX_SERIES_BUCKETS)) {
    return Either.left(
      size > cap ? tooLarge(query, cap) : new QueryTooLarge({
        message: `A time series holds at most ${MAX_SERIES_BUCKETS} buckets (about 416 days of hours, 27 years ` +
          `of days); this one would hold ${size}: narrow the window or use a coarser time unit`
      })
    )
  }
  const time = new Float64Array(size)
  for (let i = 0, t = first; i < size; i++, t = Time.nextBucket(unit, t)) time[i] = t
  if (seriesCounts.length < size * OUTCOMES) seriesCounts = new Float64Array(size * OUTCOMES)
  const counts = seriesCounts.subarray(0, size * OUTCOMES).fill(0)
  // Rows come from every store, in objects of several shapes: their columns are read once, not per row.
  const rows = result.size
  const times = result.time!
  const from = result.counts
  // Hours and days have one width; months are counted.
  const width = unit === "hour" ? Time.HOUR : unit === "day" ? Time.DAY : 0
  for (let row = 0; row < rows; row++) {
    const index = width > 0
      ? Math.round((times[row]! - first) / width)
      : Time.bucketCount("month", first, times[row]!) - 1
    if (index < 0 || index >= size) continue
    addCounters(counts, index * OUTCOMES, from, row * OUTCOMES)
  }
  return Either.right({ size, counts, time })
}

/**
 * Applies the shared answer rules to an adapter's rows: a single datapoint without any grouping,
 * zero fill for a plain time series, the cap, ordering (`orderBy` in `order`, ties by the default
 * ordering ascending; `order` alone reverses the default ordering), then `limit`.
 */
export const finalize = (
  query: VerificationQuery,
  result: AggregationResult,
  cap: number
): Either.Either<Array<Datapoint>, QueryTooLarge> => {
  const grouped = query.timeUnit !== undefined || query.groupByKey || query.groupByIdentity ||
    query.groupByTag !== undefined
  if (!grouped) {
    const total = new Float64Array(OUTCOMES)
    for (let row = 0; row < result.size; row++) {
      for (let o = 0; o < OUTCOMES; o++) total[o]! += result.counts[row * OUTCOMES + o]!
    }
    return Either.right(datapoints({ size: 1, counts: total }, [0]))
  }
  let rows = result
  // A zero-filled series is its buckets in time order: already in the default ordering.
  const inOrder = isZeroFilled(query)
  if (inOrder) {
    const filled = zeroFill(query, result, cap)
    if (Either.isLeft(filled)) return Either.left(filled.left)
    rows = filled.right
  } else if ((rows.groups ?? rows.size) > cap) {
    return Either.left(tooLarge(query, cap))
  }
  return Either.right(datapoints(rows, answerOrder(query, rows, inOrder)))
}

/**
 * The answer of `query` from an adapter's rows: tag sets split into single tags when the query
 * groups by tag and the adapter kept them whole, then {@link finalize}.
 */
export const answer = (
  query: VerificationQuery,
  result: AggregationResult,
  cap: number
): Either.Either<Array<Datapoint>, QueryTooLarge> =>
  finalize(query, query.groupByTag === "tag" && result.tags !== undefined ? expandTags(query, result) : result, cap)
