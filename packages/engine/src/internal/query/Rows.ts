/**
 * The answer's rows as dictionary codes, turned into strings once at the end.
 */
import type { AggregationQuery, AggregationResult, ColumnRanks } from "@keymeter/core/Aggregation"
import { grown, OUTCOMES } from "@keymeter/core/Aggregation"
import type { Ranks } from "../DictionaryOrder.js"
import type { Partition } from "../Partition.js"
import { U32List } from "../Run.js"
import { BestValues } from "./BestValues.js"
import { copyCounters, counterValue } from "./Compile.js"
import { Spare } from "./Spare.js"

/** Counters of no row: the first row's push takes the spare (below). */
const NO_COUNTS = new Float64Array(0)

/** Counters with room for more rows: twice as many, at least eight rows' worth. */
const roomFor = (counts: Float64Array<ArrayBuffer>): Float64Array<ArrayBuffer> =>
  counts.length === 0 ? new Float64Array(8 * OUTCOMES) : grown(counts)

/**
 * Counter memory kept for the next answer's rows: rows count into it (growing it when they outgrow
 * it) and `build` copies their counters out at their exact size. Doubling a fresh array each answer
 * allocated two to three times that outside V8's heap (98 MB over the 10M mix's 300 first sights),
 * and V8 collects after each 64 MB of such memory. At most 2^21 counters (16 MiB, 233,016 rows).
 */
const spare = new Spare<Float64Array<ArrayBuffer>>((counts) => counts.length, 1 << 21)

/** Thrown inside a scan when the answer outgrows `maxRows`; caught by the engine. */
export class TooManyRows {}

/**
 * The rows of an answer. Tag grouping is
 * answered per tag (`tag`) when the engine expanded the tag sets, else per tag set (`tags`), which
 * core splits into single tags.
 */
export class Rows {
  /** Rows kept. */
  size = 0
  /** Rows pushed, kept or not (see {@link keepTop}). */
  offered = 0
  /** How many groups the complete answer holds, when it is not every row kept. */
  groups: number | undefined
  /** With {@link keepTop}: the best values pushed so far, and each row's value. */
  private top:
    | { readonly best: BestValues; readonly value: (counts: ArrayLike<number>, at: number) => number }
    | undefined
  // The columns start small: typed arrays of at most 64 bytes live on V8's heap, larger ones cost an
  // allocation outside it (~1 us each, half of a small query's time in the engine).
  /** Each row's bucket start, when the query has a time unit (typed: no array for the collector to copy). */
  private time = new Float64Array(8)
  private readonly key = new U32List(8)
  private readonly identity = new U32List(8)
  /** Tag set codes, or tag codes when `perTag`. */
  private readonly tag = new U32List(8)
  private counts = NO_COUNTS
  /** Spent credits beside each counter, when the query sums them. */
  private credits: Float64Array<ArrayBuffer> | undefined

  constructor(private readonly maxRows: number, readonly perTag = false, sumsCredits = false) {
    if (sumsCredits) this.credits = NO_COUNTS
  }

  /**
   * Keeps only the rows that can make the first `limit` by `orderBy` in `order` (see `BestValues`),
   * of rows that are the answer's own (not tag sets that core will split into tags): an answer of
   * many rows then builds few. `groups` counts every row pushed.
   */
  keepTop(orderBy: string, limit: number, order: "asc" | "desc"): void {
    this.top = { best: new BestValues(limit, order), value: counterValue(orderBy) }
  }

