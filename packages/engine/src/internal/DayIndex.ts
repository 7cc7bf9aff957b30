/**
 * Per-day aggregates of one partition: a total per key, and nine counters per identity and per
 * single tag (per hour of the day too, while the partition has few tags). Sums over whole days answer top-N and per-tag queries without reading rows; partial
 * days at a window's edges are scanned. A day's aggregates are computed once when it closes (the
 * partition's first event of a later day); keeping them up to date per event cost more than the
 * rest of ingest, so a write to a day only marks it stale, and the next query that needs a stale
 * day recomputes it with one scan of its rows.
 */

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
   * tag read them. 26 KB a day with 30 tags.
   */
  readonly hourTagCounts: Uint32Array | undefined
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
