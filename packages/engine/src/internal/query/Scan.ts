/**
 * The general path: each bucket's row slice (or the filtered keys' entries) scanned into a group
 * table (dense by code, or a map for composite groups), harvested per bucket.
 */
import type { AggregationResult } from "@keymeter/core/Aggregation"
import { OUTCOMES } from "@keymeter/core/Aggregation"
import type { Partition } from "../Partition.js"
import { U32List } from "../Run.js"
import type { PostingScan, RangeScan, Scratch, Shape, Tracking } from "./Compile.js"
import { any, clearCounters, compile, DENSE_GROUPS_MAX, makeScratch, TOP_N_MAX } from "./Compile.js"
import { GroupTable } from "./GroupTable.js"
import { gather, keyRowsEstimate } from "./KeyRows.js"
import type { QueryContext } from "./QueryContext.js"
import { Rows } from "./Rows.js"
import { Spare } from "./Spare.js"

/** Composite groups up to this many use dense counters (36 bytes each). */
const DENSE_COMPOSITE_MAX = 1 << 18

/**
 * Dense counters kept for the next scan, all zero: each harvest zeroes the counters it reads, so a
 * scan that completes leaves its counters as it found them and hands them on (one that throws drops
 * them). A fresh array each scan allocated 41 MB outside V8's heap over the 10M mix's 300 first
 * sights, each zero-filled by the system page by page. At most 2^21 counters (8 MiB).
 */
const spareCounters = new Spare<Uint32Array>((counters) => counters.length, 1 << 21)

/** The composite groups' hash table kept for the next scan that needs one (see `GroupTable.reset`), up to 2^17 groups. */
const spareTable = new Spare<GroupTable>((table) => table.capacity, 1 << 17)

/**
 * The marks and list of tracked groups (`Scratch.seen`, `touched`) kept for the next scan that
 * tracks, with the epoch its marks stay below: the next scan counts on from there, so its marks
 * need no zeroing. Two fresh arrays of a group each cost ~3 us of a small query's ~170 (80 KB for
 * 10,000 keys, zeroed outside V8's heap). At most 2^20 groups.
 */
const spareTracking = new Spare<Tracking>((tracking) => tracking.seen.length, 1 << 20)

/** Epochs stay well below 2^32, as `seen` holds them in u32. */
const EPOCH_MAX = 2 ** 31

/** Tracking of `groups` groups: the spare's when it is large enough, its marks zeroed once its epochs run out. */
const trackingFor = (groups: number): Tracking => {
  const kept = spareTracking.take((tracking) => tracking.seen.length >= groups)
  if (kept === undefined) return { seen: new Uint32Array(groups), touched: new Uint32Array(groups), epoch: 1 }
  if (kept.epoch < EPOCH_MAX) return kept
  kept.seen.fill(0)
  return { ...kept, epoch: 1 }
}

/** Zeroed counters of `length`: the spare's first `length` when it is large enough. */
const zeroedCounters = (length: number): Uint32Array => {
  const spare = spareCounters.take((counters) => counters.length >= length)
  if (spare === undefined) return new Uint32Array(length)
  return spare.length === length ? spare : spare.subarray(0, length)
}

/*
 * The harvests, one function per kind of group table: in one function of many branches, the
 * first query of a new kind made V8 drop its code (insufficient type feedback), and every group's
 * row was then built by the interpreter until it was optimized again.
 */

/**
 * Composite groups in the hash table: a row each, then the table emptied. With `keyIdentity`, the
 * groups were counted by key and each one's identity is its key's (see {@link scan}).
 */
const harvestTable = (
  rows: Rows,
  time: number | undefined,
  table: GroupTable,
  keyIdentity: Partition | undefined
): void => {
  for (let slot = 0; slot < table.size; slot++) {
    const at = slot * 3
    const key = table.codes[at]!
    rows.push(
      time,
      key,
      keyIdentity !== undefined ? keyIdentity.identityOfKey(key) : table.codes[at + 1]!,
      table.codes[at + 2]!,
      table.counts,
      slot * OUTCOMES,
      table.credits
    )
  }
  table.clear()
}

/**
 * Dense composite groups: those with counts (the touched ones when `track`), each decoded from its
 * number, then zeroed. With `keyIdentity`, each one's identity is its key's.
 */
const harvestDense = (
  rows: Rows,
  time: number | undefined,
  scratch: Scratch,
  groups: number,
  track: boolean,
  byKey: boolean,
  byIdentity: boolean,
  keyIdentity: Partition | undefined
): void => {
  const { acc, credits, identityStride, keyStride, touched } = scratch
  const count = track ? scratch.nt : groups
  for (let n = 0; n < count; n++) {
    const g = track ? touched[n]! : n
    const at = g * OUTCOMES
    if (!track && !any(acc, at)) continue
    const key = Math.floor(g / keyStride)
    const rest = g - key * keyStride
    const identity = Math.floor(rest / identityStride)
    rows.push(
      time,
      byKey ? key : 0,
      keyIdentity !== undefined ? keyIdentity.identityOfKey(key) : byIdentity ? identity : 0,
      rest - identity * identityStride,
      acc,
      at,
      credits
    )
    clearCounters(acc, at)
    if (credits !== null) clearCounters(credits, at)
  }
  if (track) {
    scratch.nt = 0
    scratch.epoch++
  }
}

