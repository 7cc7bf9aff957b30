/**
 * The rate-limit half of the Storage port in SQLite.
 *
 * - Counts: decisions are counted through `RatelimitEvent`'s projection onto verifications by the
 *   verification store's own parts (`internal/`: writer, compaction, hot range, planner), on
 *   tables of their own (`rl_`, see `internal/Tables`), so they are counted exactly, and as fast,
 *   as verifications; and kept for good.
 * - Details: every decision in full in `rl_decisions`, written in the transaction of its counts,
 *   kept `decisionDays`; older rows are deleted in the background, after commits and when the
 *   writer idles. They are what `decisions` answers and what `scan` hands to SQL analytics.
 * - Override hits: per (workspace, override), summed per batch and added in the same transaction.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { COUNTER_COLUMNS } from "@keymeter/core/Aggregation"
import { QueryTooLarge } from "@keymeter/core/Errors"
import type { StorageError } from "@keymeter/core/Errors"
import type { RatelimitColumns, ScanScope } from "@keymeter/core/EventScan"
import * as GroupCommit from "@keymeter/core/GroupCommit"
import type { HitTally, OverrideHits, RatelimitEvent } from "@keymeter/core/RatelimitEvent"
import { asVerification, SourceIndex, Sources, tallyHit } from "@keymeter/core/RatelimitEvent"
import { RatelimitStore } from "@keymeter/core/Storage"
import * as Time from "@keymeter/core/Time"
import type { Verification } from "@keymeter/core/Verification"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Compaction from "./internal/Compaction.js"
import * as Dictionaries from "./internal/Dictionaries.js"
import { HotIndex, nextMacrotask } from "./internal/HotIndex.js"
import * as HotRangeLoader from "./internal/HotRangeLoader.js"
import * as Reader from "./internal/Reader.js"
import * as Retention from "./internal/Retention.js"
import * as Rows from "./internal/Rows.js"
import * as Tables from "./internal/Tables.js"
import * as Writer from "./internal/Writer.js"
import { storageError } from "./SqliteCatalog.js"
import { DEFAULT_HOT_DAYS, HotRange, refuseWrite } from "./SqliteVerificationStore.js"

/** How the store is run. */
export interface Options {
  /** When closed days are rolled up into the day tables. */
  readonly compaction?: Compaction.Options | undefined
  /** Days of each namespace's counts also held in memory (see `SqliteVerificationStore.Options`). */
  readonly hotDays?: number | undefined
  /**
   * Days each decision is kept in full for `decisions`, back from now (default 30; `Infinity`
   * keeps them); counts and override hits are kept for good.
   */
  readonly decisionDays?: number | undefined
  /** Reads only, beside the file's writer (see `SqliteVerificationStore.Options.readOnly`). */
  readonly readOnly?: boolean | undefined
}

/** Default of {@link Options.decisionDays}. */
export const DEFAULT_DECISION_DAYS = 30

/** Events one transaction takes at most; more wait for the next. */
const MAX_EVENTS_PER_TRANSACTION = 100_000

const DECISION_COLUMNS = [
  "p",
  "time",
  "hour",
  "identifier",
  "passed",
  "\"limit\"",
  "duration",
  "remaining",
  "cost",
  "override",
  "source",
  "latency",
  "detail"
]
const decisionTexts = new Map<number, string>()
const decisionText = (rows: number) => {
  let text = decisionTexts.get(rows)
  if (text === undefined) decisionTexts.set(rows, text = Rows.insertText("rl_decisions", DECISION_COLUMNS, rows))
  return text
}

const HIT_COLUMNS = ["workspace_id", "override_id", "hits", "last_hit_at"]
const hitTexts = new Map<number, string>()
const hitText = (rows: number) => {
  let text = hitTexts.get(rows)
  if (text === undefined) {
    hitTexts.set(
      rows,
      text = Rows.insertText(
        "rl_override_hits",
        HIT_COLUMNS,
        rows,
        " ON CONFLICT DO UPDATE SET hits = hits + excluded.hits, last_hit_at = max(last_hit_at, excluded.last_hit_at)"
      )
    )
  }
  return text
}

const READ_COLUMNS = "time, identifier, passed, \"limit\", duration, remaining, cost, override, source, latency, detail"
// Indexes named: without statistics, SQLite may prefer scanning the namespace's (p, time) range.
const LATEST = `SELECT ${READ_COLUMNS} FROM rl_decisions INDEXED BY rl_decisions_time ` +
  "WHERE p = ? AND time >= ? ORDER BY time DESC, rowid DESC LIMIT ?"
const LATEST_OF_IDENTIFIER_BETWEEN = `SELECT ${READ_COLUMNS} FROM rl_decisions INDEXED BY rl_decisions_time ` +
  "WHERE p = ? AND time >= ? AND time < ? AND identifier = ? ORDER BY time DESC, rowid DESC LIMIT ?"