  /**
   * A row of the counters at `source[at ..]`, and of the credits at `credits[at ..]` when summed
   * (unless {@link keepTop} leaves it out).
   */
  push(
    time: number | undefined,
    key: number,
    identity: number,
    tag: number,
    source: ArrayLike<number>,
    at: number,
    credits?: ArrayLike<number> | null
  ) {
    if (this.offered >= this.maxRows) this.refuse()
    this.offered++
    if (this.top !== undefined && !this.top.best.offer(this.top.value(source, at))) return
    const row = this.size
    this.size++
    if (time !== undefined) {
      if (row >= this.time.length) this.time = grown(this.time)
      this.time[row] = time
    }
    this.key.push(key)
    this.identity.push(identity)
    this.tag.push(tag)
    if ((row + 1) * OUTCOMES > this.counts.length) {
      this.counts = row === 0
        ? spare.take() ?? roomFor(NO_COUNTS)
        : roomFor(this.counts)
    }
    copyCounters(this.counts, row * OUTCOMES, source, at)
    if (this.credits !== undefined) {
      // Grown on its own: the counters may have started in a larger spare.
      if ((row + 1) * OUTCOMES > this.credits.length) this.credits = roomFor(this.credits)
      copyCounters(this.credits, row * OUTCOMES, credits!, at)
    }
  }

  /** Stops this answer as too large ({@link TooManyRows}), handing its counters on as the spare. */
  refuse(): never {
    spare.keep(this.counts)
    this.counts = NO_COUNTS
    throw new TooManyRows()
  }

  build(query: AggregationQuery, partition: Partition | undefined): AggregationResult {
    const n = this.size
    const counts = this.counts.slice(0, n * OUTCOMES)
    spare.keep(this.counts)
    this.counts = NO_COUNTS
    const codes = (list: U32List) => list.data.subarray(0, n)
    const tagged = query.groupByTag !== undefined
    // The rows' ranks in their dictionaries, for the default ordering (not for a row or two).
    const ranked = partition !== undefined && n > 2
    const ranksOf = (list: U32List, order: { current(): Ranks }): ColumnRanks => {
      const { count, rank } = order.current()
      const ranks = new Uint32Array(n)
      const data = list.data
      for (let i = 0; i < n; i++) ranks[i] = rank[data[i]!]!
      return { ranks, count }
    }
    // One literal with every field (undefined when absent): results of one shape whatever the
    // query, so that core's reads of them stay monomorphic; spreads made up to eight.
    return {
      size: n,
      groups: this.groups !== undefined ? this.groups : this.top !== undefined ? this.offered : undefined,
      counts,
      credits: this.credits !== undefined ? this.credits.subarray(0, n * OUTCOMES) : undefined,
      time: query.timeUnit !== undefined ? this.time.slice(0, n) : undefined,
      keyId: query.groupByKey ? valuesOf(codes(this.key), partition?.keyIds) : undefined,
      identity: query.groupByIdentity ? valuesOf(codes(this.identity), partition?.identities) : undefined,
      tag: tagged && this.perTag ? valuesOf(codes(this.tag), partition?.tagNames) : undefined,
      tags: tagged && !this.perTag ? valuesOf(codes(this.tag), partition?.tagsets) : undefined,
      ranks: ranked
        ? {
          keyId: query.groupByKey ? ranksOf(this.key, partition.keyOrder) : undefined,
          identity: query.groupByIdentity ? ranksOf(this.identity, partition.identityOrder) : undefined,
          tag: tagged && this.perTag ? ranksOf(this.tag, partition.tagOrder) : undefined,
          tags: tagged && !this.perTag ? ranksOf(this.tag, partition.tagsetOrder) : undefined
        }
        : undefined
    }
  }
}

/**
 * The values of codes (none without a partition: then there are no codes), by a loop: `Array.from`
 * of a typed array goes through its iterator, an object per row for the collector (a heavy
 * query's parts hold hundreds of thousands of rows).
 */
const valuesOf = <A>(codes: Uint32Array, values: ReadonlyArray<A | undefined> | undefined): Array<A> => {
  const out = new Array<A>(codes.length)
  for (let i = 0; i < codes.length; i++) out[i] = values![codes[i]!]!
  return out
}

export const empty = (query: AggregationQuery): AggregationResult =>
  new Rows(0, false, query.sumCredits === true).build(query, undefined)
