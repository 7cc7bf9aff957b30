/**
 * The catalog half of the Storage port in SQLite: workspaces, root keys, apis, namespaces and
 * overrides, read fresh on every call so the admin CLI's changes apply at once.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Api } from "@keymeter/core/Api"
import { StorageError } from "@keymeter/core/Errors"
import type { Credits, KeyRatelimit, Refill } from "@keymeter/core/Key"
import { changeBalance, Identity, Key, spend } from "@keymeter/core/Key"
import { Namespace } from "@keymeter/core/Namespace"
import { Override } from "@keymeter/core/Override"
import { RootKey } from "@keymeter/core/RootKey"
import type { PutResult } from "@keymeter/core/Storage"
import { Catalog } from "@keymeter/core/Storage"
import { Workspace } from "@keymeter/core/Workspace"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Batched from "./internal/Batched.js"
import * as CatalogVersion from "./internal/CatalogVersion.js"

/** A SQL failure as the port's error; the SQL text and file paths stay in the log. */
export const storageError = (error: SqlError) =>
  Effect.zipRight(
    Effect.logWarning("SQLite failure", error.cause),
    Effect.fail(new StorageError({ message: `SQLite: ${error.message}`, cause: error.cause }))
  )

interface RootKeyRow {
  readonly id: string
  readonly workspace_id: string
  readonly name: string
  readonly hash: string
  readonly permissions: string
  readonly created_at: number
  readonly expires_at: number | null
  readonly disabled: number
}

const toRootKey = (row: RootKeyRow) =>
  new RootKey({
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    hash: row.hash,
    permissions: JSON.parse(row.permissions) as Array<string>,
    createdAt: row.created_at,
    ...(row.expires_at !== null ? { expiresAt: row.expires_at } : {}),
    disabled: row.disabled !== 0
  })

interface OverrideRow {
  readonly id: string
  readonly namespace_id: string
  readonly identifier: string
  readonly limit: number
  readonly duration: number
  readonly async: number
  readonly created_at: number
  readonly updated_at: number
}

/** An override row as the domain model. */
export const toOverride = (row: OverrideRow) =>
  new Override({
    id: row.id,
    namespaceId: row.namespace_id,
    identifier: row.identifier,
    limit: row.limit,
    duration: row.duration,
    async: row.async !== 0,
    createdAt: row.created_at,
    updatedAt: row.updated_at
  })

interface IdentityRow {
  readonly id: string
  readonly workspace_id: string
  readonly external_id: string
  readonly enabled: number
  readonly created_at: number
}

const toIdentity = (row: IdentityRow) =>
  new Identity({
    id: row.id,
    workspaceId: row.workspace_id,
    externalId: row.external_id,
    enabled: row.enabled !== 0,
    createdAt: row.created_at
  })

interface KeyRow {
  readonly id: string
  readonly workspace_id: string
  readonly api_id: string
  readonly hash: string
  readonly start: string
  readonly name: string | null
  readonly meta: string | null
  readonly permissions: string
  readonly enabled: number
  readonly expires: number | null
  readonly credited: number
  readonly refill: string | null
  readonly ratelimits: string
  readonly identity_id: string | null
  readonly created_at: number
  readonly updated_at: number
}

const toKey = (row: KeyRow) =>
  new Key({
    id: row.id,
    workspaceId: row.workspace_id,
    apiId: row.api_id,
    hash: row.hash,
    start: row.start,
    ...(row.name !== null ? { name: row.name } : {}),
    ...(row.meta !== null ? { meta: JSON.parse(row.meta) as Record<string, unknown> } : {}),
    permissions: JSON.parse(row.permissions) as Array<string>,
    enabled: row.enabled !== 0,
    ...(row.expires !== null ? { expires: row.expires } : {}),
    credited: row.credited !== 0,
    ...(row.refill !== null ? { refill: JSON.parse(row.refill) as Refill } : {}),
    ratelimits: JSON.parse(row.ratelimits) as Array<KeyRatelimit>,
    ...(row.identity_id !== null ? { identityId: row.identity_id } : {}),
    createdAt: row.created_at,
    updatedAt: row.updated_at
  }, { disableValidation: true })

