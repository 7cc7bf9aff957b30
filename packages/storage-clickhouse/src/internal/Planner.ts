/**
 * An aggregation query as one ClickHouse SELECT over a family of rollups (verifications' or
 * rate-limit decisions', which share their shapes). The window (whole hours) is split into whole
 * days, read from a day table, and the hours at its edges (or every hour, for an hour-unit query),
 * read from an hour table; for each, the smallest table holding the needed columns is chosen. The
 * parts are summed together by one outer GROUP BY. Every value is written by `Literal`.
 */
import type { AggregationQuery } from "@keymeter/core/Aggregation"
import { COUNTER_COLUMNS } from "@keymeter/core/Aggregation"
import * as Time from "@keymeter/core/Time"
import { Outcomes } from "@keymeter/core/Verification"
import { isZeroFilled } from "@keymeter/core/VerificationQuery"
import type { Family, Shape } from "../Migrations.js"
import { encode, integer, string } from "./Literal.js"

export type Dimension = "key" | "identity" | "tags"

const COLUMNS: Record<Dimension, string> = { key: "key_id", identity: "identity_id, external_id", tags: "tags" }

const SUMS = COUNTER_COLUMNS.map((c) => `sum(${c}) AS ${c}`).join(", ")

/**
 * The SQL of a query, and how to read its rows: [bucket (UInt32)?, ...dimension columns (String;
 * tag sets Array(String)), c0 .. c8 (UInt64)].
 */
export interface Plan {
  readonly text: string
  readonly dimensions: ReadonlyArray<Dimension>
  /** Whether rows start with a time bucket. */
  readonly bucketed: boolean
  /** A bucket value as the start of its time slice, unix ms. */
  readonly bucketTime: (bucket: number) => number
  /**
   * Set when the SELECT answers `orderBy` + `limit` itself: one row, `[groups, threshold, rows]`,
   * `rows` those whose ordered value reaches the `limit`-th best (ties included), `groups` how many
   * the complete answer holds (see `AggregationResult.groups`).
   */
  readonly top: boolean
  /** Whether the tags column holds one tag per row (`groupByTag: "tag"`) rather than a tag set. */
  readonly perTag: boolean
}

interface Part {
  readonly shape: Shape
  readonly grain: "hour" | "day"
  readonly from: number
  readonly to: number
}

/**
 * `hour_key` is sorted by key before hour: the table for a few keys' hours over a long window,
 * but a scan of every key's whole history for a window of all keys. Those read `hour`, sorted
 * by hour.
 */
const hourTable = (needed: ReadonlySet<Dimension>, keyFilter: boolean): Shape =>
  needed.size === 0 ? "hour_total" : needed.size === 1 && needed.has("key") && keyFilter ? "hour_key" : "hour"

const dayTable = (needed: ReadonlySet<Dimension>): Shape => {
  if (needed.size === 0) return "day_total"
  if (needed.size > 1) return "day"
  return needed.has("key") ? "day_key" : needed.has("identity") ? "day_identity" : "day_tags"
}

/** Whole days [firstDay, lastDay] from a day table, the rest of [lo, hi] (hours) from an hour table. */
const parts = (query: AggregationQuery, needed: ReadonlySet<Dimension>, lo: number, hi: number): Array<Part> => {
  const hours = (from: number, to: number): Part => ({
    shape: hourTable(needed, query.keyIds.length > 0),
    grain: "hour",
    from,
    to
  })
  if (query.timeUnit === "hour") return [hours(lo, hi)]
  const { after, before, days } = Time.splitDays(lo, hi)
  const out: Array<Part> = []
  if (before) out.push(hours(before.from, before.to))
  if (days) out.push({ shape: dayTable(needed), grain: "day", ...days })
  if (after) out.push(hours(after.from, after.to))
  return out
}

