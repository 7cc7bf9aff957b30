/**
 * DuckDB as the reference peer: the raw events in a file-backed table (fed with the DataChunk
 * appender), and an hourly rollup built from them by SQL. Both answer the reference queries in
 * SQL, including ordering and limit; only the zero fill of plain time series happens here.
 */
import { BIGINT, DuckDBDataChunk, DuckDBInstance, LIST, listValue, UTINYINT, VARCHAR } from "@duckdb/node-api"
import type { Datapoint } from "@keymeter/core/Datapoint"
import type { VerificationQueryInput } from "@keymeter/core/VerificationQuery"
import { rmSync } from "node:fs"
import type { Dataset } from "./Dataset.js"
import { apiId, externalId, identityId, OUTCOMES } from "./Dataset.js"

const HOUR = 3_600_000
const DAY = 86_400_000
const CHUNK_ROWS = 2048
const OUTCOME_COLUMNS = OUTCOMES.map((_, k) => `c${k}`)

export type Layout = "raw" | "rollup"

/** Opens a fresh file-backed database. */
export const open = async (file: string) => {
  for (const suffix of ["", ".wal"]) rmSync(file + suffix, { force: true })
  const instance = await DuckDBInstance.create(file)
  const connection = await instance.connect()
  await connection.run(`CREATE TABLE events (time BIGINT, workspace_id VARCHAR, api_id VARCHAR, key_id VARCHAR,
    identity_id VARCHAR, external_id VARCHAR, tags VARCHAR[], outcome UTINYINT)`)
  const appender = await connection.createAppender("events")
  const types = [BIGINT, VARCHAR, VARCHAR, VARCHAR, VARCHAR, VARCHAR, LIST(VARCHAR), UTINYINT]

  return {
    /** Appends a slice of the data set, in DataChunks. */
    append: (data: Dataset) => {
      for (let from = 0; from < data.size; from += CHUNK_ROWS) {
        const to = Math.min(data.size, from + CHUNK_ROWS)
        const columns: Array<Array<any>> = types.map(() => [])
        for (let i = from; i < to; i++) {
          const a = data.api[i]!
          const k = data.key[i]!
          const identity = data.identityOf[a]![k]!
          columns[0]!.push(BigInt(data.time[i]!))
          columns[1]!.push("ws_bench")
          columns[2]!.push(apiId(a))
          columns[3]!.push(data.keyIds[a]![k]!)
          columns[4]!.push(identity >= 0 ? identityId(identity) : null)
          columns[5]!.push(identity >= 0 ? externalId(identity) : null)
          columns[6]!.push(listValue(data.tagsets[data.tagset[i]!] as Array<string>))
          columns[7]!.push(data.outcome[i]!)
        }
        const chunk = DuckDBDataChunk.create(types, to - from)
        chunk.setColumns(columns)
        appender.appendDataChunk(chunk)
      }
    },
    /** Flushes, checkpoints, and builds the hourly rollup (its time is reported apart). */
    finish: async () => {
      appender.flushSync()
      appender.closeSync()
      await connection.run("CHECKPOINT")
    },
    buildRollup: async () => {
      await connection.run(`CREATE TABLE rollup_hour AS SELECT api_id, time // ${HOUR} AS hour, key_id, identity_id,
        external_id, tags, count(*) AS total,
        ${OUTCOME_COLUMNS.map((c, k) => `count(*) FILTER (WHERE outcome = ${k}) AS ${c}`).join(", ")}
        FROM events GROUP BY ALL ORDER BY api_id, hour`)
      await connection.run("CHECKPOINT")
    },
    query: async (layout: Layout, query: VerificationQueryInput): Promise<Array<Datapoint>> => {
      const reader = await connection.runAndReadAll(toSql(layout, query))
      return toDatapoints(query, reader.columnNames(), reader.getRows())
    },
    close: () => {
      connection.closeSync()
      instance.closeSync()
    }
  }
}

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`

/** The time bucket of a month unit: the first millisecond of the UTC month of `hourExpr`. */
const monthOf = (hourExpr: string) => `epoch_ms(date_trunc('month', to_timestamp((${hourExpr}) * 3600)))`

/**
 * The SQL of a query: every shape the contract allows (a time unit of hour, day or month; key,
 * identity, tag or tag set; key, tag and external id filters; orderBy, order, limit), with
 * keymeter's ordering rules (ties by time, key, identity id then external id, tag, tag set joined
 * with ",").
 */
export const toSql = (layout: Layout, query: VerificationQueryInput): string => {
  const groupBy = query.groupBy ?? []
  const startHour = Math.floor(query.start! / HOUR)
  const endHour = Math.floor(query.end! / HOUR)
  const where = [`api_id = ${quote(query.apiId)}`]
  where.push(
    layout === "raw"
      ? `time >= ${startHour * HOUR} AND time < ${(endHour + 1) * HOUR}`
      : `hour BETWEEN ${startHour} AND ${endHour}`
  )
  if (query.keyId !== undefined) where.push(`key_id IN (${query.keyId.map(quote).join(", ")})`)
  if (query.tag !== undefined && query.tag.length > 0) {
    where.push(`list_has_all(tags, [${query.tag.map(quote).join(", ")}])`)
  }
  if (query.externalId !== undefined) where.push(`external_id = ${quote(query.externalId)}`)
  const hourOf = layout === "raw" ? `time // ${HOUR}` : "hour"
  // [output name, expression, ordering expression]
  const dims: Array<[string, string, string]> = []
  const time = (expr: string) => dims.push(["time", expr, `"time"`])
  if (groupBy.includes("hour")) time(`(${hourOf}) * ${HOUR}`)
  if (groupBy.includes("day")) time(`(${hourOf}) // 24 * ${DAY}`)
  if (groupBy.includes("month")) time(monthOf(hourOf))
  if (groupBy.includes("key")) dims.push(["keyId", "key_id", `"keyId"`])
  if (groupBy.includes("identity")) {
    dims.push(["identityId", "identity_id", `"identityId"`], ["externalId", "external_id", `"externalId"`])
    where.push("identity_id IS NOT NULL")
  }
  if (groupBy.includes("tag")) dims.push(["tag", "tag", `"tag"`])
  if (groupBy.includes("tags")) dims.push(["tags", "tags", `array_to_string("tags", ',')`])
  const counts = layout === "raw"
    ? ["count(*) AS total", ...OUTCOME_COLUMNS.map((c, k) => `count(*) FILTER (WHERE outcome = ${k}) AS ${c}`)]
    : ["sum(total) AS total", ...OUTCOME_COLUMNS.map((c) => `sum(${c}) AS ${c}`)]
  const source = groupBy.includes("tag")
    ? `(SELECT unnest(tags) AS tag, * FROM ${layout === "raw" ? "events" : "rollup_hour"} WHERE ${where.join(" AND ")})`
    : `${layout === "raw" ? "events" : "rollup_hour"} WHERE ${where.join(" AND ")}`
  const direction = query.order === "desc" ? "DESC" : "ASC"
  const orderBy = query.orderBy === undefined || query.orderBy === "time"
    ? dims.map(([, , order]) => `${order} ${query.orderBy === undefined ? direction : "ASC"}`)
    : [
      `${query.orderBy === "total" ? "total" : OUTCOME_COLUMNS[OUTCOMES.indexOf(query.orderBy as never)]} ${direction}`,
      ...dims.map(([, , order]) => `${order} ASC`)
    ]
  if (query.orderBy === "time" && dims[0]?.[0] === "time") orderBy[0] = `"time" ${direction}`
  return `SELECT ${[...dims.map(([name, expr]) => `${expr} AS "${name}"`), ...counts].join(", ")} FROM ${source}` +
    (dims.length > 0 ? ` GROUP BY ${dims.map(([, expr]) => expr).join(", ")}` : "") +
    (orderBy.length > 0 ? ` ORDER BY ${orderBy.join(", ")}` : "") +
    (query.limit !== undefined ? ` LIMIT ${query.limit}` : "")
}

