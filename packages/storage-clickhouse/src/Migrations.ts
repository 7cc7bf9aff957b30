/**
 * The ClickHouse schema, as versioned migrations run at start: raw events in a MergeTree table,
 * and SummingMergeTree rollups fed by materialized views at insert time, one per query shape the
 * planner serves (see `internal/Planner`). Rate-limit decisions have the same layout (migration
 * 3): raw `ratelimits`, `rl_` rollups of the same shapes filled through `RatelimitEvent`'s
 * projection, and each override's hits. A database migrated by a newer keymeter is refused.
 *
 * Hours are `intDiv(time, 3600000)` and days `intDiv(hour, 24)`, computed by keymeter rather than
 * with ClickHouse's date functions, so no server time zone can shift a bucket. 18.16 has no
 * DateTime64 and `LowCardinality` only behind a setting: times are unix ms in an Int64, ids plain
 * Strings. Newer servers would allow `LowCardinality(String)` for api and tag columns and
 * projections inside one table instead of views.
 */
import { COUNTER_COLUMNS } from "@keymeter/core/Aggregation"
import { StorageError } from "@keymeter/core/Errors"
import { OutcomeIndex } from "@keymeter/core/Verification"
import * as Effect from "effect/Effect"
import type { Connection } from "./internal/Connection.js"
import { sql } from "./internal/Literal.js"

/** The nine outcome counters, summed by every rollup. */
const COUNTER_DEFINITIONS = COUNTER_COLUMNS.map((c) => `${c} UInt64`).join(", ")
const COUNTER_SUMS = COUNTER_COLUMNS.map((c, i) => `sum(outcome = ${i}) AS ${c}`).join(", ")

const DIMENSION_TYPES: Record<string, string> = {
  workspace_id: "String",
  api_id: "String",
  hour: "UInt32",
  day: "UInt32",
  key_id: "String",
  identity_id: "String",
  external_id: "String",
  tags: "Array(String)"
}

const DIMENSION_SOURCE: Record<string, string> = { day: "toUInt32(intDiv(hour, 24))" }

/** The raw table a family of rollups is filled from, and how its columns make theirs. */
interface Source {
  readonly table: string
  /** Expressions of the dimensions that are not a column of the same name. */
  readonly dimensions: Readonly<Record<string, string>>
  /** The counters, `AS c0` .. `AS c8`. */
  readonly counters: string
}

const VERIFICATIONS: Source = { table: "verifications", dimensions: DIMENSION_SOURCE, counters: COUNTER_SUMS }

/** The verification code a decision counts as, by whether it passed (`RatelimitEvent.asVerification`). */
const PASSED = OutcomeIndex.get("valid")!
const BLOCKED = OutcomeIndex.get("rateLimited")!

/**
 * Decisions through `RatelimitEvent`'s projection: the namespace as the api, the identifier as the
 * key, the override as the identity (id and external id), no tags, passed or blocked as the
 * `valid` or `rateLimited` counter ("" stays "no identity", as in `verifications`).
 */
const RATELIMITS: Source = {
  table: "ratelimits",
  dimensions: {
    ...DIMENSION_SOURCE,
    api_id: "namespace_id",
    key_id: "identifier",
    identity_id: "override_id",
    external_id: "override_id",
    tags: "emptyArrayString()"
  },
  counters: COUNTER_COLUMNS.map((c, i) =>
    i === PASSED ? `sum(passed != 0) AS ${c}` : i === BLOCKED ? `sum(passed = 0) AS ${c}` : `toUInt64(0) AS ${c}`
  ).join(", ")
}

/**
 * A rollup: a SummingMergeTree sorted (and so deduplicated) by its dimensions, and the view that
 * fills it from every insert into its family's raw table, aggregated per insert block.
 */