/** The hours holding decisions of an identifier (a key of the projection), newest first, with their counts. */
const HOURS_OF_IDENTIFIER = `SELECT hour, sum(${COUNTER_COLUMNS.join(" + ")}) FROM ${Tables.ratelimits.rollups.hour} ` +
  "WHERE p = ? AND hour IN (SELECT value FROM json_each(?)) AND key = ? GROUP BY hour ORDER BY hour DESC"
/**
 * A page of a partition's decisions of a time range, for `scan`: from the last row read on (rows
 * of its time after it, then later times), in the (time, rowid) order the index holds.
 */
const SCAN = "SELECT time, identifier, passed, latency, override, rowid FROM rl_decisions " +
  "INDEXED BY rl_decisions_time WHERE p = ? AND time >= ? AND time < ? AND (time > ? OR rowid > ?) " +
  "ORDER BY time, rowid LIMIT ?"

/** Rows a page of `scan` reads at most: each holds the event loop while SQLite reads it. */
const SCAN_PAGE_ROWS = 1_024

type DecisionRow = [
  time: number,
  identifier: number,
  passed: number,
  limit: number,
  duration: number,
  remaining: number,
  cost: number,
  override: number,
  source: number,
  latency: number,
  detail: string | null
]

/**
 * The latest decisions of an identifier (by code) in a namespace, from `fromHour` on. The hour
 * rollup tells which hours hold its decisions, and how many (one seek per hour); those hours are
 * read newest first, each run of adjacent ones as one range of the (p, time) index (every
 * decision of the namespace in it is looked at), until `limit` are found.
 */
const latestOfIdentifier = (
  sql: SqlClient.SqlClient,
  partition: Dictionaries.Partition,
  code: number,
  limit: number,
  fromHour: number
) =>
  Effect.gen(function*() {
    const out: Array<ReadonlyArray<unknown>> = []
    const first = Math.max(fromHour, partition.minHour)
    const last = partition.maxHour
    if (first > last) return out
    const hours = JSON.stringify(Array.from({ length: last - first + 1 }, (_, i) => first + i))
    const counted = yield* sql.unsafe(HOURS_OF_IDENTIFIER, [partition.no, hours, code]).values
    let next = 0
    while (next < counted.length && out.length < limit) {
      const wanted = limit - out.length
      // Newest first: a run of adjacent hours, down to the one that holds enough.
      const newest = counted[next]![0] as number
      let oldest = newest
      let rows = counted[next++]![1] as number
      while (next < counted.length && rows < wanted && counted[next]![0] === oldest - 1) {
        oldest--
        rows += counted[next++]![1] as number
      }
      const found = yield* sql.unsafe(
        LATEST_OF_IDENTIFIER_BETWEEN,
        [partition.no, oldest * Time.HOUR, (newest + 1) * Time.HOUR, code, wanted]
      ).values
      for (const row of found) out.push(row)
    }
    return out
  })

/** The failure of a scan whose scope holds more than `maxRows` decisions. */
const scanTooLarge = (maxRows: number) =>
  new QueryTooLarge({
    message: `The scope holds more than ${maxRows} rate-limit decisions (the row budget of a scan); narrow it ` +
      "with a shorter window or fewer namespaces"
  })

/** Codes of one scan's dictionary: each value's code in the scan, by its code in the store. */
class ScanDictionary {
  readonly values: Array<string>
  private readonly codes = new Map<number, number>()
  constructor(private readonly decode: (code: number) => string, none?: number) {
    this.values = []
    if (none !== undefined) this.code(none)
  }
  code(stored: number): number {
    let code = this.codes.get(stored)
    if (code === undefined) {
      code = this.values.length
      this.codes.set(stored, code)
      this.values.push(this.decode(stored))
    }
    return code
  }
}

/**
 * A partition's rows of `SCAN` as columns, with dictionaries of their own: only the identifiers
 * and overrides of these rows, decoded.
 */
const scanColumns = (
  dictionaries: Dictionaries.Dictionaries,
  partition: Dictionaries.Partition,
  rows: ReadonlyArray<ReadonlyArray<unknown>>
): RatelimitColumns => {
  const n = rows.length
  const time = new Float64Array(n)
  const identifier = new Uint32Array(n)
  const passed = new Uint8Array(n)
  const latency = new Float64Array(n)
  const override = new Uint32Array(n)
  const identifiers = new ScanDictionary((code) => dictionaries.keyNames[code] ?? "")
  // Code 0, no override, is "".
  const overrides = new ScanDictionary((code) => (code === 0 ? "" : dictionaries.identityList[code]?.id ?? ""), 0)
  for (let i = 0; i < n; i++) {
    const row = rows[i]!
    time[i] = row[0] as number
    identifier[i] = identifiers.code(row[1] as number)
    passed[i] = row[2] === 0 ? 0 : 1
    latency[i] = row[3] as number
    override[i] = overrides.code(row[4] as number)
  }
  return {
    length: n,
    time,
    namespaceId: { codes: new Uint8Array(n), values: [partition.apiId] },
    identifier: { codes: identifier, values: identifiers.values },
    passed,
    latency,
    overrideId: { codes: override, values: overrides.values }
  }
}

