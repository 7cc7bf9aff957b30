/**
 * Answers an aggregation query over one partition. Filters become masks over the dictionaries
 * (an external id becomes its keys when every key's events carried one identity), the window
 * becomes time buckets (one without a time unit), and then the cheapest path answers:
 *
 * - unfiltered, ungrouped series: the per-hour counters of the hour index, no row is read;
 * - key-filtered series: the keys' entries in the full chunks' key indexes (row and outcome), no
 *   column is read; only the last, unfilled chunk is scanned;
 * - whole days of top-N and per-tag queries, and of top keys (and their identities) by total per
 *   day or month: the day aggregates (see `DayIndex`); per tag, also the hours of days not written
 *   since they were computed (hour buckets included);
 * - `orderBy` + small `limit` over one dimension without a time unit (top N): counters for all
 *   groups, then rows only for the groups that can make the top N (for keys, a totals-only pass
 *   picks them and their counters come from the key indexes);
 * - everything else, and every query that sums credits: a scan of each bucket's row slice into a
 *   group table, harvested per bucket.

 * Each path is a module of this folder; `Compile` generates their scan loops.
 */
import type { AggregationQuery, AggregationResult } from "@keymeter/core/Aggregation"
import * as Time from "@keymeter/core/Time"
import type { Partition } from "../Partition.js"
import type { Dim } from "./Compile.js"
import { fromDayIndex } from "./DayAggregates.js"
import type { QueryContext } from "./QueryContext.js"
import { bucketsOf } from "./QueryContext.js"
import { empty } from "./Rows.js"
import { scan } from "./Scan.js"
import { postingSeries, totalsSeries } from "./Series.js"
import { topN } from "./TopN.js"

/** Answers `query` from `partition` (undefined: the api holds no verifications). */
export const aggregate = (partition: Partition | undefined, query: AggregationQuery): AggregationResult => {
  if (partition === undefined || partition.size === 0) return empty(query)
  const late = partition.lateRun()
  const main = partition.main

  // Filters as masks over the dictionaries. A filter naming nothing stored matches nothing.
  let keyMask: Uint8Array | null = null
  const keyCodes: Array<number> = []
  if (query.keyIds.length > 0) {
    keyMask = new Uint8Array(partition.keyIds.length)
    for (const keyId of query.keyIds) {
      const code = partition.keyCodes.get(keyId)
      if (code !== undefined && keyMask[code] === 0) {
        keyMask[code] = 1
        keyCodes.push(code)
      }
    }
    if (keyCodes.length === 0) return empty(query)
  }
  let tagsetMask: Uint8Array | null = null
  if (query.tags.length > 0) {
    const wanted: Array<number> = []
    for (const tag of query.tags) {
      const code = partition.tagCodes.get(tag)
      if (code === undefined) return empty(query)
      wanted.push(code)
    }
    tagsetMask = tagsetsWith(partition, wanted)
    if (tagsetMask === null) return empty(query)
  }
  let identityMask: Uint8Array | null = null
  if (query.externalId !== undefined) {
    const identities = partition.identitiesOfExternalId.get(query.externalId)
    if (identities === undefined) return empty(query)
    identityMask = new Uint8Array(partition.identities.length)
    for (const identity of identities) identityMask[identity] = 1
    // When every key's events carried one identity, an external id names keys, not rows: the
    // filter becomes those keys (their key indexes then serve it), and no row's identity is read.
    const named = keysOf(partition, identityMask)
    if (named !== undefined) {
      const kept = keyMask === null ? named : named.filter((key) => keyMask![key] === 1)
      if (kept.length === 0) return empty(query)
      keyMask = new Uint8Array(partition.keyIds.length)
      for (const key of kept) keyMask[key] = 1
      keyCodes.length = 0
      for (const key of kept) keyCodes.push(key)
      identityMask = null
    }
  }

  // The window, clamped to the hours that hold data.
  const firstHour = late.length > 0
    ? Math.min(main.length > 0 ? main.firstHour : Infinity, late.firstHour)
    : main.firstHour
  const lastHour = Math.max(main.lastHour, late.lastHour)
  const lo = Math.max(query.start === undefined ? firstHour : query.start / Time.HOUR, firstHour)
  const hi = Math.min(query.end / Time.HOUR, lastHour)
  if (lo > hi) return empty(query)

  const dims: Array<Dim> = []
  if (query.groupByKey) dims.push("key")
  if (query.groupByIdentity) dims.push("identity")
  if (query.groupByTag !== undefined) dims.push("tagset")

  const context: QueryContext = {
    query,
    partition,
    runs: late.length > 0 ? [main, late] : [main],
    late,
    plan: bucketsOf(query, lo, hi),
    lo,
    hi,
    keyMask,
    keyCodes,
    tagsetMask,
    identityMask,
    dims
  }
  // Credits are summed by the general path only: the others count from counters kept without them.
  if (query.sumCredits === true) {
    if (!partition.layout.details) throw new Error("Engine.aggregate: this engine keeps no credits")
    return scan(context)
  }
  if (dims.length === 0 && !keyMask && !tagsetMask && !identityMask) return totalsSeries(context)
  if (dims.length === 0 && keyMask && !tagsetMask && !identityMask) return postingSeries(context)
  const daily = fromDayIndex(context)
  if (daily !== undefined) return daily
  const top = topN(context)
  if (top !== undefined) return top
  return scan(context)
}

/**
 * The mask of the tag sets holding every tag of `wanted` (null: none does), from the tag sets of
 * its rarest tag. Visiting every tag set instead (a small typed array each) took 0.1-0.8 ms a query
 * over 4,300 tag sets.
 */
const tagsetsWith = (partition: Partition, wanted: ReadonlyArray<number>): Uint8Array | null => {
  let rarest = partition.tagsetsOfTag[wanted[0]!]!
  for (const tag of wanted) {
    const list = partition.tagsetsOfTag[tag]!
    if (list.length < rarest.length) rarest = list
  }
  const mask = new Uint8Array(partition.tagsets.length)
  let any = false
  for (let i = 0; i < rarest.length; i++) {
    const t = rarest.data[i]!
    // One tag (the usual filter): its tag sets are the answer, none is read.
    let all = true
    if (wanted.length > 1) {
      const codes = partition.tagsetTags[t]!
      for (let w = 0; w < wanted.length && all; w++) all = codes.includes(wanted[w]!)
    }
    if (all) {
      mask[t] = 1
      any = true
    }
  }
  return any ? mask : null
}

/** The keys whose one identity is in `identityMask`; undefined when some key's events carried more than one. */
const keysOf = (partition: Partition, identityMask: Uint8Array): Array<number> | undefined => {
  if (!partition.identitiesFollowKeys) return undefined
  const keys: Array<number> = []
  for (let key = 0; key < partition.keyIds.length; key++) {
    const identity = partition.identityOfKey(key)
    if (identity !== 0 && identityMask[identity] === 1) keys.push(key)
  }
  return keys
}