const rollupTable = (table: string, dimensions: ReadonlyArray<string>) =>
  `CREATE TABLE IF NOT EXISTS ${table} (${
    dimensions.map((d) => `${d} ${DIMENSION_TYPES[d]}`).join(", ")
  }, ${COUNTER_DEFINITIONS}) ` +
  `ENGINE = SummingMergeTree((${COUNTER_COLUMNS.join(", ")})) ORDER BY (${dimensions.join(", ")})`

const rollupView = (table: string, dimensions: ReadonlyArray<string>, source: Source) =>
  `CREATE MATERIALIZED VIEW IF NOT EXISTS ${table}_mv TO ${table} AS SELECT ` +
  `${
    dimensions.map((d) => (source.dimensions[d] ? `${source.dimensions[d]} AS ${d}` : d)).join(", ")
  }, ${source.counters} ` +
  `FROM ${source.table} GROUP BY ${dimensions.join(", ")}`

/**
 * Rollup shapes, with their dimensions in sort order. Each family of rollups has a table of every
 * shape, named by the family's prefix and the shape: `r_` counts verifications, `rl_` rate-limit
 * decisions (through `RatelimitEvent`'s projection), so one planner reads both.
 */
export const SHAPES = {
  // Hour grain: any hour-unit query and the partial days at a window's edges.
  hour: ["workspace_id", "api_id", "hour", "key_id", "identity_id", "external_id", "tags"],
  hour_total: ["workspace_id", "api_id", "hour"],
  // Key first: one key's hours over a long window are one contiguous range.
  hour_key: ["workspace_id", "api_id", "key_id", "hour"],
  // Day grain: whole days.
  day: ["workspace_id", "api_id", "day", "key_id", "identity_id", "external_id", "tags"],
  day_total: ["workspace_id", "api_id", "day"],
  day_key: ["workspace_id", "api_id", "day", "key_id"],
  day_identity: ["workspace_id", "api_id", "day", "identity_id", "external_id"],
  day_tags: ["workspace_id", "api_id", "day", "tags"]
} as const

export type Shape = keyof typeof SHAPES

/** A family of rollups, by its tables' prefix: `r_` of verifications, `rl_` of rate-limit decisions. */
export type Family = "r_" | "rl_"

/** The tables of a family, by name, with their dimensions in sort order. */
const rollups = (family: Family): ReadonlyArray<readonly [string, ReadonlyArray<string>]> =>
  Object.entries(SHAPES).map(([shape, dimensions]) => [`${family}${shape}`, dimensions])

/** Verifications' rollup tables by name, with their dimensions in sort order. */
export const ROLLUPS: Readonly<Record<string, ReadonlyArray<string>>> = Object.fromEntries(rollups("r_"))

/**
 * Every migration, by number: steps run in order, the statements of a step at once (DDL is slow on
 * 18.16; tables do not depend on each other, views only on tables). Numbers only grow; a released
 * migration never changes.
 */
export const migrations: ReadonlyArray<
  { readonly id: number; readonly name: string; readonly steps: ReadonlyArray<ReadonlyArray<string>> }