/** A key's columns, in the order of the `keys` table. */
const keyValues = (key: Key) => ({
  id: key.id,
  workspace_id: key.workspaceId,
  api_id: key.apiId,
  hash: key.hash,
  start: key.start,
  name: key.name ?? null,
  meta: key.meta !== undefined ? JSON.stringify(key.meta) : null,
  permissions: JSON.stringify(key.permissions),
  enabled: key.enabled ? 1 : 0,
  expires: key.expires ?? null,
  credited: key.credited ? 1 : 0,
  refill: key.refill !== undefined ? JSON.stringify(key.refill) : null,
  ratelimits: JSON.stringify(key.ratelimits),
  identity_id: key.identityId ?? null,
  created_at: key.createdAt,
  updated_at: key.updatedAt
})

/** The catalog on the SqlClient in context (migrated). */
export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const run = <A, R>(effect: Effect.Effect<A, SqlError, R>) => Effect.catchAll(effect, storageError)
  const first = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])

  const readCredits = (keyId: string) =>
    Effect.map(
      sql<{ remaining: number; refilled_at: number }>`SELECT remaining, refilled_at FROM key_credits
        WHERE key_id = ${keyId}`,
      (rows) => Option.map(first(rows), (row): Credits => ({ remaining: row.remaining, refilledAt: row.refilled_at }))
    )
  const writeCredits = (keyId: string, credits: Credits) =>
    sql`INSERT INTO key_credits (key_id, remaining, refilled_at)
      VALUES (${keyId}, ${credits.remaining}, ${credits.refilledAt})
      ON CONFLICT (key_id) DO UPDATE SET remaining = excluded.remaining, refilled_at = excluded.refilled_at`

  type RefillDue = Parameters<Catalog["Type"]["spendCredits"]>[2]
  // Concurrent spends share a transaction, so a verification with credits waits for one commit
  // (one sync to disk) with the others rather than for each of theirs in turn. The balances are
  // read with one statement and written with one; spends of one key apply in the order they came.
  const spendTogether = yield* Batched.make(
    (spends: ReadonlyArray<{ keyId: string; cost: number; refill: RefillDue | undefined; now: number }>) =>
      sql.withTransaction(Effect.gen(function*() {
        const ids = [...new Set(spends.map((s) => s.keyId))]
        const rows = yield* sql<{ key_id: string; remaining: number; refilled_at: number }>`SELECT key_id,
          remaining, refilled_at FROM key_credits WHERE ${sql.in("key_id", ids)}`
        const balances = new Map<string, Credits>()
        for (const row of rows) balances.set(row.key_id, { remaining: row.remaining, refilledAt: row.refilled_at })
        const changed = new Set<string>()
        const results = spends.map(({ cost, keyId, now, refill }) => {
          const balance = balances.get(keyId)
          if (balance === undefined) return Option.none()
          const result = spend(balance, cost, refill, now)
          if (result.changed) {
            balances.set(keyId, result.balance)
            changed.add(keyId)
          }
          return Option.some({ spent: result.spent, remaining: result.balance.remaining })
        })
        if (changed.size > 0) {
          yield* sql`INSERT INTO key_credits ${
            sql.insert([...changed].map((keyId) => {
              const balance = balances.get(keyId)!
              return { key_id: keyId, remaining: balance.remaining, refilled_at: balance.refilledAt }
            }))
          } ON CONFLICT (key_id) DO UPDATE SET remaining = excluded.remaining, refilled_at = excluded.refilled_at`
        }
        return results
      })),
    // SQLite binds at most 32,766 variables; three per written balance.
    4_096
  )

  return Catalog.of({
    isEmpty: run(Effect.map(sql<{ n: number }>`SELECT count(*) AS n FROM workspaces`, (rows) => rows[0]!.n === 0)),
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
    putRootKey: (key) =>
      run(sql.withTransaction(Effect.gen(function*() {
        const [existing] = yield* sql<
          { workspace_id: string }
        >`SELECT workspace_id FROM root_keys WHERE hash = ${key.hash}`
        if (existing !== undefined && existing.workspace_id !== key.workspaceId) return "conflict" as PutResult
        yield* sql`INSERT INTO root_keys (id, workspace_id, name, hash, permissions, created_at, expires_at, disabled)
          VALUES (${key.id}, ${key.workspaceId}, ${key.name}, ${key.hash}, ${JSON.stringify(key.permissions)},
            ${key.createdAt}, ${key.expiresAt ?? null}, ${key.disabled ? 1 : 0})
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
            ${write.async ? 1 : 0}, ${write.now}, ${write.now})
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
          { n: number }
        >`SELECT count(*) AS n FROM overrides WHERE namespace_id = ${namespaceId}`
        return { overrides: rows.map(toOverride), total: count!.n }
      })),
    allOverrides: (namespaceId) =>
      run(
        Effect.map(sql<OverrideRow>`SELECT * FROM overrides WHERE namespace_id = ${namespaceId}`, (rows) =>
          rows.map(toOverride))
      ),
    ensureIdentity: (identity) =>
      run(Effect.gen(function*() {
        // One statement: concurrent creators of one external id leave exactly one identity.
        yield* sql`INSERT INTO identities (id, workspace_id, external_id, enabled, created_at)
          VALUES (${identity.id}, ${identity.workspaceId}, ${identity.externalId}, ${identity.enabled ? 1 : 0},
            ${identity.createdAt})
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
        sql<IdentityRow>`SELECT * FROM identities WHERE workspace_id = ${workspaceId} AND external_id = ${externalId}`,
        (rows) => Option.map(first(rows), toIdentity)
      )),
    setIdentityEnabled: (workspaceId, id, enabled) =>
      run(Effect.map(
        sql<{ id: string }>`UPDATE identities SET enabled = ${enabled ? 1 : 0}
          WHERE id = ${id} AND workspace_id = ${workspaceId} RETURNING id`,
        (rows) => rows.length > 0
      )),
    insertKey: (key, credits) =>
      run(sql.withTransaction(Effect.gen(function*() {
        const inserted = yield* sql<{ id: string }>`INSERT INTO keys ${sql.insert(keyValues(key))}
          ON CONFLICT DO NOTHING RETURNING id`
        if (inserted.length === 0) return "conflict" as const
        if (credits !== undefined) yield* writeCredits(key.id, credits)
        return "created" as const
      }))),
    replaceKey: (key, credits) =>
      run(sql.withTransaction(Effect.gen(function*() {
        const { created_at: _, hash: __, id: ___, workspace_id: ____, ...values } = keyValues(key)
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
        const [count] = yield* sql<{ n: number }>`SELECT count(*) AS n FROM keys
          WHERE workspace_id = ${workspaceId} AND api_id = ${apiId} AND ${identity}`
        return { keys: rows.map(toKey), total: count!.n }
      })),
    deleteKey: (workspaceId, id) =>
      run(Effect.map(
        sql<{ id: string }>`DELETE FROM keys WHERE id = ${id} AND workspace_id = ${workspaceId} RETURNING id`,
        (rows) => rows.length > 0
      )),
    getCredits: (keyId) => run(readCredits(keyId)),
    spendCredits: (keyId, cost, refill, now) => run(spendTogether({ keyId, cost, refill, now })),
    changeCredits: (keyId, op, value) =>
      run(sql.withTransaction(Effect.gen(function*() {
        const balance = yield* readCredits(keyId)
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
        >`SELECT id, name FROM namespaces WHERE workspace_id = ${workspaceId} AND instr(name, '*') > 0`,
        (rows) => rows.map((row) => new Namespace({ id: row.id, workspaceId, name: row.name }))
      ))
  })
})

/** The catalog as a layer over the SqlClient in context. */
export const layer: Layer.Layer<Catalog, never, SqlClient.SqlClient> = Layer.scoped(Catalog, make)

/**
 * {@link layer} for a server on `filename`: with a `revision` (the version that every catalog
 * write moves), so catalog reads are remembered until anything, the admin CLI included, writes the
 * catalog.
 */
export const layerOnFile = (filename: string): Layer.Layer<Catalog, never, SqlClient.SqlClient> =>
  Layer.scoped(
    Catalog,
    Effect.gen(function*() {
      const catalog = yield* make
      if (filename === ":memory:") return catalog
      const version = yield* Effect.option(CatalogVersion.open(filename))
      if (Option.isNone(version)) return catalog
      // Every call of this catalog ends by forgetting the version last read (a write moves it).
      const calls: Record<string, unknown> = {}
      for (const [name, method] of Object.entries(catalog)) {
        calls[name] = typeof method !== "function" ? method : (...args: Array<unknown>) =>
          Effect.ensuring(
            (method as (...args: Array<unknown>) => Effect.Effect<unknown, unknown>)(...args),
            Effect.sync(version.value.forget)
          )
      }
      return Catalog.of({ ...(calls as typeof catalog), revision: version.value.read })
    })
  )
