/**
 * The transaction of one batch: the dictionary entries it is the first to use, its hour rollups,
 * and for events of days already compacted, the day tables too (all of the dictionaries' family of
 * tables, see `Tables`); each event in full when the caller keeps them (`EventRows`); then what
 * the caller stores with them (receipts, decisions). The dictionaries keep the new entries when it
 * commits and forget them when it fails.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { Receipt } from "@keymeter/core/Idempotency"
import * as Time from "@keymeter/core/Time"
import type { Verification } from "@keymeter/core/Verification"
import { OutcomeIndex } from "@keymeter/core/Verification"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { Dictionaries } from "./Dictionaries.js"
import type { EventRows } from "./Events.js"
import { RollupRows, upsert } from "./Rollup.js"

/** Rows per INSERT of dictionary entries. */
const INSERT_ROWS = 200

/** Inserts `rows` into `table`, {@link INSERT_ROWS} at a time. */
const insertAll = (sql: SqlClient.SqlClient, table: string, rows: ReadonlyArray<Record<string, string | number>>) =>
  Effect.forEach(
    Array.from(
      { length: Math.ceil(rows.length / INSERT_ROWS) },
      (_, i) => rows.slice(i * INSERT_ROWS, (i + 1) * INSERT_ROWS)
    ),
    (chunk) => sql`INSERT INTO ${sql(table)} ${sql.insert(chunk)}`,
    { discard: true }
  )

/** The writes of `events` (and of their rows in full into `raw`), inside the caller's transaction. */
const write = (
  sql: SqlClient.SqlClient,
  dictionaries: Dictionaries,
  events: ReadonlyArray<Verification>,
  raw: EventRows | undefined
) =>
  Effect.gen(function*() {
    const { tables } = dictionaries
    const hour = new RollupRows(tables, "hour")
    const hourTotal = new RollupRows(tables, "hourTotal")
    const late = {
      day: new RollupRows(tables, "day"),
      dayTotal: new RollupRows(tables, "dayTotal"),
      dayKey: new RollupRows(tables, "dayKey"),
      dayIdentity: new RollupRows(tables, "dayIdentity"),
      dayTagset: new RollupRows(tables, "dayTagset")
    }
    for (const event of events) {
      const partition = dictionaries.partitionFor(event.workspaceId, event.apiId)
      const h = Math.floor(event.time / Time.HOUR)
      dictionaries.seeHour(partition, h)
      const p = partition.no
      const key = dictionaries.keyCode(event.keyId)
      const identity = event.identity === undefined ? 0 : dictionaries.identityCode(event.identity)
      const tagset = dictionaries.tagsetCode(event.tags)
      const outcome = event.outcome === "valid" ? 0 : OutcomeIndex.get(event.outcome)!
      hour.add5(p, h, key, identity, tagset, outcome)
      hourTotal.add2(p, h, outcome)
      if (raw !== undefined) raw.push(p, event, key, identity, tagset, outcome)
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
    yield* insertAll(
      sql,
      tables.partitions,
      pending.partitions.map((p) => ({ no: p.no, workspace_id: p.workspaceId, api_id: p.apiId }))
    )
    yield* insertAll(sql, tables.keys, pending.keys.map(([no, value]) => ({ no, value })))
    yield* insertAll(
      sql,
      tables.identities,
      pending.identities.map(([no, i]) => ({ no, identity_id: i.id, external_id: i.externalId }))
    )
    yield* insertAll(sql, tables.tagsets, pending.tagsets.map(([no, tags]) => ({ no, tags })))
    yield* upsert(sql, hour)
    yield* upsert(sql, hourTotal)
    for (const rows of Object.values(late)) if (rows.size > 0) yield* upsert(sql, rows)
    if (raw !== undefined) yield* raw.write(sql)
  })

/**
 * The receipts of the keyed calls in a batch: an expired receipt of the same key is replaced; a
 * live one makes the INSERT fail (primary key), and so the whole transaction.
 */
export const writeReceipts = (sql: SqlClient.SqlClient, receipts: ReadonlyArray<Receipt>) =>
  Effect.forEach(receipts, (r) =>
    Effect.zipRight(
      sql`DELETE FROM idempotency_receipts WHERE workspace_id = ${r.workspaceId} AND key = ${r.key}
        AND expires_at <= ${r.createdAt}`,
      sql`INSERT INTO idempotency_receipts ${
        sql.insert({
          workspace_id: r.workspaceId,
          key: r.key,
          operation: r.operation,
          fingerprint: r.fingerprint,
          response: r.response,
          created_at: r.createdAt,
          expires_at: r.expiresAt
        })
      }`
    ), { discard: true })

/**
 * Stores the counts of `events`, their rows in full when `raw` is given (verifications' `v_events`,
 * see `Events`), and what `alongside` writes (after them: dictionary codes are handed out) in one
 * transaction; all or nothing.
 */
export const commit = <E, R>(
  sql: SqlClient.SqlClient,
  dictionaries: Dictionaries,
  events: ReadonlyArray<Verification>,
  alongside: Effect.Effect<void, E, R>,
  raw?: EventRows
) =>
  sql.withTransaction(Effect.zipRight(write(sql, dictionaries, events, raw), alongside)).pipe(
    Effect.onExit((exit) => Effect.sync(() => (Exit.isSuccess(exit) ? dictionaries.commit() : dictionaries.rollback())))
  )
