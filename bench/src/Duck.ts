/**
 * DuckDB as the reference peer: the raw events in a file-backed table (fed with the DataChunk
 * appender), and an hourly rollup built from them by SQL. Both answer the reference queries in
 * SQL, including ordering and limit; only the zero fill of plain time series (and so their
 * ordering and limit) happens here. The same for rate-limit decisions ({@link openRatelimits}).
 */
import type { DuckDBAppender, DuckDBType, DuckDBValue } from "@duckdb/node-api"
import {
  BIGINT,
  BOOLEAN,
  DOUBLE,
  DuckDBDataChunk,
  DuckDBInstance,
  INTEGER,
  LIST,
  listValue,
  UTINYINT,
  VARCHAR
} from "@duckdb/node-api"
import type { Datapoint } from "@keymeter/core/Datapoint"
import type { RatelimitDatapoint, RatelimitQueryInput } from "@keymeter/core/RatelimitQuery"
import type { VerificationQueryInput } from "@keymeter/core/VerificationQuery"
import { rmSync } from "node:fs"
import type { Dataset } from "./Dataset.js"
import { apiId, externalId, extras, identityId, OUTCOMES } from "./Dataset.js"
import * as Decisions from "./Decisions.js"

const HOUR = 3_600_000
const DAY = 86_400_000
const CHUNK_ROWS = 2048
const OUTCOME_COLUMNS = OUTCOMES.map((_, k) => `c${k}`)

export type Layout = "raw" | "rollup"

/** A fresh file-backed database, with `table` created by `ddl` and an appender on it. */
const connect = async (file: string, table: string, ddl: string) => {
  for (const suffix of ["", ".wal"]) rmSync(file + suffix, { force: true })
  const instance = await DuckDBInstance.create(file)
  const connection = await instance.connect()
  await connection.run(ddl)
  const appender = await connection.createAppender(table)
  return { instance, connection, appender }
}

/**
 * Appends rows 0 to `size` in DataChunks of {@link CHUNK_ROWS}: `fill(from, to, columns)` pushes
 * each row's values onto the columns (of `types`).
 */
const appendChunks = (
  appender: DuckDBAppender,
  types: ReadonlyArray<DuckDBType>,
  size: number,
  fill: (from: number, to: number, columns: ReadonlyArray<Array<DuckDBValue>>) => void
) => {
  for (let from = 0; from < size; from += CHUNK_ROWS) {
    const to = Math.min(size, from + CHUNK_ROWS)
    const columns: Array<Array<DuckDBValue>> = types.map(() => [])
    fill(from, to, columns)
    const chunk = DuckDBDataChunk.create([...types], to - from)
    chunk.setColumns(columns)
    appender.appendDataChunk(chunk)
  }
}

/** Opens a fresh file-backed database. */
export const open = async (file: string) => {
  const { appender, connection, instance } = await connect(
    file,
    "events",
    `CREATE TABLE events (time BIGINT, workspace_id VARCHAR, api_id VARCHAR, key_id VARCHAR,
    identity_id VARCHAR, external_id VARCHAR, tags VARCHAR[], outcome UTINYINT)`
  )
  const types = [BIGINT, VARCHAR, VARCHAR, VARCHAR, VARCHAR, VARCHAR, LIST(VARCHAR), UTINYINT]

  return {
    /** Appends a slice of the data set, in DataChunks. */
    append: (data: Dataset) =>
      appendChunks(appender, types, data.size, (from, to, columns) => {
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
      }),
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

/** True when an answer is one series of time buckets, every bucket present (zero fill). */
const isSeries = (groupBy: ReadonlyArray<string>) =>
  groupBy.length === 1 && (groupBy[0] === "hour" || groupBy[0] === "day" || groupBy[0] === "month")

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
  return select(dims, counts, source, orderBy, query.limit, isSeries(groupBy))
}

/**
 * The statement of a query: `dims` grouped, then ordered and limited, but for a series (ordered
 * and limited once zero-filled, see {@link series}).
 */
const select = (
  dims: ReadonlyArray<readonly [name: string, expr: string, order: string]>,
  counts: ReadonlyArray<string>,
  source: string,
  orderBy: ReadonlyArray<string>,
  limit: number | undefined,
  filledLater: boolean
) =>
  `SELECT ${[...dims.map(([name, expr]) => `${expr} AS "${name}"`), ...counts].join(", ")} FROM ${source}` +
  (dims.length > 0 ? ` GROUP BY ${dims.map(([, expr]) => expr).join(", ")}` : "") +
  (orderBy.length > 0 && !filledLater ? ` ORDER BY ${orderBy.join(", ")}` : "") +
  (limit !== undefined && !filledLater ? ` LIMIT ${limit}` : "")

/** The start of the `unit` bucket holding `t`, and the next bucket's. */
const bucketOf = (unit: string, t: number) => {
  if (unit === "hour") return Math.floor(t / HOUR) * HOUR
  if (unit === "day") return Math.floor(t / DAY) * DAY
  const d = new Date(t)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
}
const nextBucket = (unit: string, t: number) => {
  if (unit === "hour") return t + HOUR
  if (unit === "day") return t + DAY
  const d = new Date(t)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)
}

