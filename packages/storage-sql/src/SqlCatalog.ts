/**
 * The catalog half of the Storage port in SQL, shared by the adapters on SQL databases: the
 * statements (the rows and their mappers are in `internal/CatalogRows`, permissions' and roles'
 * statements in `internal/RbacStatements`), with the few differences of a database passed in as its
 * {@link Dialect} (how it stores booleans, finds a character, locks a row). Each write that must
 * be atomic is one statement or one transaction.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Api } from "@keymeter/core/Api"
import * as CatalogPart from "@keymeter/core/CatalogPart"
import { StorageError } from "@keymeter/core/Errors"
import type { Credits } from "@keymeter/core/Key"
import { changeBalance, spend } from "@keymeter/core/Key"
import { Namespace } from "@keymeter/core/Namespace"
import type { PutResult } from "@keymeter/core/Storage"
import { Catalog } from "@keymeter/core/Storage"
import { Workspace } from "@keymeter/core/Workspace"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { IdentityRow, Int8, KeyRow, OverrideRow, RootKeyRow } from "./internal/CatalogRows.js"
import { first, identityValues, keyValues, toIdentity, toKey, toOverride, toRootKey } from "./internal/CatalogRows.js"
import * as RbacStatements from "./internal/RbacStatements.js"

/**
 * The parts a write to each table changes: what its triggers (SQLite) or notifications
 * (PostgreSQL) move. Overrides move none (see `CatalogPart`); a workspace moves all.
 */
export const PARTS_OF_TABLE: { readonly [table: string]: ReadonlyArray<CatalogPart.CatalogPart> } = {
  workspaces: CatalogPart.ALL,
  root_keys: ["rootKeys"],
  apis: ["apis"],
  namespaces: ["namespaces"],
  overrides: [],
  identities: ["keys"],
  keys: ["keys"],
  permissions: ["keys"],
  roles: ["keys"]
}

/** How a batch of keys aborts its transaction on a conflict. */
const BATCH_CONFLICT = Symbol.for("@keymeter/storage-sql/SqlCatalog/BatchConflict")

/** What differs between the SQL databases the catalog runs on. */
export interface Dialect {
  /** The database's name, in errors and logs. */
  readonly name: string
  /** A boolean as a parameter: SQLite stores 1 or 0, PostgreSQL a boolean. */
  readonly bool: (value: boolean) => boolean | number
  /** The function that finds a substring: SQLite's `instr`, PostgreSQL's `strpos`. */
  readonly position: "instr" | "strpos"
  /**
   * True when a read inside a transaction can lock its row (`FOR UPDATE`), as PostgreSQL's can;
   * SQLite has one writer at a time, so its transactions need no row locks.
   */
  readonly rowLocks: boolean
}

/** A SQL failure as the port's error; the SQL text and file paths stay in the log. */
export const storageError = (dialect: Pick<Dialect, "name">) => (error: SqlError) =>
  Effect.zipRight(
    Effect.logWarning(`${dialect.name} failure`, error.cause),
    Effect.fail(new StorageError({ message: `${dialect.name}: ${error.message}`, cause: error.cause }))
  )

