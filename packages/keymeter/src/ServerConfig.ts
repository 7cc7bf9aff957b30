/**
 * Configuration of the standalone server, from the environment.
 */
import { MaxReadsAtOnce } from "@keymeter/core/Analytics"
import * as Idempotency from "@keymeter/core/Idempotency"
import { KeyCacheCapacity } from "@keymeter/core/Keys"
import { MaxWindows } from "@keymeter/core/Windows"
import { MaxAuthFailures } from "@keymeter/http/AuthGate"
import * as InFlightLimit from "@keymeter/http/InFlightLimit"
import * as NodeServer from "@keymeter/http/NodeServer"
import { SqlLimits } from "@keymeter/sql/SqlAnalytics"
import * as Config from "effect/Config"
import * as StorageSpec from "./StorageSpec.js"

/** Every setting, with its default. */
export const config = Config.all({
  // 0 lets the system pick a free port (the log line says which).
  port: Config.integer("PORT").pipe(
    Config.validate({ message: "must be a port number from 0 to 65535", validation: (n) => n >= 0 && n <= 65535 }),
    Config.withDefault(8787)
  ),
  host: Config.string("HOST").pipe(Config.withDefault("127.0.0.1")),
  storage: Config.string("KEYMETER_STORAGE").pipe(Config.withDefault(StorageSpec.DEFAULT)),
  // Days of each api that SQLite storage also keeps in memory for fast queries; 0 for none.
  hotDays: Config.integer("KEYMETER_HOT_DAYS").pipe(
    Config.validate({ message: "must be 0 or more", validation: (n) => n >= 0 }),
    Config.withDefault(92)
  ),
  // SQL analytics asked while verifications and limits are served run on a thread of their own
  // (memory storage keeps a replica of its events there: twice their memory).
  sqlWorker: Config.boolean("KEYMETER_SQL_WORKER").pipe(Config.withDefault(true)),
  // Verifications in ClickHouse instead (`clickhouse:http://host:8123/<database>`); the catalog stays in KEYMETER_STORAGE.
  analytics: Config.option(Config.nonEmptyString("KEYMETER_ANALYTICS")),
  // With it: ingested verifications acknowledged once on this local folder, shipped to ClickHouse each second.
  analyticsSpool: Config.option(Config.nonEmptyString("KEYMETER_ANALYTICS_SPOOL")),
  provision: Config.option(Config.nonEmptyString("KEYMETER_PROVISION")),
  // Rate-limit windows shared through Redis (`redis://host:port/db`) instead of each server's own.
  ratelimit: Config.option(Config.nonEmptyString("KEYMETER_RATELIMIT")),
  // When Redis fails: "closed" answers 503, "local" decides with this server's own windows.
  ratelimitFallback: Config.string("KEYMETER_RATELIMIT_FALLBACK").pipe(Config.withDefault("closed")),
  docsUrl: Config.string("KEYMETER_DOCS_URL").pipe(Config.withDefault("/docs")),
  maxBodyBytes: Config.integer("KEYMETER_MAX_BODY_BYTES").pipe(
    Config.validate({ message: "must be at least 1024", validation: (n) => n >= 1024 }),
    Config.withDefault(1024 * 1024)
  ),
  maxDatapoints: Config.integer("KEYMETER_MAX_DATAPOINTS").pipe(
    Config.validate({ message: "must be at least 1", validation: (n) => n >= 1 }),
    Config.withDefault(100_000)
  ),
  maxAuthFailures: Config.integer("KEYMETER_MAX_AUTH_FAILURES").pipe(
    Config.validate({ message: "must be at least 1", validation: (n) => n >= 1 }),
    Config.withDefault(MaxAuthFailures.defaultValue())
  ),
  maxAnalyticsReads: Config.integer("KEYMETER_MAX_ANALYTICS_READS").pipe(
    Config.validate({ message: "must be at least 1", validation: (n) => n >= 1 }),
    Config.withDefault(MaxReadsAtOnce.defaultValue())
  ),
  // Budgets of each SQL analytics query, and how many run at once.
  sqlLimits: Config.all({
    timeMs: Config.integer("KEYMETER_SQL_TIME_MS").pipe(
      Config.validate({ message: "must be at least 1", validation: (n) => n >= 1 }),
      Config.withDefault(SqlLimits.defaultValue().timeMs)
    ),
    scannedRows: Config.integer("KEYMETER_SQL_SCANNED_ROWS").pipe(
      Config.validate({ message: "must be at least 1", validation: (n) => n >= 1 }),
      Config.withDefault(SqlLimits.defaultValue().scannedRows)
    ),
    resultRows: Config.integer("KEYMETER_SQL_RESULT_ROWS").pipe(
      Config.validate({ message: "must be at least 1", validation: (n) => n >= 1 }),
      Config.withDefault(SqlLimits.defaultValue().resultRows)
    ),
    memoryBytes: Config.integer("KEYMETER_SQL_MEMORY_MB").pipe(
      Config.validate({ message: "must be at least 1", validation: (n) => n >= 1 }),
      Config.map((mb) => mb * 1024 * 1024),
      Config.withDefault(SqlLimits.defaultValue().memoryBytes)
    ),
    concurrent: Config.integer("KEYMETER_SQL_CONCURRENT").pipe(
      Config.validate({ message: "must be at least 1", validation: (n) => n >= 1 }),
      Config.withDefault(SqlLimits.defaultValue().concurrent)
    )
  }),
  maxWindows: Config.all({
    total: Config.integer("KEYMETER_MAX_WINDOWS").pipe(
      Config.validate({ message: "must be at least 1", validation: (n) => n >= 1 }),
      Config.withDefault(MaxWindows.defaultValue().total)
    ),
    perOwner: Config.integer("KEYMETER_MAX_WINDOWS_PER_WORKSPACE").pipe(
      Config.validate({ message: "must be at least 1", validation: (n) => n >= 1 }),
      Config.withDefault(MaxWindows.defaultValue().perOwner)
    )
  }),
  headersTimeoutMs: Config.integer("KEYMETER_HEADERS_TIMEOUT_MS").pipe(
    Config.validate({ message: "must be at least 1000", validation: (n) => n >= 1000 }),
    Config.withDefault(NodeServer.DEFAULT_HEADERS_TIMEOUT_MS)
  ),
  requestTimeoutMs: Config.integer("KEYMETER_REQUEST_TIMEOUT_MS").pipe(
    Config.validate({ message: "must be at least 1000", validation: (n) => n >= 1000 }),
    Config.withDefault(NodeServer.DEFAULT_REQUEST_TIMEOUT_MS)
  ),
  idempotencyWindowMs: Config.integer("KEYMETER_IDEMPOTENCY_WINDOW_MS").pipe(
    Config.validate({
      message: `must be from 60000 (a minute) to ${Idempotency.MAX_WINDOW_MS} (30 days)`,
      validation: (n) => n >= 60_000 && n <= Idempotency.MAX_WINDOW_MS
    }),
    Config.withDefault(Idempotency.DEFAULT_WINDOW_MS)
  ),
  // Default: 100 ms, or 1000 ms with ClickHouse analytics (it takes few large inserts better).
  recordDelayMs: Config.option(
    Config.integer("KEYMETER_RECORD_DELAY_MS").pipe(
      Config.validate({ message: "must be from 0 to 60000", validation: (n) => n >= 0 && n <= 60_000 })
    )
  ),
  keyCacheSize: Config.integer("KEYMETER_KEY_CACHE_SIZE").pipe(
    Config.validate({ message: "must be at least 1", validation: (n) => n >= 1 }),
    Config.withDefault(KeyCacheCapacity.defaultValue())
  ),
  maxInFlight: Config.integer("KEYMETER_MAX_IN_FLIGHT").pipe(
    Config.validate({ message: "must be at least 1", validation: (n) => n >= 1 }),
    Config.withDefault(InFlightLimit.DEFAULT_MAX_IN_FLIGHT)
  )
})
