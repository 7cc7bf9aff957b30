/**
 * Choosing storage from strings, as the environment gives them: `KEYMETER_STORAGE` (`memory`, or
 * `sqlite:<path>`) holds everything, unless `KEYMETER_ANALYTICS` (`clickhouse:<url>`) takes the
 * verifications and rate-limit decisions, leaving the catalog where `KEYMETER_STORAGE` says. `postgres://…` holds the
 * catalog only (servers share it), so it goes with `KEYMETER_ANALYTICS`.
 *
 * The SQLite, PostgreSQL and ClickHouse adapters are optional peer dependencies, imported only when
 * a string names them: an embedder on memory storage installs neither native code nor a client.
 */
import { redactUrl, StorageError } from "@keymeter/core/Errors"
import type { Catalog, Storage } from "@keymeter/core/Storage"
import type { Windows } from "@keymeter/core/Windows"
import { MemoryCatalog, MemorySqlWorker, MemoryStorage } from "@keymeter/storage-memory"
import type { PostgresCatalog } from "@keymeter/storage-postgres"
import type { SqliteStorage } from "@keymeter/storage-sqlite"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** The recorder's delay with ClickHouse analytics: it takes few large inserts better than many small ones. */
export const CLICKHOUSE_RECORD_DELAY_MS = 1_000

/** The default: a SQLite file beside the working directory. */
export const DEFAULT = "sqlite:./.keymeter/keymeter.db"

/** The storage string names no storage keymeter knows. */
export class InvalidStorageSpec extends Data.TaggedError("InvalidStorageSpec")<{ readonly message: string }> {}

/** A parsed storage choice. */
export type Spec =
  | { readonly _tag: "memory" }
  | { readonly _tag: "sqlite"; readonly filename: string }
  | { readonly _tag: "postgres"; readonly url: string }

/** A parsed analytics choice: where verifications go instead. */
/**
 * A parsed analytics choice: ClickHouse at `url`; with `spool`, a folder where ingested
 * verifications are acknowledged on local disk and shipped to ClickHouse at each interval.
 */
export type AnalyticsSpec = { readonly _tag: "clickhouse"; readonly url: string; readonly spool?: string | undefined }

/** Parses `memory`, `sqlite:<path>` or `postgres://user:pass@host:port/db`. */
export const parse = (spec: string): Spec | InvalidStorageSpec => {
  const value = spec.trim()
  if (value === "memory") return { _tag: "memory" }
  if (value.startsWith("sqlite:") && value.length > "sqlite:".length) {
    return { _tag: "sqlite", filename: value.slice("sqlite:".length) }
  }
  if (/^postgres(ql)?:\/\//.test(value)) {
    const url = URL.canParse(value) ? new URL(value) : undefined
    if (url !== undefined && url.hostname !== "" && url.pathname.length > 1) return { _tag: "postgres", url: value }
    return new InvalidStorageSpec({
      message: `KEYMETER_STORAGE: not a usable PostgreSQL URL (postgres://user:pass@host:port/database), got ${
        JSON.stringify(redactUrl(value))
      }`
    })
  }
  return new InvalidStorageSpec({
    message: `KEYMETER_STORAGE must be "memory", "sqlite:<path>" or "postgres://user:pass@host:port/database", got ${
      JSON.stringify(redactUrl(spec))
    }`
  })
}

/** A parsed rate-limit choice: windows shared through Redis (else they are each server's own). */
export type RatelimitSpec = { readonly _tag: "redis"; readonly url: string; readonly fallback: "closed" | "local" }

/** Parses `redis://host:port/db` (`rediss://` for TLS), and the fallback (`closed`, default, or `local`). */
export const parseRatelimit = (spec: string, fallback = "closed"): RatelimitSpec | InvalidStorageSpec => {
  const value = spec.trim()
  if (!/^rediss?:\/\//.test(value) || !URL.canParse(value) || new URL(value).hostname === "") {
    return new InvalidStorageSpec({
      message: `KEYMETER_RATELIMIT must be "redis://<host>:<port>/<db>", got ${JSON.stringify(redactUrl(spec))}`
    })
  }
  if (fallback !== "closed" && fallback !== "local") {
    return new InvalidStorageSpec({
      message: `KEYMETER_RATELIMIT_FALLBACK must be "closed" or "local", got ${JSON.stringify(fallback)}`
    })
  }
  return { _tag: "redis", url: value, fallback }
}

/**
 * Parses `clickhouse:<url>`, with the spool's folder if any; the URL itself is checked when the
 * adapter loads (see {@link layer}).
 */
export const parseAnalytics = (spec: string, spool?: string | undefined): AnalyticsSpec | InvalidStorageSpec => {
  const value = spec.trim()
  if (spool !== undefined && spool.trim() === "") {
    return new InvalidStorageSpec({
      message: "The analytics spool (KEYMETER_ANALYTICS_SPOOL, analyticsSpool) must name a folder"
    })
  }
  if (value.startsWith("clickhouse:")) {
    return { _tag: "clickhouse", url: value.slice("clickhouse:".length), spool: spool?.trim() }
  }
  return new InvalidStorageSpec({
    message: `KEYMETER_ANALYTICS must be "clickhouse:http://<host>:<port>/<database>", got ${
      JSON.stringify(redactUrl(spec))
    }`
  })
}

/**
 * Imports an optional adapter; when it is not installed, the message says what to install. Other
 * failures (a native module that does not load, say) keep their own message.
 */