/** The plan of `query` over the rollups of `family`, or undefined when its window is empty. */
export const plan = (query: AggregationQuery, family: Family): Plan | undefined => {
  const lo = query.start === undefined ? 0 : Math.max(0, query.start / Time.HOUR)
  const hi = Math.min(query.end / Time.HOUR, 0xffff_ffff)
  if (lo > hi) return undefined

  const dimensions: Array<Dimension> = []
  if (query.groupByKey) dimensions.push("key")
  if (query.groupByIdentity) dimensions.push("identity")
  if (query.groupByTag !== undefined) dimensions.push("tags")
  const needed = new Set<Dimension>(dimensions)
  if (query.keyIds.length > 0) needed.add("key")
  if (query.tags.length > 0) needed.add("tags")
  if (query.externalId !== undefined) needed.add("identity")

  // Months are labelled by the day number of their first day: a multiIf over the window's months.
  let month: ((day: string) => string) | undefined
  if (query.timeUnit === "month") {
    const starts = Time.monthStartDays(lo * Time.HOUR, hi * Time.HOUR)
    month = (day) =>
      starts.length === 1
        ? integer(starts[0]!)
        : `multiIf(${
          starts.slice(1).map((next, i) => `${day} < ${integer(next)}, ${integer(starts[i]!)}`).join(", ")
        }, ${integer(starts[starts.length - 1]!)})`
  }

  const columns = dimensions.map((d) => COLUMNS[d])
  const selects = parts(query, needed, lo, hi).map((part) => {
    const hourly = part.grain === "hour"
    const day = hourly ? "intDiv(hour, 24)" : "day"
    // A month's label is a multiIf of literals (UInt16): every bucket is read as a UInt32.
    const bucket = query.timeUnit === undefined
      ? []
      : [`${query.timeUnit === "hour" ? "hour" : query.timeUnit === "day" ? day : `toUInt32(${month!(day)})`} AS b`]
    const where = [
      `workspace_id = ${string(query.workspaceId)}`,
      `api_id = ${string(query.apiId)}`,
      `${hourly ? "hour" : "day"} BETWEEN ${integer(part.from)} AND ${integer(part.to)}`
    ]
    if (query.keyIds.length > 0) where.push(`key_id IN (${query.keyIds.map(string).join(", ")})`)
    if (query.tags.length > 0) where.push(`hasAll(tags, ${encode(query.tags)})`)
    if (query.externalId !== undefined) where.push(`external_id = ${string(query.externalId)} AND identity_id != ''`)
    else if (query.groupByIdentity) where.push("identity_id != ''")
    return `SELECT ${[...bucket, ...columns, ...COUNTER_COLUMNS].join(", ")} FROM ${family}${part.shape} WHERE ${
      where.join(" AND ")
    }`
  })
  // Per tag, each tag set's counts go to each of its tags (sets hold each tag once).
  const perTag = query.groupByTag === "tag"
  const keys = [...(query.timeUnit !== undefined ? ["b"] : []), ...columns].map((k) =>
    perTag && k === "tags" ? "tag" : k
  )
  const selected = keys.map((k) => (k === "tag" ? "arrayJoin(tags) AS tag" : k))
  const grouped = `SELECT ${[...selected, SUMS].join(", ")} FROM (${selects.join(" UNION ALL ")})` +
    (keys.length > 0 ? ` GROUP BY ${keys.join(", ")} LIMIT ${integer(query.maxRows + 1)}` : "")
  // A few rows of many, by a counter: chosen in ClickHouse, so that only they travel. Not for a
  // zero-filled series: rows absent here count there.
  const top = query.orderBy !== undefined && query.orderBy !== "time" && query.limit !== undefined &&
    keys.length > 0 && !isZeroFilled(query)
  let text = grouped
  if (top) {
    const value = query.orderBy === "total"
      ? COUNTER_COLUMNS.join(" + ")
      : COUNTER_COLUMNS[Outcomes.indexOf(query.orderBy as typeof Outcomes[number])]!
    const limit = integer(Math.max(1, query.limit!))
    const desc = query.order === "desc"
    const row = [...keys.flatMap((k) => k.split(", ")), ...COUNTER_COLUMNS, "v"]
    text = `SELECT count() AS g, if(g <= ${limit}, ${desc ? "toUInt64(0)" : "toUInt64(-1)"}, ` +
      `${desc ? "arrayReverseSort" : "arraySort"}(groupArray(v))[${limit}]) AS t, ` +
      `arrayFilter(r -> tupleElement(r, ${row.length}) ${desc ? ">=" : "<="} t, groupArray(tuple(${
        row.join(", ")
      }))) AS top FROM (SELECT *, ${value} AS v FROM (${grouped}))`
  }
  return {
    top,
    perTag,
    text,
    dimensions,
    bucketed: query.timeUnit !== undefined,
    bucketTime: query.timeUnit === "hour" ? (b) => b * Time.HOUR : (b) => b * Time.DAY
  }
}
