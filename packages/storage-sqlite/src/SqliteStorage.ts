/**
 * The whole Storage port in one SQLite file (verifications, rate-limit decisions, catalog):
 * durable (WAL, synchronous FULL by default), migrated at open, written by one server process at a
 * time.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqliteClient } from "@effect/sql-sqlite-node"
import * as SqlClient from "@effect/sql/SqlClient"
import type { StorageError } from "@keymeter/core/Errors"
import type { Catalog, RatelimitStore, VerificationStore } from "@keymeter/core/Storage"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { chmodSync, mkdirSync } from "node:fs"
import { dirname } from "node:path"
import * as WriterLock from "./internal/WriterLock.js"
import * as Migrations from "./Migrations.js"
import * as SqliteCatalog from "./SqliteCatalog.js"
import * as SqliteRatelimitStore from "./SqliteRatelimitStore.js"
import * as SqliteVerificationStore from "./SqliteVerificationStore.js"

/** How to open the file. */
export interface Options {
  /** Path of the database file (its folder is created), or `:memory:`. */
  readonly filename: string
  /**
   * `full` (default): a commit survives a power loss. `normal`: it survives a process crash, and
   * the last commits may be lost on power loss.
   */
  readonly synchronous?: "full" | "normal" | undefined
  /** Page cache in MiB (default 64). */
  readonly cacheMiB?: number | undefined
  /** How long to wait for another process's write lock (default 5000 ms). */
  readonly busyTimeoutMs?: number | undefined
  /** When closed days are rolled up into the day tables. */
  readonly compaction?: SqliteVerificationStore.CompactionOptions | undefined
  /**
   * Days of each api (and of each rate-limit namespace) also held in memory for fast queries (see
   * {@link SqliteVerificationStore.Options}).
   */
  readonly hotDays?: number | undefined
  /** Days each rate-limit decision is kept in full (see {@link SqliteRatelimitStore.Options}). */
  readonly decisionDays?: number | undefined
  /**
   * Days each verification is kept in full for raw scans (default 30; see
   * {@link SqliteVerificationStore.Options}).
   */
  readonly eventDays?: number | undefined
}

/** Why the file could not be opened: another writer, a schema from elsewhere, or a storage failure. */
export type OpenError = FileInUse | Migrations.SchemaError | StorageError

/** The file is being written by another keymeter server. */
export const FileInUse = WriterLock.FileInUse
export type FileInUse = WriterLock.FileInUse

/**
 * The SqlClient of the one writer of the file (see `internal/WriterLock`): the lock is taken
 * before the file is opened and migrated, so a server that loses the race never touches it.
 */
const writerClient = (options: Options) =>
  options.filename === ":memory:" ? layerClient(options) : layerClient(options).pipe(
    Layer.provide(Layer.scopedDiscard(
      Effect.suspend(() => {
        mkdirSync(dirname(options.filename), { recursive: true, mode: 0o700 })
        return WriterLock.acquire(options.filename)
      })
    ))
  )