/**
 * Groups of one dimension (or one group): each with counts becomes a row and is zeroed; tag sets
 * are split into their tags first when `tagAcc` is given (by tag). With `keyIdentity`, the groups
 * are keys and each one's identity is its key's.
 */
const harvestGroups = (
  rows: Rows,
  time: number | undefined,
  scratch: Scratch,
  group: Shape["group"],
  groups: number,
  track: boolean,
  tagsetTags: ReadonlyArray<Uint32Array>,
  tagAcc: Float64Array | undefined,
  tagCredits: Float64Array | undefined,
  keyIdentity: Partition | undefined
): void => {
  const { acc, credits } = scratch
  const count = track ? scratch.nt : groups
  for (let n = 0; n < count; n++) {
    const g = track ? scratch.touched[n]! : n
    const at = g * OUTCOMES
    if (!any(acc, at)) continue
    if (tagAcc !== undefined) {
      const tags = tagsetTags[g]!
      for (let t = 0; t < tags.length; t++) {
        const to = tags[t]! * OUTCOMES
        for (let o = 0; o < OUTCOMES; o++) tagAcc[to + o]! += acc[at + o]!
        if (tagCredits !== undefined) { for (let o = 0; o < OUTCOMES; o++) tagCredits[to + o]! += credits![at + o]! }
      }
    } else {
      rows.push(
        time,
        group === "key" ? g : 0,
        group === "identity" ? g : keyIdentity !== undefined ? keyIdentity.identityOfKey(g) : 0,
        group === "tagset" ? g : 0,
        acc,
        at,
        credits
      )
    }
    clearCounters(acc, at)
    if (credits !== null) clearCounters(credits, at)
  }
  if (track) {
    scratch.nt = 0
    scratch.epoch++
  }
  if (tagAcc !== undefined) {
    for (let tag = 0; tag * OUTCOMES < tagAcc.length; tag++) {
      const at = tag * OUTCOMES
      if (any(tagAcc, at)) rows.push(time, 0, 0, tag, tagAcc, at, tagCredits)
    }
    tagAcc.fill(0)
    tagCredits?.fill(0)
  }
}

