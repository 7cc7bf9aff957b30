/**
 * The general path: each bucket's row slice (or the filtered keys' entries) scanned into a group
 * table (dense by code, or a map for composite groups), harvested per bucket.
 */
import type { AggregationResult } from "@keymeter/core/Aggregation"
import { OUTCOMES } from "@keymeter/core/Aggregation"
import { U32List } from "../Run.js"
import type { PostingScan, RangeScan, Shape } from "./Compile.js"
import { any, compile, DENSE_GROUPS_MAX, makeScratch } from "./Compile.js"
import { gather, keyRowsEstimate } from "./KeyRows.js"
import type { QueryContext } from "./QueryContext.js"
import { Rows, TooManyRows } from "./Rows.js"

/** The general path: each bucket's row slice (or the filtered keys' postings) into a group table. */
export const scan = (context: QueryContext): AggregationResult => {
  const { dims, identityMask, keyCodes, keyMask, late, partition, plan, query, runs, tagsetMask } = context
  const main = partition.main
  const cardinality = {
    key: partition.keyIds.length,
    identity: partition.identities.length,
    tagset: partition.tagsets.length
  }
  const group: Shape["group"] = dims.length === 0
    ? "none"
    : dims.length === 1 && cardinality[dims[0]!] <= DENSE_GROUPS_MAX
    ? dims[0]!
    : "map"
  const groups = group === "none" ? 1 : group === "map" ? 0 : cardinality[group]
  const track = plan.length > 1 && group !== "none" && group !== "map"
  // Tag sets grouped alone are split into single tags here, on integer codes.
  const perTag = group === "tagset" && query.groupByTag === "tag"
  const rows = new Rows(query.maxRows, perTag)
  const tagAcc = perTag ? new Float64Array(partition.tagNames.length * OUTCOMES) : undefined
  const scratch = makeScratch(
    new Uint32Array(Math.max(1, groups) * OUTCOMES),
    { keyMask, tagsetMask, identityMask },
    track ? groups : 0
  )

  // Composite groups: a map from the combined codes to a slot with nine counters.
  let slots: Map<number | string, number> | undefined
  let slotCodes: Array<number> = []
  let slotCounts = new Float64Array(0)
  if (group === "map") {
    slots = new Map()
    slotCounts = new Float64Array(64 * OUTCOMES)
    const nI = cardinality.identity
    const nT = cardinality.tagset
    const numeric = cardinality.key * nI * nT < Number.MAX_SAFE_INTEGER
    const useKey = query.groupByKey
    const useIdentity = query.groupByIdentity
    const useTagset = query.groupByTag !== undefined
    const map = slots
    scratch.add = (key, identity, tagset, outcome) => {
      const k = useKey ? key : 0
      const i = useIdentity ? identity : 0
      const t = useTagset ? tagset : 0
      const id = numeric ? (k * nI + i) * nT + t : `${k},${i},${t}`
      let slot = map.get(id)
      if (slot === undefined) {
        slot = map.size
        if (rows.size + slot >= query.maxRows) throw new TooManyRows()
        map.set(id, slot)
        slotCodes.push(k, i, t)
        if ((slot + 1) * OUTCOMES > slotCounts.length) {
          const grown = new Float64Array(slotCounts.length * 2)
          grown.set(slotCounts)
          slotCounts = grown
        }
      }
      slotCounts[slot * OUTCOMES + outcome]!++
    }
  }

  const base = {
    keyFilter: keyMask !== null,
    tagFilter: tagsetMask !== null,
    identityFilter: identityMask !== null,
    requireIdentity: query.groupByIdentity,
    group,
    track,
    counting: "outcomes"
  } as const
  const scanRange = compile({ ...base, source: "range" }) as RangeScan
  const scanPostings = compile({ ...base, source: "postings" }) as PostingScan

  // Key indexes pay when the filtered keys hold well under the window's rows. Their entries are
  // gathered as `row * 16 + outcome`, so rows must stay below 2^28.
  let usePostings = false
  if (keyMask !== null && main.length < 2 ** 28) {
    const [a, b] = main.rows(context.lo, context.hi)
    usePostings = keyRowsEstimate(main, keyCodes, a, b) * 4 < b - a
  }
  const buffer = new U32List(1024)

  const harvest = (time: number | undefined) => {
    const acc = scratch.acc
    if (group === "map") {
      for (let slot = 0; slot < slots!.size; slot++) {
        rows.push(
          time,
          slotCodes[slot * 3]!,
          slotCodes[slot * 3 + 1]!,
          slotCodes[slot * 3 + 2]!,
          slotCounts,
          slot * OUTCOMES
        )
      }
      slots!.clear()
      slotCodes = []
      slotCounts.fill(0)
      return
    }
    const emit = (g: number) => {
      const at = g * OUTCOMES
      if (!any(acc, at)) return
      if (tagAcc !== undefined) {
        const tags = partition.tagsetTags[g]!
        for (let t = 0; t < tags.length; t++) {
          const to = tags[t]! * OUTCOMES
          for (let o = 0; o < OUTCOMES; o++) tagAcc[to + o]! += acc[at + o]!
        }
      } else {
        rows.push(time, group === "key" ? g : 0, group === "identity" ? g : 0, group === "tagset" ? g : 0, acc, at)
      }
      acc.fill(0, at, at + OUTCOMES)
    }
    if (track) {
      for (let t = 0; t < scratch.nt; t++) emit(scratch.touched[t]!)
      scratch.nt = 0
      scratch.epoch++
    } else {
      for (let g = 0; g < groups; g++) emit(g)
    }
    if (tagAcc !== undefined) {
      for (let tag = 0; tag < partition.tagNames.length; tag++) {
        const at = tag * OUTCOMES
        if (any(tagAcc, at)) rows.push(time, 0, 0, tag, tagAcc, at)
      }
      tagAcc.fill(0)
    }
  }

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
  return rows.build(query, partition)
}
