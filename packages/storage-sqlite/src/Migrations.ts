/**
 * The SQLite schema, as versioned migrations run at start. A database written by an older keymeter
 * is migrated forward; one written by a newer keymeter is refused.
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { COUNTER_COLUMNS } from "@keymeter/core/Aggregation"
import * as CatalogPart from "@keymeter/core/CatalogPart"
import { SqlCatalog } from "@keymeter/storage-sql"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"

/** The database belongs to another keymeter version, or could not be migrated. */
export class SchemaError extends Data.TaggedError("SchemaError")<{ readonly message: string }> {}

const COUNTERS = COUNTER_COLUMNS.map((c) => `${c} INTEGER NOT NULL`).join(", ")

/** A rollup table: dimension columns (integers), nine outcome counters, clustered on the dimensions. */
const rollup = (table: string, dimensions: ReadonlyArray<string>) =>
  `CREATE TABLE ${table} (${dimensions.map((d) => `${d} INTEGER NOT NULL`).join(", ")}, ${COUNTERS}, ` +
  `PRIMARY KEY (${dimensions.join(", ")})) WITHOUT ROWID`

const statements = (sql: SqlClient.SqlClient, list: ReadonlyArray<string>) =>
  Effect.forEach(list, (statement) => sql.unsafe(statement), { discard: true })

/** Triggers that move `catalog_version` on every write to `tables`. */
const versioned = (tables: ReadonlyArray<string>) =>
  tables.flatMap((table) =>
    ["INSERT", "UPDATE", "DELETE"].map((event) =>
      `CREATE TRIGGER ${table}_${event.toLowerCase()}_version AFTER ${event} ON ${table} ` +
      "BEGIN UPDATE catalog_version SET n = n + 1; END"
    )
  )

/** The tables the triggers of migrations 0005 to 0010 moved `catalog_version` for. */
const VERSIONED_0010 = [
  "workspaces",
  "root_keys",
  "apis",
  "namespaces",
  "overrides",
  "identities",
  "keys",
  "permissions",
  "roles"
]