/**
 * A plain time series as keymeter answers it: every bucket from start to end (empty ones from
 * `empty`), ordered by `orderBy` in `order` (ties by time, ascending; `order` alone reverses the
 * time order; other fields read by `value`), then cut to `limit`.
 */
const series = <P extends { readonly time?: number | undefined }>(
  query: {
    readonly groupBy?: ReadonlyArray<string> | undefined
    readonly start?: number | null | undefined
    readonly end?: number | null | undefined
    readonly orderBy?: string | undefined
    readonly order?: "asc" | "desc" | undefined
    readonly limit?: number | undefined
  },
  points: ReadonlyArray<P>,
  empty: (time: number) => P,
  value: (point: P, orderBy: string) => number
): Array<P> => {
  const unit = query.groupBy![0]!
  const byTime = new Map(points.map((p) => [p.time, p]))
  const filled: Array<P> = []
  for (let t = bucketOf(unit, query.start!); t <= bucketOf(unit, query.end!); t = nextBucket(unit, t)) {
    filled.push(byTime.get(t) ?? empty(t))
  }
  const direction = query.order === "desc" ? -1 : 1
  const orderBy = query.orderBy
  if (orderBy === undefined || orderBy === "time") {
    if (direction === -1) filled.reverse()
  } else {
    // Stable: ties stay in time order.
    filled.sort((a, b) => direction * (value(a, orderBy) - value(b, orderBy)))
  }
  return query.limit === undefined ? filled : filled.slice(0, query.limit)
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
  if (!isSeries(query.groupBy ?? [])) return points
  return series(
    query,
    points,
    (time) => ({ time, total: 0, ...Object.fromEntries(OUTCOMES.map((o) => [o, 0])) } as Datapoint),
    (point, orderBy) => (point as unknown as Record<string, number>)[orderBy]!
  )
}

/**
 * Rate-limit decisions in DuckDB: every decision in full in `decisions` (strings as received, as
 * the events table holds them), and `rl_rollup_hour`, its counts per (namespace, hour,
 * identifier, override) built by SQL once loaded.
 */
export const openRatelimits = async (file: string) => {
  const { appender, connection, instance } = await connect(
    file,
    "decisions",
    `CREATE TABLE decisions (time BIGINT, workspace_id VARCHAR, namespace_id VARCHAR, identifier VARCHAR,
    passed BOOLEAN, "limit" BIGINT, duration BIGINT, remaining BIGINT, cost INTEGER, override_id VARCHAR,
    source VARCHAR, latency DOUBLE, detail VARCHAR)`
  )
  const types = [
    BIGINT,
    VARCHAR,
    VARCHAR,
    VARCHAR,
    BOOLEAN,
    BIGINT,
    BIGINT,
    BIGINT,
    INTEGER,
    VARCHAR,
    VARCHAR,
    DOUBLE,
    VARCHAR
  ]
  return {
    /** Appends a slice of the decisions, in DataChunks. */
    append: (catalog: Decisions.Catalog, slice: Decisions.Slice) =>
      appendChunks(appender, types, slice.size, (from, to, columns) => {
        for (let i = from; i < to; i++) {
          const event = Decisions.event(catalog, slice, i)
          columns[0]!.push(BigInt(event.time))
          columns[1]!.push(event.workspaceId)
          columns[2]!.push(event.namespaceId)
          columns[3]!.push(event.identifier)
          columns[4]!.push(event.passed)
          columns[5]!.push(BigInt(event.limit))
          columns[6]!.push(BigInt(event.duration))
          columns[7]!.push(BigInt(event.remaining))
          columns[8]!.push(event.cost)
          columns[9]!.push(event.overrideId ?? null)
          columns[10]!.push(event.source)
          columns[11]!.push(event.latency)
          columns[12]!.push(event.detail ?? null)
        }
      }),
    finish: async () => {
      appender.flushSync()
      appender.closeSync()
      await connection.run("CHECKPOINT")
    },
    buildRollup: async () => {
      await connection.run(`CREATE TABLE rl_rollup_hour AS SELECT namespace_id, time // ${HOUR} AS hour, identifier,
        override_id, count(*) FILTER (WHERE passed) AS passed, count(*) FILTER (WHERE NOT passed) AS blocked
        FROM decisions GROUP BY ALL ORDER BY namespace_id, hour`)
      await connection.run("CHECKPOINT")
    },
    query: async (layout: Layout, query: RatelimitQueryInput): Promise<Array<RatelimitDatapoint>> => {
      const reader = await connection.runAndReadAll(ratelimitSql(layout, query))
      return toRatelimitDatapoints(query, reader.columnNames(), reader.getRows())
    },
    close: () => {
      connection.closeSync()
      instance.closeSync()
    }
  }
}