const importAdapter = <A>(name: string, needed: string, load: () => Promise<A>) =>
  Effect.tryPromise({
    try: load,
    catch: (error) => {
      const missing = (error as { code?: string }).code === "ERR_MODULE_NOT_FOUND" &&
        String((error as Error).message).includes(name)
      return new InvalidStorageSpec({
        message: missing
          ? `${needed} needs the package ${name}, which is not installed; install it with: npm install ${name}`
          : `${needed}: ${name} could not be loaded: ${error instanceof Error ? error.message : String(error)}`
      })
    }
  })

/** Tuning of the layers a spec names. */
export interface LayerOptions {
  /** SQLite's in-memory hot range, in days. */
  readonly hotDays?: number | undefined
  /** Where verifications go instead of `spec`'s storage. */
  readonly analytics?: AnalyticsSpec | undefined
  /**
   * Whether SQL analytics asked while the hot paths run go to a thread of their own (default true):
   * SQLite's reads the file; memory's holds a replica of the events, which doubles their memory.
   */
  readonly sqlWorker?: boolean | undefined
}

const sqlite = importAdapter(
  "@keymeter/storage-sqlite",
  "KEYMETER_STORAGE=sqlite:",
  () => import("@keymeter/storage-sqlite")
)

const postgres = importAdapter(
  "@keymeter/storage-postgres",
  "KEYMETER_STORAGE=postgres://",
  () => import("@keymeter/storage-postgres")
)

const clickhouse = importAdapter(
  "@keymeter/storage-clickhouse",
  "KEYMETER_ANALYTICS=clickhouse:",
  () => import("@keymeter/storage-clickhouse")
)

/** The PostgreSQL catalog at `url`, its failures worded for an operator (without the password). */
const postgresCatalog = (module: typeof PostgresCatalog, url: string) =>
  module.layerUrl(url).pipe(
    Layer.mapError((error) =>
      error._tag === "SchemaError"
        ? new StorageError({ message: error.message })
        : new StorageError({
          message: `PostgreSQL at ${redactUrl(url)} could not be used: ${
            String((error as { cause?: unknown }).cause ?? error.message)
          }`
        })
    )
  )

/**
 * The catalog alone, for the admin CLI: a SQLite file or a PostgreSQL database, importing the
 * adapter it needs (or naming the package to install).
 */
export const adminCatalog = (
  target: { readonly sqlite: string } | { readonly postgres: string }
): Effect.Effect<Layer.Layer<Catalog, StorageError>, InvalidStorageSpec> =>
  "postgres" in target
    ? Effect.map(postgres, (module) => postgresCatalog(module.PostgresCatalog, target.postgres))
    : Effect.map(sqlite, (module) =>
      module.SqliteStorage.layerCatalog({ filename: target.sqlite }).pipe(
        Layer.mapError((error) => error._tag === "StorageError" ? error : new StorageError({ message: error.message }))
      ))

/** The storage layer the specs name, importing the adapters it needs. */
export const layer = (
  spec: Spec,
  options: LayerOptions = {}
): Layer.Layer<Storage, SqliteStorage.OpenError | StorageError | InvalidStorageSpec> =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const { analytics } = options
    if (analytics === undefined) {
      if (spec._tag === "postgres") {
        return yield* new InvalidStorageSpec({
          message: "KEYMETER_STORAGE=postgres:// holds the catalog that servers share; set KEYMETER_ANALYTICS " +
            "(clickhouse:http://<host>:<port>/<database>) for the verifications they record"
        })
      }
      const sqlWorker = options.sqlWorker !== false
      if (spec._tag === "memory") return sqlWorker ? MemorySqlWorker.layer() : MemoryStorage.layer
      const { SqliteSqlWorker, SqliteStorage } = yield* sqlite
      const storage = SqliteStorage.layer({ filename: spec.filename, hotDays: options.hotDays })
      // SQL analytics asked while the hot paths run go to a thread of their own (a file only: a
      // database in memory is this connection's alone).
      return !sqlWorker || spec.filename === ":memory:"
        ? storage
        : Layer.merge(storage, SqliteSqlWorker.layer({ filename: spec.filename }))
    }
    const catalog = spec._tag === "memory"
      ? MemoryCatalog.layer
      : spec._tag === "postgres"
      ? postgresCatalog((yield* postgres).PostgresCatalog, spec.url)
      : (yield* sqlite).SqliteStorage.layerServerCatalog({ filename: spec.filename })
    const { ClickhouseRatelimitStore, ClickhouseSql, ClickhouseVerificationStore } = yield* clickhouse
    const target = ClickhouseVerificationStore.parseUrl(analytics.url)
    if ("_tag" in target) return yield* new InvalidStorageSpec({ message: `KEYMETER_ANALYTICS: ${target.message}` })
    return Layer.mergeAll(
      catalog,
      ClickhouseVerificationStore.layer({
        url: analytics.url,
        spool: analytics.spool === undefined ? undefined : { directory: analytics.spool }
      }),
      ClickhouseRatelimitStore.layer({ url: analytics.url }),
      // SQL analytics run in ClickHouse (`SqlAnalytics` finds the engine in the context).
      ClickhouseSql.layer({ url: analytics.url })
    )
  }))

const redis = importAdapter(
  "@keymeter/ratelimit-redis",
  "KEYMETER_RATELIMIT=redis://",
  () => import("@keymeter/ratelimit-redis")
)

/** The rate-limit windows `spec` names, shared by the servers that name the same Redis. */
export const windowsLayer = (spec: RatelimitSpec): Layer.Layer<Windows, StorageError> =>
  Layer.unwrapEffect(
    Effect.map(redis, ({ RedisWindows }) => RedisWindows.layer({ url: spec.url, fallback: spec.fallback })).pipe(
      Effect.mapError((error) => new StorageError({ message: error.message }))
    )
  )
