/**
 * Turns an aggregation query into SQL over the rollup tables. The window (whole hours) is split
 * into segments: whole days that compaction has rolled up are read from day tables, every other
 * hour (partial days at the edges, days not yet compacted, any hour-unit query) from hour tables.
 * For each segment the smallest table holding the needed columns is chosen: totals, one dimension
 * (key, identity, tag set) or the full rollup. A query that sums credits reads the events kept in
 * full instead, grouped by SQLite (the rollups keep counts only).
 */
import type { AggregationQuery } from "@keymeter/core/Aggregation"
import { COUNTER_COLUMNS, OUTCOMES } from "@keymeter/core/Aggregation"
import * as Time from "@keymeter/core/Time"
import type { Dictionaries, Partition } from "./Dictionaries.js"
import type { Rollup } from "./Tables.js"

export type Dimension = "key" | "identity" | "tagset"

/**
 * One SQL statement of a plan. Its rows are [bucket, ...dimensions, c0 .. c8]; over the events
 * (`sumCredits`), [bucket, ...dimensions, outcome, count, credits].
 */
export interface Statement {
  readonly table: Rollup | "events"
  readonly text: string
  readonly params: ReadonlyArray<unknown>
}

export interface Plan {
  readonly partition: Partition
  readonly dimensions: ReadonlyArray<Dimension>
  readonly statements: ReadonlyArray<Statement>
  /** A bucket value as the start of its time slice, unix ms. */
  readonly bucketTime: (bucket: number) => number
}

const SUMS = COUNTER_COLUMNS.map((c) => `sum(${c})`).join(", ")

const DAY_TABLE: Record<Dimension, Rollup> = { key: "dayKey", identity: "dayIdentity", tagset: "dayTagset" }

interface Segment {
  readonly grain: "hour" | "day"
  readonly from: number
  readonly to: number
}

const segments = (query: AggregationQuery, partition: Partition, lo: number, hi: number): Array<Segment> => {
  if (query.timeUnit === "hour") return [{ grain: "hour", from: lo, to: hi }]
  const { after, before, days } = Time.splitDays(lo, hi, partition.compactedThrough)
  const out: Array<Segment> = []
  if (before) out.push({ grain: "hour", ...before })
  if (days) out.push({ grain: "day", ...days })
  if (after) out.push({ grain: "hour", ...after })
  return out
}

const range = (from: number, to: number) => JSON.stringify(Array.from({ length: to - from + 1 }, (_, i) => from + i))