/** The general path: each bucket's row slice (or the filtered keys' postings) into a group table. */
export const scan = (context: QueryContext): AggregationResult => {
  const { dims, identityMask, keyCodes, keyMask, late, partition, plan, query, runs, tagsetMask } = context
  const main = partition.main
  const cardinality = {
    key: partition.keyIds.length,
    identity: partition.identities.length,
    tagset: partition.tagsets.length
  }
  // By key and identity where every key's events carried one identity: the key names the group, so
  // rows are counted by key (far fewer possible groups: dense counters rather than a hash table)
  // and each group's identity is its key's. Rows without an identity are still left out.
  const keyIdentity = query.groupByKey && query.groupByIdentity && partition.identitiesFollowKeys
    ? partition
    : undefined
  const counted = keyIdentity !== undefined ? dims.filter((dim) => dim !== "identity") : dims
  // By tag per hour, an hour's rows are few beside its tag sets: each row counts into its tags in
  // the loop (as composite groups by tag do) rather than its tag set being split at each harvest.
  const hourlyTags = counted.length === 1 && counted[0] === "tagset" && query.groupByTag === "tag" &&
    query.timeUnit === "hour"
  const group: Shape["group"] = counted.length === 0
    ? "none"
    : counted.length === 1 && cardinality[counted[0]!] <= DENSE_GROUPS_MAX && !hourlyTags
    ? counted[0]!
    : "map"
  // Composite groups, by tag (each tag set's tags in the loop) or by tag set: dense counters
  // when the product of the cardinalities is small enough, else a hash table.
  const perTagMap = group === "map" && query.groupByTag === "tag"
  const tagCount = perTagMap ? partition.tagNames.length : cardinality.tagset
  const extent = {
    key: query.groupByKey ? cardinality.key : 1,
    identity: query.groupByIdentity && keyIdentity === undefined ? cardinality.identity : 1,
    tagset: query.groupByTag !== undefined ? tagCount : 1
  }
  const denseMap = group === "map" && extent.key * extent.identity * extent.tagset <= DENSE_COMPOSITE_MAX
  const groups = group === "none"
    ? 1
    : group === "map"
    ? denseMap ? extent.key * extent.identity * extent.tagset : 0
    : cardinality[group]
  // Key indexes pay when the filtered keys hold well under the window's rows. Their entries are
  // gathered as `row * 16 + outcome`, so rows must stay below 2^28.
  let usePostings = false
  let scanned = 0
  for (const run of runs) {
    const [a, b] = run.rows(context.lo, context.hi)
    scanned += b - a
  }
  if (keyMask !== null && main.length < 2 ** 28) {
    const [a, b] = main.rows(context.lo, context.hi)
    const estimate = keyRowsEstimate(main, keyCodes, a, b)
    usePostings = estimate * 4 < b - a
    if (usePostings) scanned += estimate - (b - a)
  }
  // Groups are tracked (each marked when first counted, and only those harvested) across buckets,
  // and in one bucket when they outnumber half the rows read: untracked, a harvest visits every group,
  // 10,000 keys for the few rows of a key filter or of a short window. Dense composite groups
  // likewise: one bucket of many rows is harvested by visiting its groups, not marked row by row.
  const track = group !== "none" && (group !== "map" || denseMap) && (plan.length > 1 || scanned < 2 * groups)
  // Tag sets grouped alone are split into single tags in the harvest, on integer codes.
  const perTag = group === "tagset" && query.groupByTag === "tag"
  const sumsCredits = query.sumCredits === true
  const rows = new Rows(query.maxRows, perTag || perTagMap, sumsCredits)
  // A top N of groups (a plain series is zero-filled by core: all its rows count) keeps the rows
  // that can make it as they come: tens of thousands of (bucket, group) rows build a few hundred.
  const { limit, order, orderBy } = query
  if (dims.length > 0 && orderBy !== undefined && orderBy !== "time" && limit !== undefined && limit <= TOP_N_MAX) {
    rows.keepTop(orderBy, limit, order)
  }
  const tagAcc = perTag ? new Float64Array(partition.tagNames.length * OUTCOMES) : undefined
  const tagCredits = perTag && sumsCredits ? new Float64Array(partition.tagNames.length * OUTCOMES) : undefined
  const scratch = makeScratch(
    zeroedCounters(Math.max(1, groups) * OUTCOMES),
    { keyMask, tagsetMask, identityMask },
    track ? trackingFor(groups) : undefined,
    sumsCredits && (group !== "map" || denseMap) ? new Float64Array(Math.max(1, groups) * OUTCOMES) : null
  )
  if (group === "map") {
    if (denseMap) {
      scratch.identityStride = extent.tagset
      scratch.keyStride = extent.identity * extent.tagset
    } else {
      const tableCardinality = { ...cardinality, tagset: tagCount }
      const onNew = (size: number) => {
        if (rows.offered + size >= query.maxRows) rows.refuse()
      }
      scratch.table = spareTable.take()?.reset(tableCardinality, onNew, sumsCredits) ??
        new GroupTable(tableCardinality, onNew, sumsCredits)
    }
    if (perTagMap) {
      scratch.tagStart = partition.tagStart.data
      scratch.tagList = partition.tagList.data
    }
  }

  const base = {
    keyFilter: keyMask !== null,
    tagFilter: tagsetMask !== null,
    identityFilter: identityMask !== null,
    requireIdentity: query.groupByIdentity,
    group,
    ...(group === "map" ? { mapped: { dims: counted, dense: denseMap, perTag: perTagMap } } : {}),
    track,
    counting: "outcomes",
    credits: sumsCredits
  } as const
  const scanRange = compile({ ...base, source: "range" }) as RangeScan
  const scanPostings = compile({ ...base, source: "postings" }) as PostingScan

  const buffer = new U32List(1024)

  const harvest = (time: number | undefined) =>
    group !== "map"
      ? harvestGroups(rows, time, scratch, group, groups, track, partition.tagsetTags, tagAcc, tagCredits, keyIdentity)
      : denseMap
      ? harvestDense(rows, time, scratch, groups, track, query.groupByKey, query.groupByIdentity, keyIdentity)
      : harvestTable(rows, time, scratch.table!, keyIdentity)

  for (const bucket of plan) {
    if (usePostings) {
      const [a, b] = main.rows(bucket.fromHour, bucket.toHour)
      buffer.length = 0
      gather(main, keyCodes, a, b, buffer, (from, to) => scanRange(main.chunks, from, to, null, scratch))
      scanPostings(main.chunks, 0, buffer.length, buffer.data, scratch)
      if (late.length > 0) {
        const [la, lb] = late.rows(bucket.fromHour, bucket.toHour)
        scanRange(late.chunks, la, lb, null, scratch)
      }
    } else {
      for (const run of runs) {
        const [a, b] = run.rows(bucket.fromHour, bucket.toHour)
        scanRange(run.chunks, a, b, null, scratch)
      }
    }
    harvest(bucket.time)
  }
  // The whole array under the counters, of which a scan may have used the first part.
  const acc = scratch.acc
  spareCounters.keep(acc.length === acc.buffer.byteLength >>> 2 ? acc : new Uint32Array(acc.buffer))
  if (scratch.table !== null) spareTable.keep(scratch.table)
  if (track) spareTracking.keep({ seen: scratch.seen, touched: scratch.touched, epoch: scratch.epoch })
  return rows.build(query, partition)
}
