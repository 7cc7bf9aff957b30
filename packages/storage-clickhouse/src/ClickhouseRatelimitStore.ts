/**
 * The rate-limit half of the Storage port on ClickHouse (HTTP interface, 18.16 and newer), beside
 * the verifications in the same database.
 *
 * Ingest: as `ClickhouseVerificationStore`'s, one INSERT per round of concurrent `append` calls
 * (group commit) into `ratelimits`, bounded in events, failing at once when ClickHouse is down or
 * behind. Its materialized views count every decision in the `rl_` rollups, through
 * `RatelimitEvent`'s projection, and each override's hits, in the same request.
 *
 * Reads: counts from the `rl_` rollups by the planner of verifications (same shapes, other
 * prefix), so they are answered exactly as verification counts are; hits from
 * `rl_override_hits`; the latest decisions, and the raw decisions SQL analytics scan, from
 * `ratelimits`, which holds each decision in full for `decisionRetentionDays` (whole days of it are
 * dropped after that; the counts stay).
 */
import { QueryTooLarge } from "@keymeter/core/Errors"
import type { StorageError } from "@keymeter/core/Errors"
import type { RatelimitColumns, ScanScope } from "@keymeter/core/EventScan"
import * as GroupCommit from "@keymeter/core/GroupCommit"
import type { OverrideHits, RatelimitEvent } from "@keymeter/core/RatelimitEvent"
import { SourceIndex, Sources } from "@keymeter/core/RatelimitEvent"
import { RatelimitStore } from "@keymeter/core/Storage"
import * as Time from "@keymeter/core/Time"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as ClickhouseVerificationStore from "./ClickhouseVerificationStore.js"
import * as Aggregate from "./internal/Aggregate.js"
import type { Connection } from "./internal/Connection.js"
import * as Database from "./internal/Database.js"
import { integer, sql } from "./internal/Literal.js"

/** How to reach ClickHouse, how to batch, and how long decisions are held in full. */
export interface Options extends ClickhouseVerificationStore.Options {
  /**
   * Days each decision is held in full for `decisions` (default 30; `Infinity` keeps them): then
   * its whole UTC day is dropped. Counts and hits are kept for good.
   */
  readonly decisionRetentionDays?: number | undefined
}

/** Default of {@link Options.decisionRetentionDays}. */
export const DEFAULT_DECISION_RETENTION_DAYS = 30

/** How often days past the retention are looked for (and once at start). */
const SWEEP_INTERVAL = "1 hour"

/**
 * Windows (hours back from now) `decisions` looks in before reading a namespace's whole history:
 * 18.16 cannot read a sorted table backwards and stop early, but a busy namespace's last hour
 * usually holds its newest decisions, found without reading older days.
 */
const RECENT_HOURS = [1, 24]

/** Override ids per `overrideHits` SELECT: keeps the IN list well below ClickHouse's 256 KiB query limit. */
const HIT_IDS_PER_QUERY = 1_000

const row = (event: RatelimitEvent) => ({
  workspace_id: event.workspaceId,
  namespace_id: event.namespaceId,
  time: event.time,
  hour: Math.floor(event.time / Time.HOUR),
  identifier: event.identifier,
  passed: event.passed ? 1 : 0,
  limit: event.limit,
  duration: event.duration,
  remaining: event.remaining,
  cost: event.cost,
  override_id: event.overrideId ?? "",
  source: SourceIndex.get(event.source)!,
  // Whole microseconds (the event's precision): 18.16 parses some decimal floats a bit off.
  latency_us: Math.min(0xffff_ffff, Math.round(event.latency * 1000)),
  detail: event.detail ?? ""
})

/** Columns `decisions` reads, in the order `fromRow` takes them. */
const DECISION_COLUMNS =
  "time, identifier, passed, `limit`, duration, remaining, cost, override_id, source, latency_us, detail"

type DecisionRow = [
  time: number,
  identifier: string,
  passed: number,
  limit: number,
  duration: number,
  remaining: number,
  cost: number,
  overrideId: string,
  source: number,
  latencyMicros: number,
  detail: string
]

const fromRow = (workspaceId: string, namespaceId: string, r: Array<unknown>): RatelimitEvent => {
  const [time, identifier, passed, limit, duration, remaining, cost, overrideId, source, latencyMicros, detail] =
    r as DecisionRow
  return {
    time,
    workspaceId,
    namespaceId,
    identifier,
    passed: passed !== 0,
    limit,
    duration,
    remaining,
    cost,
    overrideId: overrideId === "" ? undefined : overrideId,
    source: Sources[source]!,
    latency: latencyMicros / 1000,
    detail: detail === "" ? undefined : detail
  }
}