/** The SqlClient on the file, with the connection settings applied and the schema migrated. */
export const layerClient = (options: Options) =>
  Layer.effectDiscard(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql.unsafe(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))}`)
      yield* sql.unsafe("PRAGMA foreign_keys = ON")
      yield* sql.unsafe(`PRAGMA synchronous = ${options.synchronous === "normal" ? "NORMAL" : "FULL"}`)
      yield* sql.unsafe(`PRAGMA cache_size = ${-Math.max(1, Math.floor(options.cacheMiB ?? 64)) * 1024}`)
      // Nothing is written before the file is known to be keymeter's (WAL mode changes its header).
      yield* Migrations.claim(options.filename)
      yield* sql.unsafe("PRAGMA journal_mode = WAL")
      yield* Migrations.run
    }).pipe(Effect.catchTag("SqlError", (error) =>
      new Migrations.SchemaError({ message: `Could not open the database: ${String(error.cause ?? error.message)}` })))
  ).pipe(Layer.provideMerge(clientLayer(options.filename)))

/** `filename` and its companions made readable by their owner only, where they exist. */
const ownerOnly = (filename: string) => {
  for (const suffix of ["", "-wal", "-shm"]) {
    try {
      chmodSync(filename + suffix, 0o600)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error
    }
  }
}

/** The client on `filename`; a file that cannot be opened is a SchemaError, not a defect. */
const clientLayer = (filename: string) =>
  Layer.scopedContext(
    Effect.suspend(() => {
      // Owner-only: the file holds hashes of secrets. SQLite gives `-wal` and `-shm` its mode.
      if (filename !== ":memory:") mkdirSync(dirname(filename), { recursive: true, mode: 0o700 })
      // WAL is switched on by layerClient, once the file is known to be keymeter's.
      // Room for the statements of both families of count tables (each keeps a few dozen prepared).
      return SqliteClient.make({ filename, disableWAL: true, prepareCacheSize: 400 }).pipe(
        Effect.tap(() => filename === ":memory:" ? undefined : ownerOnly(filename))
      )
    }).pipe(
      Effect.catchAllDefect((defect) =>
        new Migrations.SchemaError({
          message: `Could not open the database ${filename}: ${
            defect instanceof Error ? defect.message : String(defect)
          }`
        })
      ),
      Effect.map((client) =>
        Context.make(SqliteClient.SqliteClient, client).pipe(Context.add(SqlClient.SqlClient, client))
      )
    )
  ).pipe(Layer.provide(Reactivity.layer))

/**
 * Both event stores on the SqlClient in context, with one hot range for both (loaded once both
 * are). Each has its own writer: the SQLite client runs one transaction at a time on its one
 * connection (statements of other fibers wait for it), so their transactions never mix.
 */
const eventStores = (options: Options) =>
  Layer.scopedContext(Effect.gen(function*() {
    const verifications = yield* SqliteVerificationStore.make({
      compaction: options.compaction,
      hotDays: options.hotDays,
      eventDays: options.eventDays
    })
    const ratelimits = yield* SqliteRatelimitStore.make({
      compaction: options.compaction,
      hotDays: options.hotDays,
      decisionDays: options.decisionDays
    })
    const ofVerifications = Context.get(verifications, SqliteVerificationStore.HotRange)
    const ofRatelimits = Context.get(ratelimits, SqliteVerificationStore.HotRange)
    return Context.merge(verifications, ratelimits).pipe(
      Context.add(
        SqliteVerificationStore.HotRange,
        SqliteVerificationStore.HotRange.of({
          loaded: Effect.zipRight(ofVerifications.loaded, ofRatelimits.loaded),
          events: Effect.zipWith(ofVerifications.events, ofRatelimits.events, (a, b) => a + b)
        })
      )
    )
  }))

/** The whole port on one file. */
export const layer = (
  options: Options
): Layer.Layer<
  VerificationStore | RatelimitStore | SqliteVerificationStore.HotRange | Catalog | SqlClient.SqlClient,
  OpenError
> =>
  Layer.merge(eventStores(options), SqliteCatalog.layerOnFile(options.filename)).pipe(
    Layer.provideMerge(writerClient(options))
  )

/**
 * The catalog alone, for a server whose verifications are stored elsewhere (ClickHouse): it still
 * takes the writer lock, since the server caches override indexes that another writer would stale.
 */
export const layerServerCatalog = (options: Options): Layer.Layer<Catalog | SqlClient.SqlClient, OpenError> =>
  SqliteCatalog.layerOnFile(options.filename).pipe(
    Layer.provideMerge(writerClient(options))
  )

/** The catalog alone, for tools that run beside a server (no writer lock, no ingest). */
export const layerCatalog = (options: Options): Layer.Layer<Catalog | SqlClient.SqlClient, OpenError> =>
  SqliteCatalog.layer.pipe(Layer.provideMerge(layerClient(options)))
