/**
 * The verification half of the Storage port in SQLite, wired from its parts (in `internal/`):
 *
 * - `Writer`: concurrent `append` calls queue up and a single writer (core's `GroupCommit`)
 *   stores them together in one transaction: each call completes once its events are committed;
 *   a failed transaction fails every call in it and stores none of their events.
 * - `Compaction`: once an api has data from a later day, its closed days are rolled up into the
 *   day tables, after commits and when the writer idles.
 * - `HotRangeLoader` and `HotIndex`: the last `hotDays` days of each api in the columnar engine,
 *   loaded in the background after open and fed every committed batch.
 * - `Reader`: windows inside the hot range from memory, the rest by `Planner`'s SQL.
 * - `Events`: every verification in full (`v_events`), written in the transaction of its counts and
 *   kept `eventDays` (`Retention` deletes older rows in the background, after commits and when the
 *   writer idles), for raw scans (`scan`); the counts are kept for good.
 *
 * The receipt of a keyed call (idempotency) is written in the transaction of its batch.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { StorageError } from "@keymeter/core/Errors"
import { QueryTooLarge } from "@keymeter/core/Errors"
import * as GroupCommit from "@keymeter/core/GroupCommit"
import type { Receipt } from "@keymeter/core/Idempotency"
import { VerificationStore } from "@keymeter/core/Storage"
import type { Verification } from "@keymeter/core/Verification"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Compaction from "./internal/Compaction.js"
import * as Dictionaries from "./internal/Dictionaries.js"
import * as Events from "./internal/Events.js"
import { HotIndex } from "./internal/HotIndex.js"
import * as HotRangeLoader from "./internal/HotRangeLoader.js"
import * as Reader from "./internal/Reader.js"
import * as Retention from "./internal/Retention.js"
import * as Tables from "./internal/Tables.js"
import * as Writer from "./internal/Writer.js"
import { storageError } from "./SqliteCatalog.js"

interface ReceiptRow {
  readonly operation: string
  readonly fingerprint: string
  readonly response: string
  readonly created_at: number
  readonly expires_at: number
}

/** Events one transaction takes at most; more wait for the next. */
const MAX_EVENTS_PER_TRANSACTION = 100_000

/** When closed days are rolled up into the day tables. */
export type CompactionOptions = Compaction.Options

/** How the store is run. */
export interface Options {
  /** When closed days are rolled up into the day tables. */
  readonly compaction?: CompactionOptions | undefined
  /**
   * Days of each api (counted back from its newest event) also held in memory, ~25 bytes per
   * event, to answer queries over them at memory speed (default 92; 0 keeps nothing in memory).
   */
  readonly hotDays?: number | undefined
  /**
   * Days each verification is kept in full (time, credits spent, latency, region) for raw scans
   * (SQL analytics), back from now (default 30; `Infinity` keeps them): an older event is not
   * kept in full, and rows that age out are deleted in the background. Counts are kept for good.
   */
  readonly eventDays?: number | undefined
  /**
   * Reads only, on a connection beside the file's writer (SQL analytics' worker): no writer, no
   * compaction or retention, `append` dies. Its dictionaries are the file's when it was made.
   */
  readonly readOnly?: boolean | undefined
}

/** Default of {@link Options.eventDays}. */
export const DEFAULT_EVENT_DAYS = 30

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

/** The `append` of a store made `readOnly`: a defect, as only the file's writer appends. */
export const refuseWrite = (): Effect.Effect<never> =>
  Effect.dieMessage("this SQLite store was opened to read only; the file's writer appends")

/** Default of {@link Options.hotDays}: a quarter, so 30- and 90-day dashboards stay hot. */
export const DEFAULT_HOT_DAYS = 92