/** The failure of a scan whose scope holds more than `maxRows` decisions. */
const scanTooLarge = (maxRows: number) =>
  new QueryTooLarge({
    message: `The scope holds more than ${maxRows} rate-limit decisions (the row budget of a scan); narrow it ` +
      "with a shorter window or fewer namespaces"
  })

/** A dictionary of one scan's strings: values by code, codes by value. */
class ScanDictionary {
  readonly values: Array<string> = []
  private readonly codes = new Map<string, number>()
  code(value: string): number {
    let code = this.codes.get(value)
    if (code === undefined) {
      code = this.values.length
      this.codes.set(value, code)
      this.values.push(value)
    }
    return code
  }
}

/** Columns `scan` reads, in the order {@link scanColumns} takes them. */
const SCAN_COLUMNS = "namespace_id, time, identifier, passed, latency_us, override_id"

/** Rows of {@link SCAN_COLUMNS} as columns, with dictionaries of their own. */
const scanColumns = (rows: ReadonlyArray<ReadonlyArray<unknown>>): RatelimitColumns => {
  const n = rows.length
  const namespace = new Uint32Array(n)
  const time = new Float64Array(n)
  const identifier = new Uint32Array(n)
  const passed = new Uint8Array(n)
  const latency = new Float64Array(n)
  const override = new Uint32Array(n)
  const namespaces = new ScanDictionary()
  const identifiers = new ScanDictionary()
  const overrides = new ScanDictionary()
  // Code 0, no override, is "".
  overrides.code("")
  for (let i = 0; i < n; i++) {
    const row = rows[i]!
    namespace[i] = namespaces.code(row[0] as string)
    time[i] = Number(row[1])
    identifier[i] = identifiers.code(row[2] as string)
    passed[i] = Number(row[3]) === 0 ? 0 : 1
    latency[i] = Number(row[4]) / 1000
    override[i] = overrides.code(row[5] as string)
  }
  return {
    length: n,
    time,
    namespaceId: { codes: namespace, values: namespaces.values },
    identifier: { codes: identifier, values: identifiers.values },
    passed,
    latency,
    overrideId: { codes: override, values: overrides.values }
  }
}

/**
 * Drops the days of `ratelimits` wholly older than the retention (partitions are UTC days; a
 * missing one drops nothing, so servers sweeping at once do no harm).
 */
const sweep = (db: Connection, database: string, retentionDays: number) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const partitions = yield* db.query(
      sql`SELECT DISTINCT partition FROM system.parts WHERE database = ${database} AND table = 'ratelimits' AND active`
    )
    const expired = partitions.map((r) => Number(r[0])).filter((day) =>
      (day + 1) * Time.DAY <= now - retentionDays * Time.DAY
    )
    yield* Effect.forEach(expired, (day) => db.command(`ALTER TABLE ratelimits DROP PARTITION ${integer(day)}`), {
      discard: true
    })
  }).pipe(
    // Held longer than promised, never lost: the next sweep tries again.
    Effect.catchAll((error) =>
      Effect.logWarning(`Rate-limit decisions past their retention not dropped: ${error.message}`)
    )
  )