> = [
  {
    id: 1,
    name: "verifications",
    steps: [
      [
        // Identity "" is "no identity" (ids are at least one character).
        `CREATE TABLE IF NOT EXISTS verifications (
          workspace_id String, api_id String, time Int64, hour UInt32, key_id String,
          identity_id String, external_id String, tags Array(String), outcome UInt8
        ) ENGINE = MergeTree PARTITION BY intDiv(hour, 720) ORDER BY (workspace_id, api_id, hour, key_id)`,
        ...Object.entries(ROLLUPS).map(([table, dimensions]) => rollupTable(table, dimensions))
      ],
      Object.entries(ROLLUPS).map(([table, dimensions]) => rollupView(table, dimensions, VERIFICATIONS))
    ]
  },
  {
    id: 2,
    name: "idempotency",
    steps: [[
      // The batch a keyed write inserted ("" for unkeyed ones): how a claim left pending is settled.
      // (18.16 has no ADD COLUMN IF NOT EXISTS: see `idempotent`.)
      "ALTER TABLE verifications ADD COLUMN batch String DEFAULT ''",
      // Claims (state 0) and settlements (state 1) of idempotency keys; the latest row of a key wins.
      `CREATE TABLE IF NOT EXISTS idempotency_receipts (
        workspace_id String, key String, operation String, fingerprint String, response String,
        batch String, events UInt32, first_hour UInt32, last_hour UInt32, state UInt8,
        created_at Int64, expires_at Int64
      ) ENGINE = MergeTree ORDER BY (workspace_id, key)`
    ]]
  },
  {
    id: 3,
    name: "ratelimits",
    steps: [
      [
        // Every decision in full, for `decisions`, kept `decisionRetentionDays` (day partitions, dropped
        // whole: 18.16 has no TTL); the counts live in the rollups, for good. Override "" is "none"
        // (ids are at least one character); `source` is `SourceIndex`'s code.
        `CREATE TABLE IF NOT EXISTS ratelimits (
          workspace_id String, namespace_id String, time Int64, hour UInt32, identifier String, passed UInt8,
          \`limit\` Int64, duration Int64, remaining Int64, cost Int64, override_id String, source UInt8,
          latency_us UInt32, detail String
        ) ENGINE = MergeTree PARTITION BY intDiv(hour, 24) ORDER BY (workspace_id, namespace_id, hour, identifier)`,
        ...rollups("rl_").map(([table, dimensions]) => rollupTable(table, dimensions)),
        // Each override's decisions and the last one's time (18.16 has no SimpleAggregateFunction).
        `CREATE TABLE IF NOT EXISTS rl_override_hits (
          workspace_id String, override_id String, hits AggregateFunction(count),
          last_hit_at AggregateFunction(max, Int64)
        ) ENGINE = AggregatingMergeTree ORDER BY (workspace_id, override_id)`
      ],
      [
        ...rollups("rl_").map(([table, dimensions]) => rollupView(table, dimensions, RATELIMITS)),
        `CREATE MATERIALIZED VIEW IF NOT EXISTS rl_override_hits_mv TO rl_override_hits AS SELECT workspace_id, ` +
        "override_id, countState() AS hits, maxState(time) AS last_hit_at FROM ratelimits WHERE override_id != '' " +
        "GROUP BY workspace_id, override_id"
      ]
    ]
  },
  {
    id: 4,
    name: "verification_details",
    // What each verification spent, how long it took (whole µs) and where it ran, for raw scans;
    // rows written before read 0, 0 and "". One column per step: ALTERs of one table one at a time,
    // each run again as done when its column exists (18.16 has no ADD COLUMN IF NOT EXISTS: see
    // `idempotent`).
    steps: [
      ["ALTER TABLE verifications ADD COLUMN spent_credits UInt32 DEFAULT 0"],
      ["ALTER TABLE verifications ADD COLUMN latency_us UInt32 DEFAULT 0"],
      ["ALTER TABLE verifications ADD COLUMN region String DEFAULT ''"]
    ]
  }
]

/**
 * Runs a statement of a migration so that a second run succeeds too (two servers starting at once,
 * or a run stopped between a step and its record): CREATEs say IF NOT EXISTS; an ADD COLUMN whose
 * column exists already is done. So it is also sent again when the server resets its connection.
 */
const idempotent = (db: Connection, statement: string) =>
  db.command(statement, { resend: true }).pipe(
    Effect.catchIf(
      (error) => /^ALTER TABLE \w+ ADD COLUMN/.test(statement) && /already exists/.test(error.message),
      () => Effect.void
    )
  )

/**
 * Earlier builds kept `keymeter_migrations` in a TinyLog table, which deadlocks or fails ("File not
 * found") when servers read and write it at once. The first server to start on such a database
 * renames it away (a rename succeeds once) and copies its rows into the MergeTree table; a server
 * starting meanwhile may find no record and run the migrations again, which they allow.
 */
