/**
 * Rows kept in full for a number of days (verifications' `v_events`, decisions' `rl_decisions`):
 * rows older than that are not written, and those that age out are deleted in the background by the
 * writer (after commits and when it idles), oldest first per partition through the table's (p, time) index, in bites that
 * let the event loop serve requests in between.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Time from "@keymeter/core/Time"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type { Dictionaries } from "./Dictionaries.js"
import { nextMacrotask } from "./HotIndex.js"

/** How often rows past their days are looked for, when the last look left none behind. */
const SWEEP_INTERVAL_MS = 60_000

/**
 * Rows one sweep deletes at least (at most what was written since the last one, if more): it keeps
 * up with ingest, and a backlog (after a long stop) goes a bounded bite at a time.
 */
const MIN_SWEEP_ROWS = 10_000

/** Rows one DELETE takes: each blocks the event loop, so requests are served in between. */
const DELETE_ROWS = 5_000

/** The retention of `table` (with a `p` and a `time` column, indexed on both): `days` back from now. */
export const make = (
  sql: SqlClient.SqlClient,
  dictionaries: Dictionaries,
  options: { readonly table: string; readonly days: number; readonly what: string }
) => {
  const keptMs = options.days * Time.DAY
  const expired =
    `DELETE FROM ${options.table} WHERE rowid IN (SELECT rowid FROM ${options.table} WHERE p = ? AND time < ? LIMIT ?)`
  let sweptAt = -Infinity
  let behind = false
  let writtenSince = 0

  const sweep = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    if (!behind && now - sweptAt < SWEEP_INTERVAL_MS) return
    sweptAt = now
    let budget = Math.max(MIN_SWEEP_ROWS, writtenSince)
    writtenSince = 0
    // Per partition: each DELETE seeks the oldest rows of one in the (p, time) index.
    for (const partition of dictionaries.partitionsByNo) {
      if (partition === undefined) continue
      while (budget > 0) {
        const take = Math.min(budget, DELETE_ROWS)
        // In a transaction, which holds the connection: a statement outside one can end up inside
        // another fiber's (the client lets go of the connection before it runs the statement).
        const result = yield* sql.withTransaction(sql.unsafe(expired, [partition.no, now - keptMs, take]).raw)
        const deleted = (result as unknown as { readonly changes: number }).changes
        budget -= deleted
        if (deleted < take) break
        yield* nextMacrotask
      }
    }
    behind = budget <= 0
  }).pipe(
    // Held longer than promised, never lost: the next sweep tries again.
    Effect.catchAll((error) => Effect.logWarning(`deleting ${options.what} past their days failed`, error))
  )

  return {
    /** The first time a row must have to be written (and read) now. */
    keptFrom: Effect.map(Clock.currentTimeMillis, (now) => Math.max(Number.MIN_SAFE_INTEGER, now - keptMs)),
    /** Counts rows written, so that a sweep deletes at least as many as came in. */
    written: (rows: number) => {
      writtenSince += rows
    },
    /** Deletes rows past their days (a no-op when they are kept for good). */
    sweep: Number.isFinite(keptMs) ? sweep : Effect.void
  } as const
}