const toDatapoints = (
  query: VerificationQueryInput,
  names: Array<string>,
  rows: Array<Array<unknown>>
): Array<Datapoint> => {
  const points = rows.map((row) => {
    const value = (name: string) => row[names.indexOf(name)]
    const count = (name: string) => Number(value(name) ?? 0)
    const point: Record<string, unknown> = {}
    if (names.includes("time")) point.time = Number(value("time"))
    if (names.includes("keyId")) point.keyId = value("keyId")
    if (names.includes("identityId")) point.identity = { id: value("identityId"), externalId: value("externalId") }
    if (names.includes("tag")) point.tag = value("tag")
    if (names.includes("tags")) point.tags = [...((value("tags") as { items?: Array<unknown> })?.items ?? [])]
    point.total = count("total")
    OUTCOMES.forEach((outcome, k) => (point[outcome] = count(`c${k}`)))
    return point as unknown as Datapoint
  })
  // A plain time series has every bucket from start to end, empty ones with zeros.
  const groupBy = query.groupBy ?? []
  const unit = groupBy.find((g) => g === "hour" || g === "day" || g === "month")
  if (unit === undefined || groupBy.length > 1) return points
  const byTime = new Map(points.map((p) => [p.time, p]))
  const bucket = (t: number) => {
    if (unit === "hour") return Math.floor(t / HOUR) * HOUR
    if (unit === "day") return Math.floor(t / DAY) * DAY
    const d = new Date(t)
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
  }
  const next = (t: number) => {
    if (unit === "hour") return t + HOUR
    if (unit === "day") return t + DAY
    const d = new Date(t)
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)
  }
  const filled: Array<Datapoint> = []
  for (let t = bucket(query.start!); t <= bucket(query.end!); t = next(t)) {
    filled.push(
      byTime.get(t) ?? ({ time: t, total: 0, ...Object.fromEntries(OUTCOMES.map((o) => [o, 0])) } as Datapoint)
    )
  }
  return query.order === "desc" && query.orderBy === undefined ? filled.reverse() : filled
}
