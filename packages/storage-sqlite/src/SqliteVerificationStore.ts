/**
 * The verification half of the Storage port in SQLite.
 *
 * Ingest: concurrent `append` calls queue up and a single writer stores them together in one
 * transaction (group commit): each call completes once its events are committed; a failed
 * transaction fails every call in it and stores none of their events. A transaction writes the
 * hourly rollups (`r_hour`, `r_hour_total`), and for events of days already compacted, the day
 * tables too.
 *
 * Compaction: once an api has data from a later day, the closed days are rolled up from the hour
 * rows into the day tables, set-based, a few days per transaction.
 *
 * Reads: windows inside the hot range (the last `hotDays` days of each api, loaded in the
 * background after open) are answered from memory by `internal/HotIndex`; the rest by
 * `internal/Planner`, which picks day rows for compacted whole days and hour rows for the rest.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { AggregationQuery, AggregationResult } from "@keymeter/core/Aggregation"
import { COUNTER_COLUMNS, OUTCOMES, tooLarge } from "@keymeter/core/Aggregation"
import type { StorageError } from "@keymeter/core/Errors"
import * as GroupCommit from "@keymeter/core/GroupCommit"
import { VerificationStore } from "@keymeter/core/Storage"
import * as Time from "@keymeter/core/Time"
import type { Verification } from "@keymeter/core/Verification"
import { OutcomeIndex } from "@keymeter/core/Verification"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import type { Partition } from "./internal/Dictionaries.js"
import { Dictionaries } from "./internal/Dictionaries.js"
import { HotIndex } from "./internal/HotIndex.js"
import * as Planner from "./internal/Planner.js"
import { RollupRows, upsert } from "./internal/Rollup.js"
import { storageError } from "./SqliteCatalog.js"

/** Events one transaction takes at most; more wait for the next. */
const MAX_EVENTS_PER_TRANSACTION = 100_000

/** When closed days are rolled up into the day tables. */
export interface CompactionOptions {
  /** An api is compacted once it has this many closed days pending (default 7). */
  readonly batchDays?: number | undefined
  /** ... or once its oldest pending day has waited this long (default 60 s). */
  readonly maxWaitMs?: number | undefined
  /** ... or once the writer has had nothing to do for this long (default 1 s). */
  readonly idleMs?: number | undefined
}

/** How the store is run. */
export interface Options {
  /** When closed days are rolled up into the day tables. */
  readonly compaction?: CompactionOptions | undefined
  /**
   * Days of each api (counted back from its newest event) also held in memory, ~25 bytes per
   * event, to answer queries over them at memory speed (default 92; 0 keeps nothing in memory).
   */
  readonly hotDays?: number | undefined
}

/**
 * The in-memory hot range of a SQLite store. It loads in the background after open, so the store
 * serves at once; until an api's hours are loaded, the rollups answer its queries.
 */
export class HotRange extends Context.Tag("@keymeter/storage-sqlite/HotRange")<HotRange, {
  /**
   * Completes once no load is under way (the first after open, or the rebuild that drops an api's
   * aged days): at once with `hotDays: 0`, and also when a load failed (SQLite then answers).
   */
  readonly loaded: Effect.Effect<void>
  /** Events held in memory. */
  readonly events: Effect.Effect<number>
}>() {}

/** Default of {@link Options.hotDays}: a quarter, so 30- and 90-day dashboards stay hot. */
export const DEFAULT_HOT_DAYS = 92

/** Days one compaction transaction rolls up at most, so ingest is never held up for long. */
const MAX_DAYS_PER_COMPACTION = 7

const loadDictionaries = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const dictionaries = new Dictionaries()
  const bounds = new Map<number, { min: number; max: number }>()
  for (const [p, min, max] of yield* sql.unsafe("SELECT p, min(hour), max(hour) FROM r_hour_total GROUP BY p").values) {
    bounds.set(p as number, { min: min as number, max: max as number })
  }
  for (
    const [no, workspaceId, apiId, compacted] of yield* sql.unsafe(
      "SELECT no, workspace_id, api_id, compacted_through FROM v_partitions"
    ).values
  ) {
    const b = bounds.get(no as number)
    dictionaries.loadPartition({
      no: no as number,
      workspaceId: workspaceId as string,
      apiId: apiId as string,
      compactedThrough: compacted as number,
      minHour: b?.min ?? -1,
      maxHour: b?.max ?? -1
    })
  }
  for (const [no, value] of yield* sql.unsafe("SELECT no, value FROM v_keys").values) {
    dictionaries.loadKey(no as number, value as string)
  }
  for (
    const [no, id, externalId] of yield* sql.unsafe("SELECT no, identity_id, external_id FROM v_identities").values
  ) {
    dictionaries.loadIdentity(no as number, { id: id as string, externalId: externalId as string })
  }
  for (const [no, tags] of yield* sql.unsafe("SELECT no, tags FROM v_tagsets WHERE no > 0").values) {
    dictionaries.loadTagset(no as number, tags as string)
  }
  return dictionaries
})