/**
 * The rows of a batch's decisions (but those already past their days) and its override hits,
 * summed per override, inside the transaction of its counts: `Writer` has handed out the codes of
 * `projected` (the batch's projection) by then.
 */
const writeDetails = (
  sql: SqlClient.SqlClient,
  dictionaries: Dictionaries.Dictionaries,
  events: ReadonlyArray<RatelimitEvent>,
  projected: ReadonlyArray<Verification>,
  keptFrom: number
) =>
  Effect.suspend(() => {
    const decisions: Array<unknown> = []
    const hits: HitTally = new Map()
    for (let i = 0; i < events.length; i++) {
      const event = events[i]!
      const { identity } = projected[i]!
      if (event.time >= keptFrom) {
        decisions.push(
          dictionaries.partition(event.workspaceId, event.namespaceId)!.no,
          event.time,
          Math.floor(event.time / Time.HOUR),
          dictionaries.knownKey(event.identifier)!,
          event.passed ? 1 : 0,
          event.limit,
          event.duration,
          event.remaining,
          event.cost,
          identity === undefined ? 0 : dictionaries.identityCode(identity),
          SourceIndex.get(event.source)!,
          event.latency,
          event.detail ?? null
        )
      }
      tallyHit(hits, event)
    }
    const hitRows: Array<unknown> = []
    for (const [workspaceId, ofWorkspace] of hits) {
      for (const [overrideId, counted] of ofWorkspace) {
        hitRows.push(workspaceId, overrideId, counted.hits, counted.lastHitAt)
      }
    }
    return Effect.zipRight(
      Rows.run(sql, decisionText, DECISION_COLUMNS.length, decisions),
      Rows.run(sql, hitText, HIT_COLUMNS.length, hitRows)
    )
  })

