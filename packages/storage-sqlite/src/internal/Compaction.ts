/**
 * Compaction: once an api has data from a later day, its closed days are rolled up from the hour
 * rows into the day tables, set-based, a few days per transaction (one small transaction per api
 * per closed day cost more than the ingest itself during bulk loads).
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { COUNTER_COLUMNS } from "@keymeter/core/Aggregation"
import * as Effect from "effect/Effect"
import type { Dictionaries, Partition } from "./Dictionaries.js"
import type { Rollup, Tables } from "./Tables.js"

/** When closed days are rolled up into the day tables. */
export interface Options {
  /** An api is compacted once it has this many closed days pending (default 7). */
  readonly batchDays?: number | undefined
  /** ... or once its oldest pending day has waited this long (default 60 s). */
  readonly maxWaitMs?: number | undefined
  /** ... or once the writer has had nothing to do for this long (default 1 s). */
  readonly idleMs?: number | undefined
}

/** Days one compaction transaction rolls up at most, so ingest is never held up for long. */
const MAX_DAYS_PER_TRANSACTION = 7

const SUMS = COUNTER_COLUMNS.map((c) => `sum(${c})`).join(", ")
const COUNTERS = COUNTER_COLUMNS.join(", ")

/** The day tables rolled up from `r_day`, with their dimensions. */
const DAY_ROLLUPS: ReadonlyArray<readonly [Rollup, ReadonlyArray<string>]> = [
  ["dayTotal", ["day"]],
  ["dayKey", ["key", "day"]],
  ["dayIdentity", ["identity", "day"]],
  ["dayTagset", ["tagset", "day"]]
]

/** Rolls closed days of `partition` up into the day tables, a few days per transaction. */
const compact = (sql: SqlClient.SqlClient, tables: Tables, partition: Partition) =>
  Effect.gen(function*() {
    const { rollups } = tables
    const through = Math.floor(partition.maxHour / 24) - 1
    const p = partition.no
    while (partition.compactedThrough < through) {
      // Start at the next day holding data: gaps (or the years before the first event) are skipped.
      const [[next]] = yield* sql`SELECT min(hour) FROM ${sql(rollups.hourTotal)} WHERE p = ${p} AND hour >= ${
        (partition.compactedThrough + 1) * 24
      }`.values
      const from = next === null ? through + 1 : Math.floor((next as number) / 24)
      const to = Math.min(through, from + MAX_DAYS_PER_TRANSACTION - 1)
      if (from > through) {
        yield* sql`UPDATE ${sql(tables.partitions)} SET compacted_through = ${through} WHERE no = ${p}`
        partition.compactedThrough = through
        break
      }
      yield* sql.withTransaction(Effect.all([
        sql.unsafe(
          `INSERT INTO ${rollups.day} (p, day, key, identity, tagset, ${COUNTERS})
           SELECT p, hour / 24, key, identity, tagset, ${SUMS}
           FROM ${rollups.hour} WHERE p = ? AND hour BETWEEN ? AND ? GROUP BY hour / 24, key, identity, tagset`,
          [p, from * 24, to * 24 + 23]
        ),
        ...DAY_ROLLUPS.map(([rollup, dims]) =>
          sql.unsafe(
            `INSERT INTO ${rollups[rollup]} (p, ${dims.join(", ")}, ${COUNTERS}) SELECT p, ${dims.join(", ")}, ${SUMS}
             FROM ${rollups.day} WHERE p = ? AND day BETWEEN ? AND ? GROUP BY ${dims.join(", ")}`,
            [p, from, to]
          )
        ),
        sql`UPDATE ${sql(tables.partitions)} SET compacted_through = ${to} WHERE no = ${p}`
      ], { discard: true }))
      partition.compactedThrough = to
    }
  }).pipe(
    Effect.catchAll((error) => Effect.logWarning("compaction failed; it is retried after the next write", error))
  )

/** Compaction of the store's apis, run by its writer: `due(false)` after each commit, `due(true)` when idle. */
export const make = (sql: SqlClient.SqlClient, dictionaries: Dictionaries, options: Options = {}) => {
  const batchDays = Math.max(1, options.batchDays ?? 7)
  const maxWaitMs = options.maxWaitMs ?? 60_000
  /** When each api's oldest pending closed day was first seen. */
  const pendingSince = new Map<Partition, number>()

  /** Compacts the apis that are due; every api with closed days when `force` (the writer is idle). */
  const due = (force: boolean) =>
    Effect.suspend(() => {
      const now = Date.now()
      const ready: Array<Partition> = []
      for (const partition of dictionaries.partitionsByNo) {
        if (partition === undefined) continue
        // Closed days holding data that are not compacted yet (days before the first event do not count).
        const firstPending = Math.max(partition.compactedThrough + 1, Math.floor(partition.minHour / 24))
        const pending = Math.floor(partition.maxHour / 24) - firstPending
        if (pending <= 0) {
          pendingSince.delete(partition)
          continue
        }
        const since = pendingSince.get(partition) ?? now
        pendingSince.set(partition, since)
        if (force || pending >= batchDays || now - since >= maxWaitMs) ready.push(partition)
      }
      return Effect.forEach(
        ready,
        (partition) =>
          Effect.zipRight(
            compact(sql, dictionaries.tables, partition),
            Effect.sync(() => pendingSince.delete(partition))
          ),
        { discard: true }
      )
    })

  return { due, idleMs: Math.max(1, options.idleMs ?? 1_000) } as const
}
