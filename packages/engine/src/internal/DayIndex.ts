/**
 * Per-day aggregates of one partition: a total per key, and nine counters per identity and per
 * single tag (per hour of the day too, while the partition has few tags). Sums over whole days
 * answer top-N and per-tag queries without reading rows; partial days at a window's edges are
 * scanned (or, by tag, read from the hourly counts). A day's aggregates are computed once when it
 * closes (the partition's first event of a later day); keeping them up to date per event cost more
 * than the rest of ingest, so a write to a day only marks it stale, and the next query that needs
 * a stale day recomputes it with one scan of its rows.
 */

import { OUTCOMES } from "@keymeter/core/Aggregation"
import type { Run, U32List } from "./Run.js"
import { CHUNK_BITS, CHUNK_MASK } from "./Run.js"

/** What a day's aggregates are computed from: a partition's dictionaries, flat tag lists and runs. */
export interface DaySource {
  readonly keyIds: { readonly length: number }
  readonly identities: { readonly length: number }
  readonly tagNames: { readonly length: number }
  /** A tag set's tags are `tagList[tagStart[set] .. tagStart[set + 1]]`. */
  readonly tagStart: U32List
  readonly tagList: U32List
  readonly main: Run
  lateRun(): Run
}

/** Largest dictionary a dense per-day array is kept for. */
export const LIMITS = { key: 65_536, identity: 16_384, tag: 4_096, hourTag: 64 } as const

/** One day's aggregates; an array is absent when its dictionary is over its limit. */
export interface Day {
  readonly keyTotals: Uint32Array | undefined
  readonly identityCounts: Uint32Array | undefined
  readonly tagCounts: Uint32Array | undefined
  /**
   * Nine counters per tag for each hour of the day, hour by hour (the day's tags when it was
   * computed: a tag first seen later has none here): a window's partial days and hour buckets by
   * tag read them. 16 bits each while the day's hours are small enough (13 KB a day with 30 tags).
   */
  readonly hourTagCounts: Uint16Array | Uint32Array | undefined
}

export class DayIndex {
  private readonly cache = new Map<number, Day>()
  private readonly stale = new Set<number>()
  private lastStale = -1

  /** Marks `day` as written. */
  touch(day: number): void {
    if (day !== this.lastStale) {
      this.stale.add(day)
      this.lastStale = day
    }
  }

  /** Aggregates of `day` of `source`, from its rows in both runs. */
  compute(source: DaySource, day: number): Day {
    const keyTotals = source.keyIds.length <= LIMITS.key ? new Uint32Array(source.keyIds.length) : undefined
    const identityCounts = source.identities.length <= LIMITS.identity
      ? new Uint32Array(source.identities.length * OUTCOMES)
      : undefined
    const tags = source.tagNames.length
    const tagCounts = tags <= LIMITS.tag ? new Uint32Array(tags * OUTCOMES) : undefined
    const hourTagCounts = tags <= LIMITS.hourTag ? this.hourScratch(24 * tags * OUTCOMES) : undefined
    let busiestHour = 0
    // The flat lists: a tag set's tags without a typed array of its own to reach (see `tagList`).
    const tagStart = source.tagStart.data
    const tagList = source.tagList.data
    for (const run of [source.main, source.lateRun()]) {
      for (let hour = 0; hour < 24; hour++) {
        const [a, b] = run.rows(day * 24 + hour, day * 24 + hour)
        busiestHour = Math.max(busiestHour, b - a)
        const hourAt = hour * tags * OUTCOMES
        for (let r = a; r < b; r++) {
          const chunk = run.chunks[r >>> CHUNK_BITS]!
          const i = r & CHUNK_MASK
          const outcome = chunk.outcome[i]!
          if (keyTotals !== undefined) keyTotals[chunk.key[i]!]!++
          const identity = chunk.identity[i]!
          if (identity !== 0 && identityCounts !== undefined) identityCounts[identity * OUTCOMES + outcome]!++
          const tagset = chunk.tagset[i]!
          if (tagset !== 0 && tagCounts !== undefined) {
            for (let t = tagStart[tagset]!, end = tagStart[tagset + 1]!; t < end; t++) {
              const at = tagList[t]! * OUTCOMES + outcome
              tagCounts[at]!++
              if (hourTagCounts !== undefined) hourTagCounts[hourAt + at]!++
            }
          }
        }
      }
    }
    // No counter of an hour exceeds its rows: 16 bits hold them when each run holds fewer than
    // 32,768 rows in every hour (both together then fewer than 65,536).
    return {
      keyTotals,
      identityCounts,
      tagCounts,
      hourTagCounts: hourTagCounts === undefined
        ? undefined
        : busiestHour < 32_768
        ? new Uint16Array(hourTagCounts)
        : hourTagCounts.slice()
    }
  }

  /** Counters a day's hours are counted into, then copied at their width (kept between days). */
  private hourCounts = new Uint32Array(0)

  /** The first `length` of {@link hourCounts}, zeroed. */
  private hourScratch(length: number): Uint32Array {
    if (this.hourCounts.length < length) this.hourCounts = new Uint32Array(length)
    else this.hourCounts.fill(0, 0, length)
    return this.hourCounts.subarray(0, length)
  }

  /** The aggregates of days [from, to], computed (with `compute`) where missing or stale. */
  between(from: number, to: number, compute: (day: number) => Day): Array<Day> {
    const out: Array<Day> = []
    for (let day = from; day <= to; day++) {
      let aggregates = this.cache.get(day)
      if (aggregates === undefined || this.stale.has(day)) {
        aggregates = compute(day)
        this.cache.set(day, aggregates)
        this.stale.delete(day)
        // The next write to this day must mark it again.
        if (this.lastStale === day) this.lastStale = -1
      }
      out.push(aggregates)
    }
    return out
  }

  /** The aggregates of `day` when they are computed and it was not written since; else undefined. */
  fresh(day: number): Day | undefined {
    return this.stale.has(day) ? undefined : this.cache.get(day)
  }

  /** Bytes held by the cached arrays. */
  get bytes(): number {
    let bytes = 0
    for (const day of this.cache.values()) {
      bytes += (day.keyTotals?.byteLength ?? 0) + (day.identityCounts?.byteLength ?? 0) +
        (day.tagCounts?.byteLength ?? 0) + (day.hourTagCounts?.byteLength ?? 0)
    }
    return bytes
  }
}