/** The store on the SqlClient in context (migrated); its writer and loads live as long as the scope. */
export const make = (options: Options = {}) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const dictionaries = yield* Effect.catchAll(Dictionaries.load(Tables.ratelimits), storageError)
    const hotDays = Math.max(0, Math.floor(options.hotDays ?? DEFAULT_HOT_DAYS))
    const hot = hotDays === 0 ? undefined : HotIndex.make(dictionaries, hotDays)
    // A commit and its append to the hot index are one step for the background loads (see HotIndex).
    const exclusive = (yield* Effect.makeSemaphore(1)).withPermits(1)
    const hotRange = yield* HotRangeLoader.make({ index: hot, dictionaries, exclusive })
    const compaction = Compaction.make(sql, dictionaries, options.compaction)
    const retention = Retention.make(sql, dictionaries, {
      table: "rl_decisions",
      days: Math.max(0, options.decisionDays ?? DEFAULT_DECISION_DAYS),
      what: "rate-limit decisions"
    })

    // Bumped by every commit: this process is the file's only writer (the writer lock).
    let revision = 0
    const commit = (events: ReadonlyArray<RatelimitEvent>) =>
      Effect.gen(function*() {
        const projected = events.map(asVerification)
        const keptFrom = yield* retention.keptFrom
        yield* Effect.catchAll(
          Writer.commit(sql, dictionaries, projected, writeDetails(sql, dictionaries, events, projected, keptFrom)),
          storageError
        )
        retention.written(events.length)
        yield* hotRange.committed(projected)
      }).pipe(
        // Once the hot index holds the batch too, so no answer without it is kept as current.
        Effect.ensuring(Effect.sync(() => revision++)),
        exclusive
      )
    const offer = options.readOnly === true ? refuseWrite : yield* GroupCommit.make<RatelimitEvent>({
      write: (events) => commit(events),
      maxEvents: MAX_EVENTS_PER_TRANSACTION,
      afterWrite: Effect.zipRight(compaction.due(false), retention.sweep),
      whenIdle: { ms: compaction.idleMs, run: Effect.zipRight(compaction.due(true), retention.sweep) }
    })
    const read = Reader.make(sql, dictionaries, hot)

    const store = RatelimitStore.of({
      append: (events) => offer(events),
      aggregate: read,
      overrideHits: (workspaceId, overrideIds) =>
        Effect.gen(function*() {
          const out = new Map<string, OverrideHits>()
          if (overrideIds.length === 0) return out
          // One JSON parameter: the statement text does not depend on the list's length.
          const rows = yield* sql.unsafe(
            "SELECT override_id, hits, last_hit_at FROM rl_override_hits WHERE workspace_id = ? " +
              "AND override_id IN (SELECT value FROM json_each(?))",
            [workspaceId, JSON.stringify(overrideIds)]
          ).values
          for (const [id, hits, lastHitAt] of rows) {
            out.set(id as string, { hits: hits as number, lastHitAt: lastHitAt as number })
          }
          return out
        }).pipe(Effect.catchTag("SqlError", storageError)),
      decisions: (workspaceId, namespaceId, { identifier, limit }) =>
        Effect.gen(function*() {
          const partition = dictionaries.partition(workspaceId, namespaceId)
          const code = identifier === undefined ? undefined : dictionaries.knownKey(identifier)
          if (partition === undefined || limit <= 0 || (identifier !== undefined && code === undefined)) return []
          // Rows past their days that no sweep has deleted yet are not answered.
          const keptFrom = Math.max(Number.MIN_SAFE_INTEGER, yield* retention.keptFrom)
          const rows = code === undefined
            ? yield* sql.unsafe(LATEST, [partition.no, keptFrom, limit]).values
            : yield* latestOfIdentifier(sql, partition, code, limit, Math.floor(keptFrom / Time.HOUR))
          return rows.map((row): RatelimitEvent => {
            const [time, key, passed, limit, duration, remaining, cost, override, source, latency, detail] =
              row as DecisionRow
            return {
              time,
              workspaceId,
              namespaceId,
              identifier: dictionaries.keyNames[key]!,
              passed: passed !== 0,
              limit,
              duration,
              remaining,
              cost,
              overrideId: override === 0 ? undefined : dictionaries.identityList[override]!.id,
              source: Sources[source]!,
              latency,
              detail: detail ?? undefined
            }
          })
        }).pipe(Effect.catchTag("SqlError", storageError)),
      // A scanned row: the statement's row array (freed once columnized), then time, latency, codes.
      scanRowBytes: 128,
      // The counts are kept for good, the decisions `scan` reads for their days: the same from then on.
      scanCountsFrom: retention.keptFrom,
      countedIn: (workspaceId) => Effect.sync(() => dictionaries.partitionsOf(workspaceId).map((p) => p.apiId)),
      scan: (scope: ScanScope) =>
        Effect.gen(function*() {
          // Rows past their days that no sweep has deleted yet are not answered (as by `decisions`).
          const from = Math.max(scope.from, yield* retention.keptFrom, Number.MIN_SAFE_INTEGER)
          const to = Math.min(scope.to, Number.MAX_SAFE_INTEGER)
          const within = scope.within === undefined ? undefined : new Set(scope.within)
          if (within?.size === 0 || !(from < to)) return []
          // Page by page, each under `exclusive` (the lock the writer commits under, so never inside a
          // batch being written), serving what arrived in between: a month of decisions is millions.
          const maxRows = Math.max(0, Math.min(Math.floor(scope.maxRows), Number.MAX_SAFE_INTEGER - 1))
          const read = Effect.gen(function*() {
            const out: Array<RatelimitColumns> = []
            let count = 0
            for (const partition of dictionaries.partitionsOf(scope.workspaceId)) {
              if (within !== undefined && !within.has(partition.apiId)) continue
              let lastTime = from - 1
              let lastRowid = 0
              for (;;) {
                const limit = Math.min(SCAN_PAGE_ROWS, maxRows + 1 - count)
                const after = [partition.no, Math.max(from, lastTime), to, lastTime, lastRowid, limit]
                const rows = yield* exclusive(sql.unsafe(SCAN, after).values)
                count += rows.length
                if (count > maxRows) return undefined
                if (rows.length === 0) break
                out.push(scanColumns(dictionaries, partition, rows))
                if (rows.length < limit) break
                const last = rows[rows.length - 1]!
                lastTime = last[0] as number
                lastRowid = last[5] as number
                yield* (scope.pause ?? nextMacrotask)
              }
            }
            return out
          })
          const found = yield* Effect.catchTag(read, "SqlError", storageError)
          return found === undefined ? yield* Effect.fail(scanTooLarge(scope.maxRows)) : found
        }),
      revision: () => revision
    })
    return Context.make(RatelimitStore, store).pipe(
      Context.add(HotRange, HotRange.of({ loaded: hotRange.loaded, events: hotRange.events }))
    )
  })

/**
 * The store as a scoped layer over the SqlClient in context, with the hot range of its counts
 * (`SqliteStorage.layer` joins it with the verifications').
 */
export const layer = (
  options: Options = {}
): Layer.Layer<RatelimitStore | HotRange, StorageError, SqlClient.SqlClient> => Layer.scopedContext(make(options))
