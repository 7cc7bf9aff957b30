/**
 * Reads, the stores' `aggregate`: a window inside the hot range is answered from memory
 * (`HotIndex`, which keeps no credits), at once; the rest by the statements of `Planner`, whose
 * rows are summed per group when the window took several.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { AggregationQuery, AggregationResult } from "@keymeter/core/Aggregation"
import { orTooLarge, OUTCOMES } from "@keymeter/core/Aggregation"
import * as Decision from "@keymeter/core/Decision"
import type { QueryTooLarge, StorageError } from "@keymeter/core/Errors"
import * as Effect from "effect/Effect"
import { storageError } from "../SqliteCatalog.js"
import type { Dictionaries } from "./Dictionaries.js"
import type { HotIndex } from "./HotIndex.js"
import * as Planner from "./Planner.js"

/**
 * The answer of `query`, or QueryTooLarge when it would hold more than `query.maxRows` rows. A
 * decision (see `Decision`): decided at once when memory answers.
 */
export const make = (sql: SqlClient.SqlClient, dictionaries: Dictionaries, hot: HotIndex | undefined) => {
  const fromTables = tables(sql, dictionaries)
  return (query: AggregationQuery): Effect.Effect<AggregationResult, StorageError | QueryTooLarge> =>
    Decision.make(() => {
      const fromMemory = hot === undefined || query.sumCredits === true ? null : hot.answer(query)
      return fromMemory !== null
        ? orTooLarge(query, fromMemory)
        : Effect.flatMap(Effect.catchAll(fromTables(query), storageError), (result) => orTooLarge(query, result))
    })
}

/** The answer of `query` from the tables, or undefined when it would hold more than `query.maxRows` rows. */
const tables = (sql: SqlClient.SqlClient, dictionaries: Dictionaries) =>
(
  query: AggregationQuery
): Effect.Effect<AggregationResult | undefined, SqlError> =>
  Effect.gen(function*() {
    const plan = Planner.plan(query, dictionaries)
    const width = 1 + (plan?.dimensions.length ?? 0)
    // The counters, and the credits of each after them when summed.
    const sums = query.sumCredits === true ? 2 * OUTCOMES : OUTCOMES
    const merged = new Map<string, number>()
    const rows: Array<Array<number>> = []
    /** The row of a group, added with zeros when new. */
    const rowOf = (row: ReadonlyArray<unknown>): Array<number> => {
      const id = row.slice(0, width).join(",")
      const at = merged.get(id)
      if (at !== undefined) return rows[at]!
      merged.set(id, rows.length)
      const target = [...row.slice(0, width) as Array<number>, ...new Array<number>(sums).fill(0)]
      rows.push(target)
      return target
    }
    for (const statement of plan?.statements ?? []) {
      const result = yield* sql.unsafe(statement.text, statement.params).values
      if (statement.table === "events") {
        // [bucket, ...dimensions, outcome, count, credits]: a row per outcome of a group.
        for (const row of result) {
          const target = rowOf(row)
          const outcome = row[width] as number
          target[width + outcome]! += row[width + 1] as number
          target[width + OUTCOMES + outcome]! += row[width + 2] as number
        }
      } else {
        if (result.length > query.maxRows) return undefined
        for (const row of result) {
          if (row[width] === null) continue // an empty, ungrouped sum
          if (plan!.statements.length === 1) {
            rows.push(row as Array<number>)
            continue
          }
          const target = rowOf(row)
          for (let o = 0; o < OUTCOMES; o++) target[width + o]! += row[width + o] as number
        }
      }
      if (rows.length > query.maxRows) return undefined
    }
    const size = rows.length
    const counts = new Float64Array(size * OUTCOMES)
    const credits = sums > OUTCOMES ? new Float64Array(size * OUTCOMES) : undefined
    for (let r = 0; r < size; r++) {
      for (let o = 0; o < OUTCOMES; o++) counts[r * OUTCOMES + o] = rows[r]![width + o]!
      if (credits !== undefined) {
        for (let o = 0; o < OUTCOMES; o++) credits[r * OUTCOMES + o] = rows[r]![width + OUTCOMES + o]!
      }
    }
    const column = (dimension: Planner.Dimension) => 1 + plan!.dimensions.indexOf(dimension)
    return {
      size,
      counts,
      ...(credits !== undefined ? { credits } : {}),
      time: query.timeUnit !== undefined
        ? Float64Array.from(rows, (row) => plan!.bucketTime(row[0] as number))
        : undefined,
      keyId: query.groupByKey ? rows.map((row) => dictionaries.keyNames[row[column("key")] as number]!) : undefined,
      identity: query.groupByIdentity
        ? rows.map((row) => dictionaries.identityList[row[column("identity")] as number]!)
        : undefined,
      tags: query.groupByTag !== undefined
        ? rows.map((row) => dictionaries.tagsetList[row[column("tagset")] as number]!)
        : undefined
    }
  })