/** The catalog on the SqlClient in context (migrated), in a database's dialect. */
export const make = (dialect: Dialect) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { bool } = dialect
    const run = <A, R>(effect: Effect.Effect<A, SqlError, R>) => Effect.catchAll(effect, storageError(dialect))

    /** A balance; with `lock` (where rows lock), its row stays locked until the transaction ends. */
    const readCredits = (keyId: string, lock = false) =>
      Effect.map(
        lock && dialect.rowLocks
          ? sql<{ remaining: Int8; refilled_at: Int8 }>`SELECT remaining, refilled_at FROM key_credits
          WHERE key_id = ${keyId} FOR UPDATE`
          : sql<{ remaining: Int8; refilled_at: Int8 }>`SELECT remaining, refilled_at FROM key_credits
          WHERE key_id = ${keyId}`,
        (rows) =>
          Option.map(
            first(rows),
            (row): Credits => ({ remaining: Number(row.remaining), refilledAt: Number(row.refilled_at) })
          )
      )
    const writeCredits = (keyId: string, credits: Credits) =>
      sql`INSERT INTO key_credits (key_id, remaining, refilled_at)
      VALUES (${keyId}, ${credits.remaining}, ${credits.refilledAt})
      ON CONFLICT (key_id) DO UPDATE SET remaining = excluded.remaining, refilled_at = excluded.refilled_at`

    return Catalog.of({
      isEmpty: run(
        Effect.map(sql<{ n: Int8 }>`SELECT count(*) AS n FROM workspaces`, (rows) => Number(rows[0]!.n) === 0)
      ),
      putWorkspace: (workspace) =>
        run(sql.withTransaction(Effect.gen(function*() {
          const existing = yield* sql`SELECT 1 FROM workspaces WHERE id = ${workspace.id}`
          yield* sql`INSERT INTO workspaces (id, name) VALUES (${workspace.id}, ${workspace.name})
          ON CONFLICT (id) DO UPDATE SET name = excluded.name`
          return (existing.length > 0 ? "updated" : "created") as PutResult
        }))),
      getWorkspace: (id) =>
        run(Effect.map(
          sql<{ id: string; name: string }>`SELECT id, name FROM workspaces WHERE id = ${id}`,
          (rows) => Option.map(first(rows), (row) => new Workspace(row))
        )),
      listWorkspaces: run(Effect.map(
        sql<{ id: string; name: string }>`SELECT id, name FROM workspaces ORDER BY id`,
        (rows) => rows.map((row) => new Workspace(row))
      )),
      putRootKey: (key) =>
        run(sql.withTransaction(Effect.gen(function*() {
          const [existing] = yield* sql<
            { workspace_id: string }
          >`SELECT workspace_id FROM root_keys WHERE hash = ${key.hash}`
          if (existing !== undefined && existing.workspace_id !== key.workspaceId) return "conflict" as PutResult
          yield* sql`INSERT INTO root_keys (id, workspace_id, name, hash, permissions, created_at, expires_at, disabled)
          VALUES (${key.id}, ${key.workspaceId}, ${key.name}, ${key.hash}, ${JSON.stringify(key.permissions)},
            ${key.createdAt}, ${key.expiresAt ?? null}, ${bool(key.disabled)})
          ON CONFLICT (hash) DO UPDATE SET name = excluded.name, permissions = excluded.permissions,
            expires_at = excluded.expires_at, disabled = excluded.disabled`
          return (existing !== undefined ? "updated" : "created") as PutResult
        }))),
      findRootKeyByHash: (hash) =>
        run(Effect.map(
          sql<RootKeyRow>`SELECT * FROM root_keys WHERE hash = ${hash}`,
          (rows) => Option.map(first(rows), toRootKey)
        )),
      listRootKeys: (workspaceId) =>
        run(Effect.map(
          sql<RootKeyRow>`SELECT * FROM root_keys WHERE workspace_id = ${workspaceId} ORDER BY id`,
          (rows) => rows.map(toRootKey)
        )),
      deleteRootKey: (workspaceId, id) =>
        run(Effect.map(
          sql<{ id: string }>`DELETE FROM root_keys WHERE workspace_id = ${workspaceId} AND id = ${id} RETURNING id`,
          (rows) => rows.length > 0
        )),
      putApi: (api) =>
        run(sql.withTransaction(Effect.gen(function*() {
          const [existing] = yield* sql<{ workspace_id: string }>`SELECT workspace_id FROM apis WHERE id = ${api.id}`
          if (existing !== undefined && existing.workspace_id !== api.workspaceId) return "conflict" as PutResult
          yield* sql`INSERT INTO apis (id, workspace_id, name) VALUES (${api.id}, ${api.workspaceId}, ${api.name})
          ON CONFLICT (id) DO UPDATE SET name = excluded.name`
          return (existing !== undefined ? "updated" : "created") as PutResult
        }))),
      getApi: (workspaceId, id) =>
        run(Effect.map(
          sql<{ id: string; workspace_id: string; name: string }>`SELECT id, workspace_id, name FROM apis
          WHERE id = ${id} AND workspace_id = ${workspaceId}`,
          (rows) =>
            Option.map(first(rows), (row) => new Api({ id: row.id, workspaceId: row.workspace_id, name: row.name }))
        )),
      listApis: (workspaceId) =>
        run(Effect.map(
          sql<{ id: string; name: string }>`SELECT id, name FROM apis WHERE workspace_id = ${workspaceId} ORDER BY id`,
          (rows) => rows.map((row) => new Api({ id: row.id, workspaceId, name: row.name }))
        )),
      putNamespace: (namespace) =>
        run(sql.withTransaction(Effect.gen(function*() {
          const [byId] = yield* sql<
            { workspace_id: string }
          >`SELECT workspace_id FROM namespaces WHERE id = ${namespace.id}`
          if (byId !== undefined && byId.workspace_id !== namespace.workspaceId) return "conflict" as PutResult
          const [byName] = yield* sql<{ id: string }>`SELECT id FROM namespaces
          WHERE workspace_id = ${namespace.workspaceId} AND name = ${namespace.name}`
          if (byName !== undefined && byName.id !== namespace.id) return "conflict" as PutResult
          yield* sql`INSERT INTO namespaces (id, workspace_id, name)
          VALUES (${namespace.id}, ${namespace.workspaceId}, ${namespace.name})
          ON CONFLICT (id) DO UPDATE SET name = excluded.name`
          return (byId !== undefined ? "updated" : "created") as PutResult
        }))),
      ensureNamespace: (namespace) =>
        run(Effect.gen(function*() {
          // One statement: concurrent creators of one name leave exactly one namespace.
          yield* sql`INSERT INTO namespaces (id, workspace_id, name)
          VALUES (${namespace.id}, ${namespace.workspaceId}, ${namespace.name})
          ON CONFLICT (workspace_id, name) DO NOTHING`
          const [row] = yield* sql<{ id: string }>`SELECT id FROM namespaces
          WHERE workspace_id = ${namespace.workspaceId} AND name = ${namespace.name}`
          return new Namespace({ id: row!.id, workspaceId: namespace.workspaceId, name: namespace.name })
        })),
      getNamespace: (workspaceId, id) =>
        run(Effect.map(
          sql<
            { id: string; name: string }
          >`SELECT id, name FROM namespaces WHERE id = ${id} AND workspace_id = ${workspaceId}`,
          (rows) => Option.map(first(rows), (row) => new Namespace({ id: row.id, workspaceId, name: row.name }))
        )),
      findNamespaceByName: (workspaceId, name) =>
        run(Effect.map(
          sql<{ id: string }>`SELECT id FROM namespaces WHERE workspace_id = ${workspaceId} AND name = ${name}`,
          (rows) => Option.map(first(rows), (row) => new Namespace({ id: row.id, workspaceId, name }))
        )),
      upsertOverride: (write) =>
        run(Effect.map(
          sql<
            OverrideRow
          >`INSERT INTO overrides (id, namespace_id, identifier, "limit", duration, async, created_at, updated_at)
          VALUES (${write.id}, ${write.namespaceId}, ${write.identifier}, ${write.limit}, ${write.duration},
            ${bool(write.async)}, ${write.now}, ${write.now})
          ON CONFLICT (namespace_id, identifier) DO UPDATE SET "limit" = excluded."limit",
            duration = excluded.duration, async = excluded.async, updated_at = excluded.updated_at
          RETURNING id, namespace_id, identifier, "limit", duration, async, created_at, updated_at`,
          (rows) => toOverride(rows[0]!)
        )),
      getOverride: (namespaceId, identifier) =>
        run(Effect.map(
          sql<OverrideRow>`SELECT * FROM overrides WHERE namespace_id = ${namespaceId} AND identifier = ${identifier}`,
          (rows) => Option.map(first(rows), toOverride)
        )),
      deleteOverride: (namespaceId, identifier) =>
        run(Effect.map(
          sql<
            { id: string }
          >`DELETE FROM overrides WHERE namespace_id = ${namespaceId} AND identifier = ${identifier} RETURNING id`,
          (rows) => rows.length > 0
        )),
      listOverrides: (namespaceId, page) =>
        run(Effect.gen(function*() {
          const rows = page.after === undefined
            ? yield* sql<
              OverrideRow
            >`SELECT * FROM overrides WHERE namespace_id = ${namespaceId} ORDER BY id LIMIT ${page.limit}`
            : yield* sql<OverrideRow>`SELECT * FROM overrides WHERE namespace_id = ${namespaceId} AND id > ${page.after}
              ORDER BY id LIMIT ${page.limit}`
          const [count] = yield* sql<
            { n: Int8 }
          >`SELECT count(*) AS n FROM overrides WHERE namespace_id = ${namespaceId}`
          return { overrides: rows.map(toOverride), total: Number(count!.n) }
        })),
      allOverrides: (namespaceId) =>
        run(
          Effect.map(
            sql<OverrideRow>`SELECT * FROM overrides WHERE namespace_id = ${namespaceId}`,
            (rows) => rows.map(toOverride)
          )
        ),
      ensureIdentity: (identity) =>
        run(Effect.gen(function*() {
          // One statement: concurrent creators of one external id leave exactly one identity.
          yield* sql`INSERT INTO identities ${sql.insert(identityValues(identity, bool))}
          ON CONFLICT (workspace_id, external_id) DO NOTHING`
          const [row] = yield* sql<IdentityRow>`SELECT * FROM identities
          WHERE workspace_id = ${identity.workspaceId} AND external_id = ${identity.externalId}`
          return toIdentity(row!)
        })),
      getIdentity: (workspaceId, id) =>
        run(Effect.map(
          sql<IdentityRow>`SELECT * FROM identities WHERE id = ${id} AND workspace_id = ${workspaceId}`,
          (rows) => Option.map(first(rows), toIdentity)
        )),
      findIdentityByExternalId: (workspaceId, externalId) =>
        run(Effect.map(
          sql<
            IdentityRow
          >`SELECT * FROM identities WHERE workspace_id = ${workspaceId} AND external_id = ${externalId}`,
          (rows) => Option.map(first(rows), toIdentity)
        )),
      replaceIdentity: (identity) =>
        run(Effect.map(
          sql<{ id: string }>`UPDATE identities SET enabled = ${bool(identity.enabled)},
            meta = ${identity.meta !== undefined ? JSON.stringify(identity.meta) : null},
            ratelimits = ${JSON.stringify(identity.ratelimits ?? [])}
          WHERE id = ${identity.id} AND workspace_id = ${identity.workspaceId} RETURNING id`,
          (rows) => rows.length > 0
        )),
      listIdentities: (workspaceId, page) =>
        run(Effect.gen(function*() {
          const rows = page.after === undefined
            ? yield* sql<IdentityRow>`SELECT * FROM identities WHERE workspace_id = ${workspaceId}
              ORDER BY id LIMIT ${page.limit}`
            : yield* sql<IdentityRow>`SELECT * FROM identities WHERE workspace_id = ${workspaceId}
              AND id > ${page.after} ORDER BY id LIMIT ${page.limit}`
          const [count] = yield* sql<{ n: Int8 }>`SELECT count(*) AS n FROM identities
          WHERE workspace_id = ${workspaceId}`
          return { identities: rows.map(toIdentity), total: Number(count!.n) }
        })),
      deleteIdentity: (workspaceId, id) =>
        run(sql.withTransaction(Effect.gen(function*() {
          yield* sql`UPDATE keys SET identity_id = NULL WHERE identity_id = ${id} AND workspace_id = ${workspaceId}`
          const deleted = yield* sql<{ id: string }>`DELETE FROM identities
          WHERE id = ${id} AND workspace_id = ${workspaceId} RETURNING id`
          return deleted.length > 0
        }))),
      ...RbacStatements.make(sql, run),
      insertKeys: (entries) =>
        run(
          sql.withTransaction(Effect.gen(function*() {
            for (const { credits, key } of entries) {
              const inserted = yield* sql<{ id: string }>`INSERT INTO keys ${sql.insert(keyValues(key, bool))}
              ON CONFLICT DO NOTHING RETURNING id`
              // Failing rolls back what the batch inserted before.
              if (inserted.length === 0) return yield* Effect.fail(BATCH_CONFLICT)
              if (credits !== undefined) yield* writeCredits(key.id, credits)
            }
            return "created" as const
          })).pipe(Effect.catchIf((error) => error === BATCH_CONFLICT, () => Effect.succeed("conflict" as const)))
        ),
      insertKey: (key, credits) => {
        const insert = Effect.map(
          sql<{ id: string }>`INSERT INTO keys ${sql.insert(keyValues(key, bool))} ON CONFLICT DO NOTHING RETURNING id`,
          (inserted) => inserted.length === 0 ? "conflict" as const : "created" as const
        )
        // One statement is atomic alone: a transaction (a savepoint inside a shared commit) only
        // for a key with credits, whose balance row goes with it.
        return run(
          credits === undefined ?
            insert :
            sql.withTransaction(
              Effect.tap(insert, (result) => result === "created" ? writeCredits(key.id, credits) : Effect.void)
            )
        )
      },
      replaceKey: (key, credits) =>
        run(sql.withTransaction(Effect.gen(function*() {
          const { created_at: _, hash: __, id: ___, workspace_id: ____, ...values } = keyValues(key, bool)
          const updated = yield* sql<{ id: string }>`UPDATE keys SET ${sql.update(values)}
          WHERE id = ${key.id} AND workspace_id = ${key.workspaceId} RETURNING id`
          if (updated.length === 0) return false
          if (credits === "clear") yield* sql`DELETE FROM key_credits WHERE key_id = ${key.id}`
          else if (credits !== "keep") yield* writeCredits(key.id, credits)
          return true
        }))),
      findKeyByHash: (hash) =>
        run(Effect.map(sql<KeyRow>`SELECT * FROM keys WHERE hash = ${hash}`, (rows) => Option.map(first(rows), toKey))),
      getKey: (workspaceId, id) =>
        run(Effect.map(
          sql<KeyRow>`SELECT * FROM keys WHERE id = ${id} AND workspace_id = ${workspaceId}`,
          (rows) => Option.map(first(rows), toKey)
        )),
      listKeys: (workspaceId, apiId, page) =>
        run(Effect.gen(function*() {
          const identity = page.identityId === undefined ? sql`1 = 1` : sql`identity_id = ${page.identityId}`
          const after = page.after === undefined ? sql`1 = 1` : sql`id > ${page.after}`
          const rows = yield* sql<KeyRow>`SELECT * FROM keys
          WHERE workspace_id = ${workspaceId} AND api_id = ${apiId} AND ${identity} AND ${after}
          ORDER BY id LIMIT ${page.limit}`
          const [count] = yield* sql<{ n: Int8 }>`SELECT count(*) AS n FROM keys
          WHERE workspace_id = ${workspaceId} AND api_id = ${apiId} AND ${identity}`
          return { keys: rows.map(toKey), total: Number(count!.n) }
        })),
      deleteKey: (workspaceId, id) =>
        run(Effect.map(
          sql<{ id: string }>`DELETE FROM keys WHERE id = ${id} AND workspace_id = ${workspaceId} RETURNING id`,
          (rows) => rows.length > 0
        )),
      deleteKeysOfApi: (workspaceId, apiId) =>
        run(Effect.map(
          sql<{ id: string }>`DELETE FROM keys WHERE workspace_id = ${workspaceId} AND api_id = ${apiId} RETURNING id`,
          (rows) => rows.length
        )),
      deleteApi: (workspaceId, id) =>
        run(sql.withTransaction(Effect.gen(function*() {
          yield* sql`DELETE FROM keys WHERE workspace_id = ${workspaceId} AND api_id = ${id}`
          const deleted = yield* sql<{ id: string }>`DELETE FROM apis WHERE id = ${id} AND workspace_id = ${workspaceId}
          RETURNING id`
          return deleted.length > 0
        }))),
      getCredits: (keyId) => run(readCredits(keyId)),
      spendCredits: (keyId, cost, refill, now) =>
        // The balance row is locked for the transaction: spends of a key on every server queue on it.
        run(sql.withTransaction(Effect.gen(function*() {
          const balance = yield* readCredits(keyId, true)
          if (Option.isNone(balance)) return Option.none()
          const result = spend(balance.value, cost, refill, now)
          if (result.changed) yield* writeCredits(keyId, result.balance)
          return Option.some({ spent: result.spent, remaining: result.balance.remaining })
        }))),
      changeCredits: (keyId, op, value) =>
        run(sql.withTransaction(Effect.gen(function*() {
          const balance = yield* readCredits(keyId, true)
          if (Option.isNone(balance)) return Option.none()
          const changed = changeBalance(balance.value, op, value)
          yield* writeCredits(keyId, changed)
          return Option.some(changed)
        }))),
      listNamespaces: (workspaceId) =>
        run(Effect.map(
          sql<{ id: string; name: string }>`SELECT id, name FROM namespaces WHERE workspace_id = ${workspaceId}
          ORDER BY name`,
          (rows) => rows.map((row) => new Namespace({ id: row.id, workspaceId, name: row.name }))
        )),
      namespacePatterns: (workspaceId) =>
        run(Effect.map(
          sql<
            { id: string; name: string }
          >`SELECT id, name FROM namespaces WHERE workspace_id = ${workspaceId} AND ${
            sql.literal(dialect.position)
          }(name, '*') > 0`,
          (rows) => rows.map((row) => new Namespace({ id: row.id, workspaceId, name: row.name }))
        ))
    })
  })