/** The store on the SqlClient in context (migrated); its writer and loads live as long as the scope. */
export const make = (options: Options = {}) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const dictionaries = yield* Effect.catchAll(Dictionaries.load(Tables.verifications), storageError)
    const hotDays = Math.max(0, Math.floor(options.hotDays ?? DEFAULT_HOT_DAYS))
    const hot = hotDays === 0 ? undefined : HotIndex.make(dictionaries, hotDays)
    // A commit and its append to the hot index are one step for the background loads (see HotIndex).
    const exclusive = (yield* Effect.makeSemaphore(1)).withPermits(1)
    const hotRange = yield* HotRangeLoader.make({ index: hot, dictionaries, exclusive })
    const compaction = Compaction.make(sql, dictionaries, options.compaction)
    const retention = Retention.make(sql, dictionaries, {
      table: Events.TABLE,
      days: Math.max(0, options.eventDays ?? DEFAULT_EVENT_DAYS),
      what: "verifications kept in full"
    })

    // Bumped by every commit: this process is the file's only writer (the writer lock).
    let revision = 0
    const commit = (events: ReadonlyArray<Verification>, keyed: ReadonlyArray<GroupCommit.Keyed>) =>
      Effect.gen(function*() {
        const raw = new Events.EventRows(yield* retention.keptFrom)
        yield* Effect.catchAll(
          Writer.commit(sql, dictionaries, events, Writer.writeReceipts(sql, keyed.map((k) => k.receipt)), raw),
          storageError
        )
        retention.written(raw.size)
        yield* hotRange.committed(events)
      }).pipe(
        // Once the hot index holds the batch too, so no answer without it is kept as current.
        Effect.ensuring(Effect.sync(() => revision++)),
        exclusive
      )
    // The writer: one transaction per round of queued calls; it compacts what closed and deletes
    // events past their days after each commit, and does everything pending whenever it idles.
    const offer = options.readOnly === true ? refuseWrite : yield* GroupCommit.make<Verification>({
      write: commit,
      maxEvents: MAX_EVENTS_PER_TRANSACTION,
      afterWrite: Effect.zipRight(compaction.due(false), retention.sweep),
      whenIdle: { ms: compaction.idleMs, run: Effect.zipRight(compaction.due(true), retention.sweep) }
    })
    const read = Reader.make(sql, dictionaries, hot)

    // Expired receipts are dropped once a minute at most, in the background of reads of receipts.
    let purgedAt = 0
    const purge = (now: number) =>
      now - purgedAt < 60_000
        ? Effect.void
        : Effect.zipRight(
          Effect.sync(() => (purgedAt = now)),
          sql`DELETE FROM idempotency_receipts WHERE expires_at <= ${now}`
        )

    const store = VerificationStore.of({
      append: offer,
      findReceipt: (workspaceId, key, now) =>
        Effect.gen(function*() {
          yield* purge(now)
          const rows = yield* sql<ReceiptRow>`SELECT operation, fingerprint, response, created_at, expires_at
            FROM idempotency_receipts WHERE workspace_id = ${workspaceId} AND key = ${key} AND expires_at > ${now}`
          const row = rows[0]
          return row === undefined ? Option.none() : Option.some<Receipt>({
            workspaceId,
            key,
            operation: row.operation,
            fingerprint: row.fingerprint,
            response: row.response,
            createdAt: row.created_at,
            expiresAt: row.expires_at
          })
        }).pipe(Effect.catchTag("SqlError", storageError)),
      aggregate: read,
      // A scanned row's columns: time, spent credits and latency as doubles, six codes, the outcome.
      scanRowBytes: 64,
      // The counts are kept for good, the events `scan` reads for their days: the same from then on.
      scanCountsFrom: retention.keptFrom,
      // From the events it keeps in full, as far back as `scanCountsFrom`.
      sumsCredits: true,
      countedIn: (workspaceId) => Effect.sync(() => dictionaries.partitionsOf(workspaceId).map((p) => p.apiId)),
      // Events past their days that no sweep has deleted yet are not answered.
      scan: (scope) =>
        Effect.flatMap(retention.keptFrom, (keptFrom) => Events.scan(sql, dictionaries, scope, keptFrom, exclusive))
          .pipe(
            Effect.catchTag("SqlError", storageError),
            Effect.flatMap((batches) =>
              batches === undefined
                ? Effect.fail(
                  new QueryTooLarge({
                    message: `The scan would read more than ${scope.maxRows} rows; narrow it with a shorter ` +
                      "time range or fewer apis"
                  })
                )
                : Effect.succeed(batches)
            )
          ),
      revision: () => revision
    })
    return Context.make(VerificationStore, store).pipe(
      Context.add(HotRange, HotRange.of({ loaded: hotRange.loaded, events: hotRange.events }))
    )
  })

/** The store as a scoped layer over the SqlClient in context. */
export const layer = (
  options: Options = {}
): Layer.Layer<VerificationStore | HotRange, StorageError, SqlClient.SqlClient> => Layer.scopedContext(make(options))