/**
 * The SQL of a getRatelimits query (namespace by id or name), with keymeter's rules: both hours
 * of the window included; `override` groups only decisions an override made; default ordering
 * time, identifier, override id; `orderBy` in `order` with ties by the default ordering.
 */
export const ratelimitSql = (layout: Layout, query: RatelimitQueryInput): string => {
  const groupBy = query.groupBy ?? []
  const startHour = Math.floor(query.start! / HOUR)
  const endHour = Math.floor(query.end! / HOUR)
  const where = [`namespace_id = ${quote(Decisions.namespaceIdOf(query))}`]
  where.push(
    layout === "raw"
      ? `time >= ${startHour * HOUR} AND time < ${(endHour + 1) * HOUR}`
      : `hour BETWEEN ${startHour} AND ${endHour}`
  )
  if (query.identifier !== undefined) where.push(`identifier IN (${query.identifier.map(quote).join(", ")})`)
  if (query.overrideId !== undefined) where.push(`override_id = ${quote(query.overrideId)}`)
  const hourOf = layout === "raw" ? `time // ${HOUR}` : "hour"
  const dims: Array<readonly [string, string, string]> = []
  if (groupBy.includes("hour")) dims.push(["time", `(${hourOf}) * ${HOUR}`, `"time"`])
  if (groupBy.includes("day")) dims.push(["time", `(${hourOf}) // 24 * ${DAY}`, `"time"`])
  if (groupBy.includes("month")) dims.push(["time", monthOf(hourOf), `"time"`])
  if (groupBy.includes("identifier")) dims.push(["identifier", "identifier", `"identifier"`])
  if (groupBy.includes("override")) {
    dims.push(["overrideId", "override_id", `"overrideId"`])
    where.push("override_id IS NOT NULL")
  }
  const counts = layout === "raw"
    ? ["count(*) AS total", "count(*) FILTER (WHERE passed) AS passed", "count(*) FILTER (WHERE NOT passed) AS blocked"]
    : ["sum(passed) + sum(blocked) AS total", "sum(passed) AS passed", "sum(blocked) AS blocked"]
  const direction = query.order === "desc" ? "DESC" : "ASC"
  const orderBy = query.orderBy === undefined
    ? dims.map(([, , order]) => `${order} ${direction}`)
    : query.orderBy === "time"
    ? dims.map(([name, , order]) => `${order} ${name === "time" ? direction : "ASC"}`)
    : [`${query.orderBy} ${direction}`, ...dims.map(([, , order]) => `${order} ASC`)]
  const source = `${layout === "raw" ? "decisions" : "rl_rollup_hour"} WHERE ${where.join(" AND ")}`
  return select(dims, counts, source, orderBy, query.limit, isSeries(groupBy))
}

const toRatelimitDatapoints = (
  query: RatelimitQueryInput,
  names: Array<string>,
  rows: Array<Array<unknown>>
): Array<RatelimitDatapoint> => {
  const at = (name: string) => names.indexOf(name)
  const [time, identifier, overrideId, total, passed, blocked] = [
    at("time"),
    at("identifier"),
    at("overrideId"),
    at("total"),
    at("passed"),
    at("blocked")
  ]
  // Fields in the order keymeter's answers have them, so the JSON of equal answers is equal.
  const points = rows.map((row) => {
    const point: Record<string, unknown> = {}
    if (time >= 0) point.time = Number(row[time])
    if (identifier >= 0) point.identifier = row[identifier]
    if (overrideId >= 0) point.overrideId = row[overrideId]
    point.total = Number(row[total] ?? 0)
    point.passed = Number(row[passed] ?? 0)
    point.blocked = Number(row[blocked] ?? 0)
    return point as unknown as RatelimitDatapoint
  })
  if (!isSeries(query.groupBy ?? [])) return points
  return series(
    query,
    points,
    (t) => ({ time: t, total: 0, passed: 0, blocked: 0 }),
    (point, orderBy) => point[orderBy as "total" | "passed" | "blocked"]
  )
}

