/**
 * Multi-row statements over a flat array of values: statements of 256 rows, then of decreasing
 * powers of two, so that only a handful of statement texts exist per table (they stay in the
 * prepared-statement cache) and a batch costs a few statements rather than one per row. Between
 * statements the event loop serves what arrived: a batch of thousands of rows would otherwise
 * hold every request of the server for milliseconds (the transaction stays open meanwhile).
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import { nextMacrotask } from "./HotIndex.js"

const MAX_ROWS_PER_STATEMENT = 256

/** Runs `textFor(n)` over `values` (`width` values a row), `n` rows at a time. */
export const run = (
  sql: SqlClient.SqlClient,
  textFor: (rows: number) => string,
  width: number,
  values: ReadonlyArray<unknown>
) =>
  Effect.suspend(() => {
    const total = values.length / width
    const statements: Array<Effect.Effect<unknown, any>> = []
    let done = 0
    while (done < total) {
      let n = MAX_ROWS_PER_STATEMENT
      while (n > total - done) n >>= 1
      if (statements.length > 0) statements.push(nextMacrotask)
      statements.push(sql.unsafe(textFor(n), values.slice(done * width, (done + n) * width)))
      done += n
    }
    return Effect.all(statements, { discard: true })
  })

/** `INSERT INTO table (columns) VALUES (...), ...` of `rows` rows, then `suffix`. */
export const insertText = (table: string, columns: ReadonlyArray<string>, rows: number, suffix = ""): string => {
  const row = `(${columns.map(() => "?").join(", ")})`
  return `INSERT INTO ${table} (${columns.join(", ")}) VALUES ${new Array(rows).fill(row).join(", ")}${suffix}`
}