/** Every migration, by id. Ids only grow; a released migration never changes. */
export const migrations = {
  "0001_catalog": Effect.flatMap(SqlClient.SqlClient, (sql) =>
    statements(sql, [
      "CREATE TABLE workspaces (id TEXT PRIMARY KEY, name TEXT NOT NULL) WITHOUT ROWID",
      `CREATE TABLE root_keys (
        id TEXT PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces (id),
        name TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        permissions TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER,
        disabled INTEGER NOT NULL DEFAULT 0
      ) WITHOUT ROWID`,
      "CREATE INDEX root_keys_workspace ON root_keys (workspace_id)",
      `CREATE TABLE apis (
        id TEXT PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces (id),
        name TEXT NOT NULL
      ) WITHOUT ROWID`,
      `CREATE TABLE namespaces (
        id TEXT PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces (id),
        name TEXT NOT NULL,
        UNIQUE (workspace_id, name)
      ) WITHOUT ROWID`,
      `CREATE TABLE overrides (
        id TEXT PRIMARY KEY,
        namespace_id TEXT NOT NULL REFERENCES namespaces (id),
        identifier TEXT NOT NULL,
        "limit" INTEGER NOT NULL,
        duration INTEGER NOT NULL,
        async INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        UNIQUE (namespace_id, identifier)
      ) WITHOUT ROWID`
    ])),
  "0002_verifications": Effect.flatMap(SqlClient.SqlClient, (sql) =>
    statements(sql, [
      // Dictionaries: rollups hold small integers. Identity 0 is "no identity", tag set 0 is [].
      `CREATE TABLE v_partitions (
        no INTEGER PRIMARY KEY,
        workspace_id TEXT NOT NULL,
        api_id TEXT NOT NULL,
        compacted_through INTEGER NOT NULL DEFAULT -1,
        UNIQUE (workspace_id, api_id)
      )`,
      "CREATE TABLE v_keys (no INTEGER PRIMARY KEY, value TEXT NOT NULL UNIQUE)",
      `CREATE TABLE v_identities (
        no INTEGER PRIMARY KEY,
        identity_id TEXT NOT NULL,
        external_id TEXT NOT NULL,
        UNIQUE (identity_id, external_id)
      )`,
      "CREATE TABLE v_tagsets (no INTEGER PRIMARY KEY, tags TEXT NOT NULL UNIQUE)",
      "INSERT INTO v_tagsets (no, tags) VALUES (0, '[]')",
      // Written at ingest, in the transaction that stores the batch: time-clustered, so a batch
      // touches the pages at the end of each api's range.
      rollup("r_hour", ["p", "hour", "key", "identity", "tagset"]),
      rollup("r_hour_total", ["p", "hour"]),
      // Written by compaction once a day has closed (and by late events for closed days).
      rollup("r_day", ["p", "day", "key", "identity", "tagset"]),
      rollup("r_day_total", ["p", "day"]),
      // Clustered by the dimension, so grouping by it reads in index order without a sort.
      rollup("r_day_key", ["p", "key", "day"]),
      rollup("r_day_identity", ["p", "identity", "day"]),
      rollup("r_day_tagset", ["p", "tagset", "day"])
    ])),
  // Keyset pages of a namespace's overrides read (namespace_id, id) in order.
  "0003_overrides_by_namespace_and_id": Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => statements(sql, ["CREATE INDEX overrides_namespace_id ON overrides (namespace_id, id)"])
  ),
  // Receipts of idempotency keys, written in the transaction of the batch they stand for.
  "0004_idempotency_receipts": Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      statements(sql, [
        "CREATE TABLE idempotency_receipts (workspace_id TEXT NOT NULL, key TEXT NOT NULL, " +
        "operation TEXT NOT NULL, fingerprint TEXT NOT NULL, response TEXT NOT NULL, " +
        "created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, PRIMARY KEY (workspace_id, key)) WITHOUT ROWID",
        "CREATE INDEX idempotency_receipts_expiry ON idempotency_receipts (expires_at)"
      ])
  ),
  // A counter that every write to the catalog moves, whichever process makes it (triggers): servers
  // remember catalog reads until it moves, and commits of verifications leave it alone.
  "0005_catalog_version": Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      statements(sql, [
        "CREATE TABLE catalog_version (id INTEGER PRIMARY KEY CHECK (id = 0), n INTEGER NOT NULL)",
        "INSERT INTO catalog_version (id, n) VALUES (0, 0)",
        ...versioned(["workspaces", "root_keys", "apis", "namespaces", "overrides"])
      ])
  ),
  // Keys keymeter issues, their end customers, and their credits. Balances live apart from the
  // keys and move no catalog version: spending credits does not make servers forget keys.
  "0006_keys": Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      statements(sql, [
        `CREATE TABLE identities (
          id TEXT PRIMARY KEY,
          workspace_id TEXT NOT NULL REFERENCES workspaces (id),
          external_id TEXT NOT NULL,
          enabled INTEGER NOT NULL,
          created_at INTEGER NOT NULL,
          UNIQUE (workspace_id, external_id)
        ) WITHOUT ROWID`,
        `CREATE TABLE keys (
          id TEXT PRIMARY KEY,
          workspace_id TEXT NOT NULL REFERENCES workspaces (id),
          api_id TEXT NOT NULL,
          hash TEXT NOT NULL UNIQUE,
          start TEXT NOT NULL,
          name TEXT,
          meta TEXT,
          permissions TEXT NOT NULL,
          enabled INTEGER NOT NULL,
          expires INTEGER,
          credited INTEGER NOT NULL,
          refill TEXT,
          ratelimits TEXT NOT NULL,
          identity_id TEXT REFERENCES identities (id),
          created_at INTEGER NOT NULL,
          updated_at INTEGER NOT NULL
        ) WITHOUT ROWID`,
        "CREATE INDEX keys_api ON keys (workspace_id, api_id, id)",
        "CREATE INDEX keys_identity ON keys (identity_id, id)",
        `CREATE TABLE key_credits (
          key_id TEXT PRIMARY KEY REFERENCES keys (id) ON DELETE CASCADE,
          remaining INTEGER NOT NULL,
          refilled_at INTEGER NOT NULL
        ) WITHOUT ROWID`,
        ...versioned(["identities", "keys"])
      ])
  ),
  // Unkey's fields: a key's environment; an identity's meta and the limits its keys share.
  "0007_environment_identity_meta": Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      statements(sql, [
        "ALTER TABLE keys ADD COLUMN environment TEXT",
        "ALTER TABLE identities ADD COLUMN meta TEXT",
        "ALTER TABLE identities ADD COLUMN ratelimits TEXT NOT NULL DEFAULT '[]'",
        "CREATE INDEX identities_page ON identities (workspace_id, id)"
      ])
  ),
  // Unkey's RBAC: a workspace's permissions and roles; keys hold roles by id.
  "0008_rbac": Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      statements(sql, [
        `CREATE TABLE permissions (
          id TEXT PRIMARY KEY,
          workspace_id TEXT NOT NULL REFERENCES workspaces (id),
          name TEXT NOT NULL,
          slug TEXT NOT NULL,
          description TEXT,
          created_at INTEGER NOT NULL,
          UNIQUE (workspace_id, name),
          UNIQUE (workspace_id, slug)
        ) WITHOUT ROWID`,
        `CREATE TABLE roles (
          id TEXT PRIMARY KEY,
          workspace_id TEXT NOT NULL REFERENCES workspaces (id),
          name TEXT NOT NULL,
          description TEXT,
          permissions TEXT NOT NULL,
          created_at INTEGER NOT NULL,
          UNIQUE (workspace_id, name)
        ) WITHOUT ROWID`,
        "ALTER TABLE keys ADD COLUMN roles TEXT",
        ...versioned(["permissions", "roles"])
      ])
  ),
  // Rate-limit decisions. Counted through their projection onto verifications (namespace as api,
  // identifier as key, override as identity), in tables of 0002's shapes prefixed `rl_`.
  "0009_ratelimits": Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      statements(sql, [
        `CREATE TABLE rl_partitions (
          no INTEGER PRIMARY KEY,
          workspace_id TEXT NOT NULL,
          api_id TEXT NOT NULL,
          compacted_through INTEGER NOT NULL DEFAULT -1,
          UNIQUE (workspace_id, api_id)
        )`,
        "CREATE TABLE rl_keys (no INTEGER PRIMARY KEY, value TEXT NOT NULL UNIQUE)",
        `CREATE TABLE rl_identities (
          no INTEGER PRIMARY KEY,
          identity_id TEXT NOT NULL,
          external_id TEXT NOT NULL,
          UNIQUE (identity_id, external_id)
        )`,
        "CREATE TABLE rl_tagsets (no INTEGER PRIMARY KEY, tags TEXT NOT NULL UNIQUE)",
        "INSERT INTO rl_tagsets (no, tags) VALUES (0, '[]')",
        rollup("rl_hour", ["p", "hour", "key", "identity", "tagset"]),
        rollup("rl_hour_total", ["p", "hour"]),
        rollup("rl_day", ["p", "day", "key", "identity", "tagset"]),
        rollup("rl_day_total", ["p", "day"]),
        rollup("rl_day_key", ["p", "key", "day"]),
        rollup("rl_day_identity", ["p", "identity", "day"]),
        rollup("rl_day_tagset", ["p", "tagset", "day"]),
        // Every decision in full, for a bounded time; the namespace, identifier and override are
        // the codes of the count tables' dictionaries (rl_partitions, rl_keys, rl_identities; 0: no
        // override), so a row costs a few dozen bytes.
        `CREATE TABLE rl_decisions (
          p INTEGER NOT NULL,
          time INTEGER NOT NULL,
          hour INTEGER NOT NULL,
          identifier INTEGER NOT NULL,
          passed INTEGER NOT NULL,
          "limit" INTEGER NOT NULL,
          duration INTEGER NOT NULL,
          remaining INTEGER NOT NULL,
          cost INTEGER NOT NULL,
          override INTEGER NOT NULL,
          source INTEGER NOT NULL,
          latency REAL NOT NULL,
          detail TEXT
        )`,
        // A namespace's latest decisions are read backwards, ties by arrival (rowid); its oldest are
        // dropped forwards; an identifier's are read in the hours the rollups say it was active.
        // No index by identifier: each insert into one lands on a page of its own (one on
        // (p, hour, identifier, time) made a decision cost 9.8 µs to store instead of 2.8, on the
        // server's thread).
        "CREATE INDEX rl_decisions_time ON rl_decisions (p, time)",
        `CREATE TABLE rl_override_hits (
          workspace_id TEXT NOT NULL,
          override_id TEXT NOT NULL,
          hits INTEGER NOT NULL,
          last_hit_at INTEGER NOT NULL,
          PRIMARY KEY (workspace_id, override_id)
        ) WITHOUT ROWID`
      ])
  ),
  // Every verification in full, for a bounded time (`eventDays`), for raw scans: the partition
  // (api), key, identity and tag set are the codes of 0002's dictionaries (v_partitions, v_keys,
  // v_identities, v_tagsets; identity 0: none, tag set 0: []), the outcome its position in
  // `Verification.Outcomes`, latency whole microseconds, region "" when unknown. Indexed only on
  // (p, time), as rl_decisions: scans read a partition's time range, and the oldest rows are
  // deleted forwards; an insert lands at the end of its partition's range.
  "0010_verification_events": Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      statements(sql, [
        `CREATE TABLE v_events (
          p INTEGER NOT NULL,
          time INTEGER NOT NULL,
          key INTEGER NOT NULL,
          identity INTEGER NOT NULL,
          tagset INTEGER NOT NULL,
          outcome INTEGER NOT NULL,
          spent_credits INTEGER NOT NULL,
          latency_us INTEGER NOT NULL,
          region TEXT NOT NULL
        )`,
        "CREATE INDEX v_events_time ON v_events (p, time)"
      ])
  ),
  // A version per part of the catalog (`CatalogPart`) instead of one for all: a write moves the
  // parts its table holds (`SqlCatalog.PARTS_OF_TABLE`), so new keys or overrides leave the root
  // keys, apis and namespaces that servers remember valid. Overrides move none.
  "0011_catalog_parts": Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      statements(sql, [
        ...VERSIONED_0010.flatMap((table) =>
          ["insert", "update", "delete"].map((event) => `DROP TRIGGER ${table}_${event}_version`)
        ),
        "DROP TABLE catalog_version",
        "CREATE TABLE catalog_parts (part TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID",
        `INSERT INTO catalog_parts (part, n) VALUES ${CatalogPart.ALL.map((part) => `('${part}', 0)`).join(", ")}`,
        ...Object.entries(SqlCatalog.PARTS_OF_TABLE).filter(([, parts]) => parts.length > 0).flatMap((
          [table, parts]
        ) =>
          ["INSERT", "UPDATE", "DELETE"].map((event) =>
            `CREATE TRIGGER ${table}_${event.toLowerCase()}_parts AFTER ${event} ON ${table} BEGIN ` +
            `UPDATE catalog_parts SET n = n + 1 WHERE part IN (${parts.map((part) => `'${part}'`).join(", ")}); END`
          )
        )
      ])
  )
} as const