/** The store on the server `options.url` names, migrated; its writer and sweeper live as long as the scope. */
export const make = (options: Options) =>
  Effect.gen(function*() {
    const maxPerInsert = Math.max(1, options.maxEventsPerInsert ?? 100_000)
    const maxBuffered = Math.max(maxPerInsert, options.maxBufferedEvents ?? 1_000_000)
    const retentionDays = Math.max(0, options.decisionRetentionDays ?? DEFAULT_DECISION_RETENTION_DAYS)
    const { database, db } = yield* Database.open(options)

    const offer = yield* GroupCommit.make<RatelimitEvent>({
      write: (events) => db.insert("ratelimits", events.map(row)),
      maxEvents: maxPerInsert,
      maxBuffered
    })

    if (Number.isFinite(retentionDays)) {
      yield* sweep(db, database, retentionDays)
      yield* Effect.forkScoped(Effect.forever(Effect.delay(sweep(db, database, retentionDays), SWEEP_INTERVAL)))
    }

    const hitsOf = (workspaceId: string, ids: ReadonlyArray<string>) =>
      db.query(
        sql`SELECT override_id, countMerge(hits), maxMerge(last_hit_at) FROM rl_override_hits
          WHERE workspace_id = ${workspaceId} AND has(${ids}, override_id) GROUP BY override_id`
      )

    return RatelimitStore.of({
      append: (events) => offer(events),
      aggregate: Aggregate.make(db, "rl_"),
      overrideHits: (workspaceId, overrideIds) =>
        Effect.gen(function*() {
          const ids = [...new Set(overrideIds)]
          const chunks: Array<ReadonlyArray<string>> = []
          for (let i = 0; i < ids.length; i += HIT_IDS_PER_QUERY) chunks.push(ids.slice(i, i + HIT_IDS_PER_QUERY))
          const answers = yield* Effect.forEach(chunks, (chunk) => hitsOf(workspaceId, chunk), { concurrency: 4 })
          const out = new Map<string, OverrideHits>()
          for (const rows of answers) {
            for (const [id, hits, lastHitAt] of rows as Array<[string, number, number]>) {
              out.set(id, { hits: Number(hits), lastHitAt: Number(lastHitAt) })
            }
          }
          return out
        }),
      decisions: (workspaceId, namespaceId, { identifier, limit }) =>
        Effect.gen(function*() {
          if (limit <= 0) return []
          // Ties in time come in no particular order: ClickHouse keeps no order of arrival.
          const newest = (fromHour: number | undefined) =>
            db.query(
              `SELECT ${DECISION_COLUMNS} FROM ratelimits ` +
                sql`WHERE workspace_id = ${workspaceId} AND namespace_id = ${namespaceId}` +
                (identifier === undefined ? "" : sql` AND identifier = ${identifier}`) +
                (fromHour === undefined ? "" : sql` AND hour >= ${fromHour}`) +
                sql` ORDER BY time DESC LIMIT ${limit}`
            )
          const hour = Math.floor((yield* Clock.currentTimeMillis) / Time.HOUR)
          // Every decision outside a window is older than all inside it: a window holding `limit` has the newest.
          for (const back of RECENT_HOURS) {
            const rows = yield* newest(hour - back)
            if (rows.length >= limit) return rows.map((r) => fromRow(workspaceId, namespaceId, r))
          }
          return (yield* newest(undefined)).map((r) => fromRow(workspaceId, namespaceId, r))
        }),
      // The answer is parsed whole before it is columnized: a row array of seven values, strings and all.
      scanRowBytes: 384,
      scan: (scope: ScanScope) =>
        Effect.gen(function*() {
          const where = scopeFilter(scope, yield* Clock.currentTimeMillis, retentionDays)
          if (where === undefined) return []
          const maxRows = Math.max(0, Math.min(Math.floor(scope.maxRows), Number.MAX_SAFE_INTEGER - 1))
          const rows = yield* db.query(`SELECT ${SCAN_COLUMNS} FROM ratelimits WHERE ${where} LIMIT ${maxRows + 1}`)
          if (rows.length > maxRows) return yield* Effect.fail(scanTooLarge(scope.maxRows))
          return rows.length === 0 ? [] : [scanColumns(rows)]
        })
    })
  })

/**
 * The decisions of a scope at `now`, as a WHERE; undefined when it holds none. Days past the
 * retention that no sweep has dropped yet are not answered.
 */
const scopeFilter = (scope: Omit<ScanScope, "maxRows">, now: number, retentionDays: number): string | undefined => {
  // Times are whole ms: `time >= from` is `time >= ceil(from)`, and so for `to`.
  const kept = Number.isFinite(retentionDays) ? now - retentionDays * Time.DAY : -Infinity
  const from = Math.ceil(Math.max(scope.from, kept, Number.MIN_SAFE_INTEGER))
  const to = Math.ceil(Math.min(scope.to, Number.MAX_SAFE_INTEGER))
  const within = scope.within === undefined ? undefined : [...new Set(scope.within)]
  if (within?.length === 0 || !(from < to)) return undefined
  // The hours bound the primary key's range (and the day partitions read); `time` the rows.
  return sql`workspace_id = ${scope.workspaceId}` +
    (within === undefined ? "" : ` AND namespace_id IN (${within.map((id) => sql`${id}`).join(", ")})`) +
    sql` AND hour >= ${Math.max(0, Math.floor(from / Time.HOUR))}` +
    sql` AND hour <= ${Math.max(0, Math.floor((to - 1) / Time.HOUR))}` +
    sql` AND time >= ${from} AND time < ${to}`
}

/**
 * `ratelimits_v1` (its public columns, in order) for a scope at `now`, for a query run in
 * ClickHouse (`ClickhouseSql`): the same rows `scan` reads, unbounded.
 */
export const sourceText = (scope: Omit<ScanScope, "maxRows">, now: number, retentionDays: number): string =>
  "SELECT time, workspace_id, namespace_id, identifier, passed, latency_us / 1000 AS latency, override_id " +
  `FROM ratelimits WHERE ${scopeFilter(scope, now, retentionDays) ?? "0"}`

/** The store as a scoped layer. */
export const layer = (options: Options): Layer.Layer<RatelimitStore, StorageError> =>
  Layer.scoped(RatelimitStore, make(options))
