/**
 * The PostgreSQL schema, as versioned migrations run at start: in one transaction holding an
 * advisory lock, so servers that start together migrate once (the others wait, then find it done).
 * A database migrated by a newer keymeter is refused.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"

/** The database belongs to another keymeter version, or could not be migrated. */
export class SchemaError extends Data.TaggedError("SchemaError")<{ readonly message: string }> {}

/**
 * The channel every catalog change is announced on; the payload is the writer's
 * `application_name` (each server sets its own, so it can tell its own changes), a space, and the
 * table changed; nothing after the space is a server checking at start that it hears the channel.
 */
export const CHANNEL = "keymeter_catalog"

/** Tables whose changes servers must see: each row written bumps `catalog_version` and notifies. */
const VERSIONED = ["workspaces", "root_keys", "apis", "namespaces", "overrides", "identities", "keys"]

/** Every migration, by number: a list of statements. Numbers only grow; a released one never changes. */
export const migrations: ReadonlyArray<
  { readonly id: number; readonly name: string; readonly sql: ReadonlyArray<string> }
> = [
  {
    id: 1,
    name: "catalog",
    sql: [
      "CREATE TABLE workspaces (id text PRIMARY KEY, name text NOT NULL)",
      `CREATE TABLE root_keys (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces (id),
        name text NOT NULL,
        hash text NOT NULL UNIQUE,
        permissions text NOT NULL,
        created_at bigint NOT NULL,
        expires_at bigint,
        disabled boolean NOT NULL DEFAULT false
      )`,
      "CREATE INDEX root_keys_workspace ON root_keys (workspace_id)",
      "CREATE TABLE apis (id text PRIMARY KEY, workspace_id text NOT NULL REFERENCES workspaces (id), name text NOT NULL)",
      `CREATE TABLE namespaces (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces (id),
        name text NOT NULL,
        UNIQUE (workspace_id, name)
      )`,
      `CREATE TABLE overrides (
        id text PRIMARY KEY,
        namespace_id text NOT NULL REFERENCES namespaces (id),
        identifier text NOT NULL,
        "limit" bigint NOT NULL,
        duration bigint NOT NULL,
        async boolean NOT NULL,
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL,
        UNIQUE (namespace_id, identifier)
      )`,
      "CREATE INDEX overrides_namespace_id ON overrides (namespace_id, id)",
      `CREATE TABLE identities (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces (id),
        external_id text NOT NULL,
        enabled boolean NOT NULL,
        created_at bigint NOT NULL,
        UNIQUE (workspace_id, external_id)
      )`,
      `CREATE TABLE keys (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces (id),
        api_id text NOT NULL,
        hash text NOT NULL UNIQUE,
        start text NOT NULL,
        name text,
        meta text,
        permissions text NOT NULL,
        enabled boolean NOT NULL,
        expires bigint,
        credited boolean NOT NULL,
        refill text,
        ratelimits text NOT NULL,
        identity_id text REFERENCES identities (id),
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL
      )`,
      "CREATE INDEX keys_api ON keys (workspace_id, api_id, id)",
      "CREATE INDEX keys_identity ON keys (identity_id, id)",
      // Balances apart from the keys: spending credits is not a catalog change.
      `CREATE TABLE key_credits (
        key_id text PRIMARY KEY REFERENCES keys (id) ON DELETE CASCADE,
        remaining bigint NOT NULL,
        refilled_at bigint NOT NULL
      )`,
      // A counter every catalog change moves, read by servers as a safety net for notifications.
      "CREATE TABLE catalog_version (id integer PRIMARY KEY CHECK (id = 0), n bigint NOT NULL)",
      "INSERT INTO catalog_version (id, n) VALUES (0, 0)",
      `CREATE FUNCTION keymeter_catalog_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE catalog_version SET n = n + 1;
        PERFORM pg_notify('${CHANNEL}', current_setting('application_name') || ' ' || TG_TABLE_NAME);
        RETURN NULL;
      END $$`,
      ...VERSIONED.map((table) =>
        `CREATE TRIGGER ${table}_changed AFTER INSERT OR UPDATE OR DELETE ON ${table} ` +
        "FOR EACH ROW EXECUTE FUNCTION keymeter_catalog_changed()"
      )
    ]
  },
  {
    id: 2,
    name: "environment_identity_meta",
    // Unkey's fields: a key's environment; an identity's meta and the limits its keys share.
    sql: [
      "ALTER TABLE keys ADD COLUMN environment text",
      "ALTER TABLE identities ADD COLUMN meta text",
      "ALTER TABLE identities ADD COLUMN ratelimits text NOT NULL DEFAULT '[]'",
      "CREATE INDEX identities_page ON identities (workspace_id, id)"
    ]
  },
  {
    id: 3,
    name: "rbac",
    // Unkey's RBAC: a workspace's permissions and roles; keys hold roles by id.
    sql: [
      `CREATE TABLE permissions (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces (id),
        name text NOT NULL,
        slug text NOT NULL,
        description text,
        created_at bigint NOT NULL,
        UNIQUE (workspace_id, name),
        UNIQUE (workspace_id, slug)
      )`,
      `CREATE TABLE roles (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces (id),
        name text NOT NULL,
        description text,
        permissions text NOT NULL,
        created_at bigint NOT NULL,
        UNIQUE (workspace_id, name)
      )`,
      "ALTER TABLE keys ADD COLUMN roles text",
      ...["permissions", "roles"].map((table) =>
        `CREATE TRIGGER ${table}_changed AFTER INSERT OR UPDATE OR DELETE ON ${table} ` +
        "FOR EACH ROW EXECUTE FUNCTION keymeter_catalog_changed()"
      )
    ]
  }
]

/** Number of the newest migration this version knows. */
export const LATEST = Math.max(...migrations.map((m) => m.id))

const TABLE = "keymeter_migrations"
/** The advisory lock migrations hold ("KMTR"). */
const LOCK = 0x4b4d5452

/** Refuses a database migrated by a newer keymeter, then runs the missing migrations in one transaction. */
export const run = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.withTransaction(Effect.gen(function*() {
    yield* sql.unsafe(`SELECT pg_advisory_xact_lock(${LOCK})`)
    yield* sql.unsafe(
      `CREATE TABLE IF NOT EXISTS ${TABLE} (id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`
    )
    const [row] = yield* sql.unsafe<{ v: number | null }>(`SELECT max(id) AS v FROM ${TABLE}`)
    const version = row?.v ?? 0
    if (version > LATEST) {
      return yield* new SchemaError({
        message: `This database has schema version ${version}, written by a newer keymeter; this version ` +
          `reads up to ${LATEST}. Upgrade keymeter, or use another database.`
      })
    }
    for (const migration of migrations.filter((m) => m.id > version)) {
      for (const statement of migration.sql) yield* sql.unsafe(statement)
      yield* sql`INSERT INTO keymeter_migrations (id, name) VALUES (${migration.id}, ${migration.name})`
    }
  }))
}).pipe(
  Effect.catchTag(
    "SqlError",
    (error) => new SchemaError({ message: `Could not migrate the database: ${String(error.cause ?? error.message)}` })
  )
)