/** Number of the newest migration this version knows. */
export const LATEST = Math.max(...Object.keys(migrations).map((id) => Number(id.split("_")[0])))

const TABLE = "effect_sql_migrations"

/** keymeter's mark in a SQLite file's header (`PRAGMA application_id`): "KMTR". */
export const APPLICATION_ID = 0x4b4d5452

/**
 * Makes sure `filename` is keymeter's before anything is written to it: marked with
 * {@link APPLICATION_ID}, or a keymeter file from before the mark (its migration table holds
 * keymeter's first migration), or new and empty; those are marked. Anything else is refused and
 * left byte-identical: another application's database must never be migrated into.
 */
export const claim = (filename: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [{ application_id: id }] = yield* sql.unsafe<{ application_id: number }>("PRAGMA application_id")
    if (id === APPLICATION_ID) return
    if (id !== 0) {
      return yield* new SchemaError({
        message: `${filename} belongs to another application (its SQLite application_id is ${id}); keymeter ` +
          "left it as it was. Point keymeter at a new file."
      })
    }
    const tables = (yield* sql.unsafe<{ name: string }>(
      "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
    )).map((row) => row.name)
    if (tables.includes(TABLE)) {
      const [first] = yield* sql.unsafe<{ name: string }>(`SELECT name FROM ${TABLE} WHERE migration_id = 1`)
      if (first?.name === "catalog") return yield* sql.unsafe(`PRAGMA application_id = ${APPLICATION_ID}`)
    }
    if (tables.length > 0) {
      const shown = tables.slice(0, 5).join(", ") + (tables.length > 5 ? ", ..." : "")
      return yield* new SchemaError({
        message: `${filename} is not a keymeter database (it holds tables of another application: ${shown}); ` +
          "keymeter left it as it was. Point keymeter at a new file."
      })
    }
    yield* sql.unsafe(`PRAGMA application_id = ${APPLICATION_ID}`)
  }).pipe(
    Effect.catchTag("SqlError", (error) =>
      new SchemaError({ message: `Could not open the database: ${String(error.cause ?? error.message)}` }))
  )

/**
 * Refuses a database migrated by a newer keymeter, then runs the missing migrations, all in one
 * transaction (the Migrator's): a failed one leaves the file as it was. Run after {@link claim}.
 */
export const run = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const exists = yield* sql.unsafe<{ n: number }>(
    `SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = '${TABLE}'`
  )
  if (exists[0]!.n > 0) {
    const [row] = yield* sql.unsafe<{ v: number | null }>(`SELECT max(migration_id) AS v FROM ${TABLE}`)
    const version = row?.v ?? 0
    if (version > LATEST) {
      return yield* new SchemaError({
        message: `This database has schema version ${version}, written by a newer keymeter; this version ` +
          `reads up to ${LATEST}. Upgrade keymeter, or use another file.`
      })
    }
  }
  yield* Migrator.make({})({ loader: Migrator.fromRecord(migrations) })
}).pipe(
  Effect.catchTags({
    MigrationError: (error) => new SchemaError({ message: `Could not migrate the database: ${error.message}` }),
    SqlError: (error) =>
      new SchemaError({ message: `Could not open the database: ${String(error.cause ?? error.message)}` })
  })
)