/** The plan of `query`, or undefined when nothing stored can match. */
export const plan = (query: AggregationQuery, dictionaries: Dictionaries): Plan | undefined => {
  const partition = dictionaries.partition(query.workspaceId, query.apiId)
  if (partition === undefined || partition.maxHour < 0) return undefined

  // Filters as code lists; a filter naming nothing stored matches nothing.
  let keys: Array<number> | undefined
  if (query.keyIds.length > 0) {
    keys = query.keyIds.map((k) => dictionaries.knownKey(k)).filter((k): k is number => k !== undefined)
    if (keys.length === 0) return undefined
  }
  let tagsets: Array<number> | undefined
  if (query.tags.length > 0) {
    tagsets = dictionaries.tagsetsWithAll(query.tags)
    if (tagsets.length === 0) return undefined
  }
  let identities: Array<number> | undefined
  if (query.externalId !== undefined) {
    identities = dictionaries.identitiesWithExternalId(query.externalId)
    if (identities.length === 0) return undefined
  }

  const lo = Math.max(query.start === undefined ? partition.minHour : query.start / Time.HOUR, partition.minHour)
  const hi = Math.min(query.end / Time.HOUR, partition.maxHour)
  if (lo > hi) return undefined

  const dimensions: Array<Dimension> = []
  if (query.groupByKey) dimensions.push("key")
  if (query.groupByIdentity) dimensions.push("identity")
  if (query.groupByTag !== undefined) dimensions.push("tagset")
  const needed = new Set<Dimension>(dimensions)
  if (keys) needed.add("key")
  if (tagsets) needed.add("tagset")
  if (identities) needed.add("identity")

  // Months are labelled by the day number of their first day; a CASE over the window's months.
  let monthCase: ((day: string) => string) | undefined
  if (query.timeUnit === "month") {
    const starts = Time.monthStartDays(lo * Time.HOUR, hi * Time.HOUR)
    monthCase = (day) =>
      starts.length === 1
        ? String(starts[0])
        : `CASE ${starts.slice(1).map((next, i) => `WHEN ${day} < ${next} THEN ${starts[i]}`).join(" ")} ELSE ${
          starts[starts.length - 1]
        } END`
  }

  // Lists are one JSON parameter read by json_each rather than `sql.in`'s one `?` per value: the
  // statement text then does not depend on the list's length and stays in the prepared cache.
  const filters = (where: Array<string>, params: Array<unknown>) => {
    if (keys) {
      where.push("key IN (SELECT value FROM json_each(?))")
      params.push(JSON.stringify(keys))
    }
    if (tagsets) {
      where.push("tagset IN (SELECT value FROM json_each(?))")
      params.push(JSON.stringify(tagsets))
    }
    if (identities) {
      where.push("identity IN (SELECT value FROM json_each(?))")
      params.push(JSON.stringify(identities))
    } else if (query.groupByIdentity) {
      where.push("identity <> 0")
    }
  }
  const groups = [...(query.timeUnit !== undefined ? ["b"] : []), ...dimensions]
  const grouping = groups.length > 0 ? ` GROUP BY ${groups.join(", ")} LIMIT ${query.maxRows + 1}` : ""
  const bucketTime = query.timeUnit === "hour" ? (b: number) => b * Time.HOUR : (b: number) => b * Time.DAY

  if (query.sumCredits === true) {
    const events = dictionaries.tables.events
    if (events === undefined) throw new Error("Planner: this family keeps no credits")
    const day = `(time / ${Time.DAY})`
    const bucket = query.timeUnit === undefined
      ? "0"
      : query.timeUnit === "hour"
      ? `(time / ${Time.HOUR})`
      : query.timeUnit === "day"
      ? day
      : monthCase!(day)
    // The (p, time) index bounds the read to the window. Grouped by outcome too, with two sums:
    // nine conditional sums of each column per row cost SQLite three times as much.
    const where = ["p = ?", "time >= ?", "time < ?"]
    const params: Array<unknown> = [partition.no, lo * Time.HOUR, (hi + 1) * Time.HOUR]
    filters(where, params)
    const text = `SELECT ${bucket} AS b${dimensions.map((d) => `, ${d}`).join("")}, outcome, count(*), ` +
      `sum(spent_credits) FROM ${events} WHERE ${where.join(" AND ")} GROUP BY ${[...groups, "outcome"].join(", ")} ` +
      `LIMIT ${(query.maxRows + 1) * OUTCOMES}`
    return { partition, dimensions, statements: [{ table: "events", text, params }], bucketTime }
  }

  const statements = segments(query, partition, lo, hi).map((segment): Statement => {
    const hourly = segment.grain === "hour"
    const only = needed.size === 1 ? [...needed][0]! : undefined
    const table: Rollup = needed.size === 0
      ? (hourly ? "hourTotal" : "dayTotal")
      : hourly
      ? "hour"
      : only !== undefined
      ? DAY_TABLE[only]
      : "day"
    const time = hourly ? "hour" : "day"
    const day = hourly ? "(hour / 24)" : "day"
    const bucket = query.timeUnit === undefined
      ? "0"
      : query.timeUnit === "hour"
      ? "hour"
      : query.timeUnit === "day"
      ? day
      : monthCase!(day)
    const where = ["p = ?"]
    const params: Array<unknown> = [partition.no]
    // In the full rollups the key follows the time column: listing every hour (day) lets SQLite
    // seek each (time, key) pair instead of scanning the window.
    if (keys && (table === "hour" || table === "day")) {
      where.push(`${time} IN (SELECT value FROM json_each(?))`)
      params.push(range(segment.from, segment.to))
    } else {
      where.push(`${time} BETWEEN ? AND ?`)
      params.push(segment.from, segment.to)
    }
    filters(where, params)
    const text = `SELECT ${bucket} AS b${dimensions.map((d) => `, ${d}`).join("")}, ${SUMS} FROM ${
      dictionaries.tables.rollups[table]
    } WHERE ${where.join(" AND ")}${grouping}`
    return { table, text, params }
  })

  return { partition, dimensions, statements, bucketTime }
}