/** Inserts rows in statements of at most 200 rows. */
const insertRows = (
  sql: SqlClient.SqlClient,
  table: string,
  columns: ReadonlyArray<string>,
  rows: ReadonlyArray<ReadonlyArray<unknown>>
) =>
  Effect.forEach(
    Array.from({ length: Math.ceil(rows.length / 200) }, (_, i) => rows.slice(i * 200, i * 200 + 200)),
    (chunk) =>
      sql.unsafe(
        `INSERT INTO ${table} (${columns.join(", ")}) VALUES ${
          chunk.map(() => `(${columns.map(() => "?").join(", ")})`).join(", ")
        }`,
        chunk.flat()
      ),
    { discard: true }
  )

/**
 * The store on the SqlClient in context (migrated); its writer lives as long as the scope.
 * Compaction runs in spans of days (see {@link CompactionOptions}): one small transaction per api
 * per closed day cost more than the ingest itself during bulk loads.
 */
export const make = (options: Options = {}) =>
  Effect.gen(function*() {
    const batchDays = Math.max(1, options.compaction?.batchDays ?? 7)
    const maxWaitMs = options.compaction?.maxWaitMs ?? 60_000
    const idleMs = Math.max(1, options.compaction?.idleMs ?? 1_000)
    const hotDays = Math.max(0, Math.floor(options.hotDays ?? DEFAULT_HOT_DAYS))
    /** When each api's oldest pending closed day was first seen. */
    const pendingSince = new Map<Partition, number>()
    const sql = yield* SqlClient.SqlClient
    const dictionaries = yield* Effect.catchAll(loadDictionaries, storageError)
    const hot = hotDays === 0 ? undefined : HotIndex.make(dictionaries, hotDays)
    // A commit and its append to the hot index are one step for the background loads (see HotIndex).
    const exclusive = (yield* Effect.makeSemaphore(1)).withPermits(1)
    const scope = yield* Effect.scope
    /** Completed when no load of the hot index is under way; replaced when one starts. */
    let loadsDone = yield* Deferred.make<void>()
    yield* Deferred.succeed(loadsDone, undefined)
    /** Runs the hot index's pending loads in the background (the first one, or a rebuild). */
    const startLoad = (index: HotIndex, what: string) =>
      Effect.gen(function*() {
        const done = loadsDone = yield* Deferred.make<void>()
        yield* index.load(exclusive).pipe(
          Effect.provideService(SqlClient.SqlClient, sql),
          Effect.timed,
          Effect.flatMap(([took, events]) =>
            events === 0
              ? Effect.void
              : Effect.logInfo(
                `Loaded ${what}: ${events} events in memory in ${(Duration.toMillis(took) / 1000).toFixed(1)} s`
              )
          ),
          Effect.catchAll((error) =>
            Effect.logError(`Loading ${what} failed; SQLite answers what it would have`, error)
          ),
          Effect.ensuring(Deferred.succeed(done, undefined)),
          Effect.forkIn(scope)
        )
      })
    if (hot !== undefined) yield* startLoad(hot, "the hot range")
    // Days that age out of the hot range are dropped by rebuilding an api once it holds an eighth
    // more days than hotDays: the rebuild costs a load of the api, so not every day.
    const slackDays = Math.max(1, Math.ceil(hotDays / 8))
    const rebuildDue = Effect.suspend(() => {
      const no = hot?.startRebuild(slackDays)
      if (no === undefined) return Effect.void
      const partition = dictionaries.partitionsByNo[no]!
      return startLoad(
        hot!,
        `the hot range of ${partition.workspaceId}/${partition.apiId} again, without its older days`
      )
    })

    /** Hands a committed batch to the hot index; should that fail, the rollups answer from then on. */
    const feedHot = (events: ReadonlyArray<Verification>) =>
      hot === undefined ? Effect.void : Effect.try(() => hot.append(events)).pipe(
        Effect.catchAll((error) =>
          Effect.logError("the in-memory hot index failed; queries are answered from SQLite", error)
        )
      )

    /** Stores a transaction's events: dictionary entries, hour rollups, and day rows of late events. */
    const write = (events: ReadonlyArray<Verification>) =>
      Effect.gen(function*() {
        const hour = new RollupRows("r_hour")
        const hourTotal = new RollupRows("r_hour_total")
        const late = {
          day: new RollupRows("r_day"),
          dayTotal: new RollupRows("r_day_total"),
          dayKey: new RollupRows("r_day_key"),
          dayIdentity: new RollupRows("r_day_identity"),
          dayTagset: new RollupRows("r_day_tagset")
        }
        for (const event of events) {
          const partition = dictionaries.partitionFor(event.workspaceId, event.apiId)
          const h = Math.floor(event.time / Time.HOUR)
          dictionaries.seeHour(partition, h)
          const p = partition.no
          const key = dictionaries.keyCode(event.keyId)
          const identity = event.identity === undefined ? 0 : dictionaries.identityCode(event.identity)
          const tagset = dictionaries.tagsetCode(event.tags)
          const outcome = OutcomeIndex.get(event.outcome)!
          hour.add([p, h, key, identity, tagset], outcome)
          hourTotal.add([p, h], outcome)
          const day = Math.floor(h / 24)
          if (day <= partition.compactedThrough) {
            late.day.add([p, day, key, identity, tagset], outcome)
            late.dayTotal.add([p, day], outcome)
            late.dayKey.add([p, key, day], outcome)
            late.dayIdentity.add([p, identity, day], outcome)
            late.dayTagset.add([p, tagset, day], outcome)
          }
        }
        const pending = dictionaries.pending
        yield* insertRows(
          sql,
          "v_partitions",
          ["no", "workspace_id", "api_id"],
          pending.partitions.map((p) => [p.no, p.workspaceId, p.apiId])
        )
        yield* insertRows(sql, "v_keys", ["no", "value"], pending.keys)
        yield* insertRows(
          sql,
          "v_identities",
          ["no", "identity_id", "external_id"],
          pending.identities.map(([no, i]) => [no, i.id, i.externalId])
        )
        yield* insertRows(sql, "v_tagsets", ["no", "tags"], pending.tagsets)
        yield* upsert(sql, hour)
        yield* upsert(sql, hourTotal)
        for (const rows of Object.values(late)) if (rows.size > 0) yield* upsert(sql, rows)
      })

    /** One transaction for `events`; the dictionaries forget its entries when it fails. */
    const commit = (events: ReadonlyArray<Verification>) =>
      sql.withTransaction(write(events)).pipe(
        Effect.onExit((exit) =>
          Effect.sync(() => (Exit.isSuccess(exit) ? dictionaries.commit() : dictionaries.rollback()))
        ),
        Effect.catchAll(storageError),
        Effect.zipLeft(Effect.suspend(() => feedHot(events))),
        Effect.zipLeft(rebuildDue),
        exclusive
      )

    /** Rolls closed days of `partition` up into the day tables, a few days per transaction. */
    const compact = (partition: Partition) =>
      Effect.gen(function*() {
        const through = Math.floor(partition.maxHour / 24) - 1
        while (partition.compactedThrough < through) {
          // Start at the next day holding data: gaps (or the years before the first event) are skipped.
          const [[next]] = yield* sql.unsafe(
            "SELECT min(hour) FROM r_hour_total WHERE p = ? AND hour >= ?",
            [partition.no, (partition.compactedThrough + 1) * 24]
          ).values
          const from = next === null ? through + 1 : Math.floor((next as number) / 24)
          const to = Math.min(through, from + MAX_DAYS_PER_COMPACTION - 1)
          if (from > through) {
            yield* sql.unsafe("UPDATE v_partitions SET compacted_through = ? WHERE no = ?", [through, partition.no])
            partition.compactedThrough = through
            break
          }
          const p = partition.no
          const sums = COUNTER_COLUMNS.map((c) => `sum(${c})`).join(", ")
          const counters = COUNTER_COLUMNS.join(", ")
          yield* sql.withTransaction(Effect.all([
            sql.unsafe(
              `INSERT INTO r_day (p, day, key, identity, tagset, ${counters}) SELECT p, hour / 24, key, identity, tagset, ${sums}
             FROM r_hour WHERE p = ? AND hour BETWEEN ? AND ? GROUP BY hour / 24, key, identity, tagset`,
              [p, from * 24, to * 24 + 23]
            ),
            ...([["r_day_total", ["day"]], ["r_day_key", ["key", "day"]], ["r_day_identity", ["identity", "day"]], [
              "r_day_tagset",
              ["tagset", "day"]
            ]] as const).map(([table, dims]) =>
              sql.unsafe(
                `INSERT INTO ${table} (p, ${dims.join(", ")}, ${counters}) SELECT p, ${dims.join(", ")}, ${sums}
               FROM r_day WHERE p = ? AND day BETWEEN ? AND ? GROUP BY ${dims.join(", ")}`,
                [p, from, to]
              )
            ),
            sql.unsafe("UPDATE v_partitions SET compacted_through = ? WHERE no = ?", [to, p])
          ], { discard: true }))
          partition.compactedThrough = to
        }
      }).pipe(
        Effect.catchAll((error) => Effect.logWarning("compaction failed; it is retried after the next write", error))
      )

    /** Compacts the apis that are due; every api with closed days when `force` (the writer is idle). */
    const compactDue = (force: boolean) =>
      Effect.suspend(() => {
        const now = Date.now()
        const due: Array<Partition> = []
        for (const partition of dictionaries.partitionsByNo) {
          if (partition === undefined) continue
          // Closed days holding data that are not compacted yet (days before the first event do not count).
          const firstPending = Math.max(partition.compactedThrough + 1, Math.floor(partition.minHour / 24))
          const pending = Math.floor(partition.maxHour / 24) - firstPending
          if (pending <= 0) {
            pendingSince.delete(partition)
            continue
          }
          const since = pendingSince.get(partition) ?? now
          pendingSince.set(partition, since)
          if (force || pending >= batchDays || now - since >= maxWaitMs) due.push(partition)
        }
        return Effect.forEach(
          due,
          (partition) => Effect.zipRight(compact(partition), Effect.sync(() => pendingSince.delete(partition))),
          {
            discard: true
          }
        )
      })

    // The writer: one transaction per round of queued calls; it compacts what closed after each
    // commit, and everything pending whenever it idles.
    const offer = yield* GroupCommit.make({
      write: commit,
      maxEvents: MAX_EVENTS_PER_TRANSACTION,
      afterWrite: compactDue(false),
      whenIdle: { ms: idleMs, run: compactDue(true) }
    })

    const read = (query: AggregationQuery): Effect.Effect<AggregationResult | undefined, SqlError> =>
      Effect.gen(function*() {
        const fromMemory = hot === undefined ? null : hot.answer(query)
        if (fromMemory !== null) return fromMemory
        const plan = Planner.plan(query, dictionaries)
        const width = 1 + (plan?.dimensions.length ?? 0)
        const merged = new Map<string, number>()
        const rows: Array<ReadonlyArray<unknown>> = []
        for (const statement of plan?.statements ?? []) {
          const result = yield* sql.unsafe(statement.text, statement.params).values
          if (result.length > query.maxRows) return undefined
          for (const row of result) {
            if (row[width] === null) continue // an empty, ungrouped sum
            if (plan!.statements.length === 1) {
              rows.push(row)
              continue
            }
            const id = row.slice(0, width).join(",")
            const at = merged.get(id)
            if (at === undefined) {
              merged.set(id, rows.length)
              rows.push(row.slice())
            } else {
              const target = rows[at]! as Array<number>
              for (let o = 0; o < OUTCOMES; o++) target[width + o]! += row[width + o] as number
            }
          }
          if (rows.length > query.maxRows) return undefined
        }
        const size = rows.length
        const counts = new Float64Array(size * OUTCOMES)
        for (let r = 0; r < size; r++) {
          for (let o = 0; o < OUTCOMES; o++) counts[r * OUTCOMES + o] = rows[r]![width + o] as number
        }
        const column = (dimension: Planner.Dimension) => 1 + plan!.dimensions.indexOf(dimension)
        return {
          size,
          counts,
          time: query.timeUnit !== undefined
            ? Float64Array.from(rows, (row) => plan!.bucketTime(row[0] as number))
            : undefined,
          keyId: query.groupByKey ? rows.map((row) => dictionaries.keyNames[row[column("key")] as number]!) : undefined,
          identity: query.groupByIdentity
            ? rows.map((row) => dictionaries.identityList[row[column("identity")] as number]!)
            : undefined,
          tags: query.groupByTag !== undefined
            ? rows.map((row) => dictionaries.tagsetList[row[column("tagset")] as number]!)
            : undefined
        }
      })

    const store = VerificationStore.of({
      append: offer,
      aggregate: (query) =>
        read(query).pipe(
          Effect.catchAll(storageError),
          Effect.flatMap((
            result
          ) => (result === undefined ? Effect.fail(tooLarge(query, query.maxRows)) : Effect.succeed(result)))
        )
    })
    return Context.make(VerificationStore, store).pipe(Context.add(
      HotRange,
      HotRange.of({
        loaded: Effect.suspend(() => Deferred.await(loadsDone)),
        events: Effect.sync(() => hot?.events ?? 0)
      })
    ))
  })

/** The store as a scoped layer over the SqlClient in context. */
export const layer = (
  options: Options = {}
): Layer.Layer<VerificationStore | HotRange, StorageError, SqlClient.SqlClient> => Layer.scopedContext(make(options))