const leaveTinyLog = (db: Connection, database: string) =>
  Effect.gen(function*() {
    const engines = yield* db.query(
      sql`SELECT engine FROM system.tables WHERE database = ${database} AND name = 'keymeter_migrations'`
    )
    if (engines[0]?.[0] !== "TinyLog") return
    // A name of its own: a server stopped mid-way leaves a table aside, never one in the way.
    const aside = `keymeter_migrations_tinylog_${Date.now()}_${Math.floor(Math.random() * 1e9)}`
    const renamed = yield* db.command(`RENAME TABLE keymeter_migrations TO ${aside}`).pipe(
      Effect.as(true),
      Effect.catchAll(() => Effect.succeed(false))
    )
    if (!renamed) return
    yield* db.command(CREATE_MIGRATIONS)
    // Another server that also saw TinyLog may rename this new table away in turn: it copies it too.
    yield* bookkeeping(db, db.command(`INSERT INTO keymeter_migrations SELECT id, name, applied_at FROM ${aside}`))
    yield* db.command(`DROP TABLE ${aside}`)
  })

/**
 * A read or write of `keymeter_migrations`; when the table is missing (another server has just
 * renamed a TinyLog one away, see `leaveTinyLog`), it is made and the statement tried again.
 */
const bookkeeping = <A>(
  db: Connection,
  statement: Effect.Effect<A, StorageError>,
  tries = 5
): Effect.Effect<A, StorageError> =>
  statement.pipe(
    Effect.catchIf(
      (error) => tries > 1 && /keymeter_migrations doesn't exist/.test(error.message),
      () =>
        idempotent(db, CREATE_MIGRATIONS).pipe(
          Effect.delay("20 millis"),
          Effect.zipRight(bookkeeping(db, statement, tries - 1))
        )
    )
  )

const CREATE_MIGRATIONS = "CREATE TABLE IF NOT EXISTS keymeter_migrations (id UInt32, name String, applied_at Int64) " +
  "ENGINE = MergeTree ORDER BY id"

/** Number of the newest migration this version knows. */
export const LATEST = Math.max(...migrations.map((m) => m.id))

/** Names that can be written into SQL as a database: checked, never quoted from request input. */
export const isDatabaseName = (name: string) => /^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(name)

/**
 * Creates the database when missing (over `admin`, a connection outside it), refuses a newer
 * schema, then runs the missing migrations (over `db`). Statements are idempotent, so two servers
 * starting at once both succeed.
 */
export const run = (admin: Connection, db: Connection, database: string) =>
  Effect.gen(function*() {
    if (!isDatabaseName(database)) {
      return yield* new StorageError({ message: `Not a usable ClickHouse database name: ${JSON.stringify(database)}` })
    }
    yield* idempotent(admin, `CREATE DATABASE IF NOT EXISTS ${database}`)
    yield* leaveTinyLog(db, database)
    yield* idempotent(db, CREATE_MIGRATIONS)
    const [[applied]] = (yield* bookkeeping(db, db.query("SELECT max(id) FROM keymeter_migrations"))) as [[number]]
    if (applied > LATEST) {
      return yield* new StorageError({
        message: `This ClickHouse database has schema version ${applied}, written by a newer keymeter; this version ` +
          `reads up to ${LATEST}. Upgrade keymeter, or use another database.`
      })
    }
    for (const migration of migrations) {
      if (migration.id <= applied) continue
      for (const step of migration.steps) {
        yield* Effect.forEach(step, (statement) => idempotent(db, statement), {
          concurrency: "unbounded",
          discard: true
        })
      }
      // Sent again after a reset connection too: a second record of a migration changes nothing.
      yield* bookkeeping(
        db,
        db.command(
          sql`INSERT INTO keymeter_migrations (id, name, applied_at) VALUES (${migration.id}, ${migration.name}, ${Date.now()})`,
          { resend: true }
        )
      )
    }
  })