/**
 * The public raw tables of SQL analytics in DuckDB, for `--sql`: `key_verifications_v1` and
 * `ratelimits_v1` with keymeter's columns and values (times in unix ms, outcomes as
 * `OUTCOME_NAMES`, `''` for no identity, no override), so each query's DuckDB text is a plain
 * translation of keymeter's.
 */
export const openSql = async (file: string) => {
  for (const suffix of ["", ".wal"]) rmSync(file + suffix, { force: true })
  const instance = await DuckDBInstance.create(file)
  const connection = await instance.connect()
  await connection.run(`CREATE TABLE key_verifications_v1 (time BIGINT, workspace_id VARCHAR, key_space_id VARCHAR,
    key_id VARCHAR, identity_id VARCHAR, external_id VARCHAR, outcome VARCHAR, tags VARCHAR[], spent_credits BIGINT,
    latency DOUBLE, region VARCHAR)`)
  await connection.run(`CREATE TABLE ratelimits_v1 (time BIGINT, workspace_id VARCHAR, namespace_id VARCHAR,
    identifier VARCHAR, passed INTEGER, latency DOUBLE, override_id VARCHAR)`)
  const verifications = await connection.createAppender("key_verifications_v1")
  const decisions = await connection.createAppender("ratelimits_v1")
  const verificationTypes = [
    BIGINT,
    VARCHAR,
    VARCHAR,
    VARCHAR,
    VARCHAR,
    VARCHAR,
    VARCHAR,
    LIST(VARCHAR),
    BIGINT,
    DOUBLE,
    VARCHAR
  ]
  const decisionTypes = [BIGINT, VARCHAR, VARCHAR, VARCHAR, INTEGER, DOUBLE, VARCHAR]
  return {
    /** Appends a slice of the verification data set, with its {@link Dataset.extras}. */
    appendVerifications: (data: Dataset, outcomeNames: ReadonlyArray<string>) =>
      appendChunks(verifications, verificationTypes, data.size, (from, to, columns) => {
        for (let i = from; i < to; i++) {
          const a = data.api[i]!
          const k = data.key[i]!
          const identity = data.identityOf[a]![k]!
          const more = extras(data, i)
          columns[0]!.push(BigInt(data.time[i]!))
          columns[1]!.push(Decisions.WORKSPACE)
          columns[2]!.push(apiId(a))
          columns[3]!.push(data.keyIds[a]![k]!)
          columns[4]!.push(identity >= 0 ? identityId(identity) : "")
          columns[5]!.push(identity >= 0 ? externalId(identity) : "")
          columns[6]!.push(outcomeNames[data.outcome[i]!]!)
          columns[7]!.push(listValue(data.tagsets[data.tagset[i]!] as Array<string>))
          columns[8]!.push(BigInt(more.spentCredits))
          columns[9]!.push(more.latency)
          columns[10]!.push(more.region)
        }
      }),
    /** Appends a slice of the decision data set. */
    appendDecisions: (catalog: Decisions.Catalog, slice: Decisions.Slice) =>
      appendChunks(decisions, decisionTypes, slice.size, (from, to, columns) => {
        for (let i = from; i < to; i++) {
          const event = Decisions.event(catalog, slice, i)
          columns[0]!.push(BigInt(event.time))
          columns[1]!.push(event.workspaceId)
          columns[2]!.push(event.namespaceId)
          columns[3]!.push(event.identifier)
          columns[4]!.push(event.passed ? 1 : 0)
          columns[5]!.push(event.latency)
          columns[6]!.push(event.overrideId ?? "")
        }
      }),
    /** Flushes both appenders and checkpoints. */
    finish: async () => {
      for (const appender of [verifications, decisions]) {
        appender.flushSync()
        appender.closeSync()
      }
      await connection.run("CHECKPOINT")
    },
    /** A query's rows as objects keyed by column name (BIGINT and HUGEINT as bigint, lists as arrays). */
    query: async (text: string): Promise<Array<Record<string, unknown>>> => {
      const reader = await connection.runAndReadAll(text)
      return reader.getRowObjectsJS() as Array<Record<string, unknown>>
    },
    close: () => {
      connection.closeSync()
      instance.closeSync()
    }
  }
}
