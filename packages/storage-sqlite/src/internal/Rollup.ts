/**
 * Rollup rows: aggregation of a transaction's events in memory, then multi-row upserts that add
 * the counters to what is stored. Statements carry 2^k rows so that only a handful of statement
 * texts exist per table (they stay in the prepared-statement cache).
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { COUNTER_COLUMNS, OUTCOMES } from "@keymeter/core/Aggregation"
import * as Effect from "effect/Effect"

/** Dimension columns of every rollup table, in primary-key order. */
export const TABLES = {
  r_hour: ["p", "hour", "key", "identity", "tagset"],
  r_hour_total: ["p", "hour"],
  r_day: ["p", "day", "key", "identity", "tagset"],
  r_day_total: ["p", "day"],
  r_day_key: ["p", "key", "day"],
  r_day_identity: ["p", "identity", "day"],
  r_day_tagset: ["p", "tagset", "day"]
} as const

/** A rollup table's name. */
export type Table = keyof typeof TABLES

/** Rows of one table, keyed by their dimension values. */
export class RollupRows {
  private readonly index = new Map<number | string, number>()
  /** Rows of 5 dimensions: by the first two, then by the other three. */
  private readonly nested = new Map<number | string, Map<number | string, number>>()
  private rows = 0
  /** Per row: the dimension values, then nine counters. */
  readonly values: Array<number> = []
  constructor(readonly table: Table) {}

  get size(): number {
    return this.rows
  }

  /** Counts one event of `outcome` into the row of `dims` (in the table's column order). */
  add(dims: ReadonlyArray<number>, outcome: number): void {
    const id = dims.join(",")
    let at = this.index.get(id)
    if (at === undefined) this.index.set(id, at = this.newRow(dims))
    this.values[at + dims.length + outcome]!++
  }

  /** {@link add} for a row of two dimensions, without building a key string. */
  add2(a: number, b: number, outcome: number): void {
    const id = pair(a, b)
    let at = this.index.get(id)
    if (at === undefined) this.index.set(id, at = this.newRow([a, b]))
    this.values[at + 2 + outcome]!++
  }

  /** {@link add} for a row of five dimensions, without building a key string in the usual case. */
  add5(a: number, b: number, c: number, d: number, e: number, outcome: number): void {
    const outer = pair(a, b)
    let rows = this.nested.get(outer)
    if (rows === undefined) this.nested.set(outer, rows = new Map())
    const inner = c < 2 ** 21 && d < 2 ** 21 && e < 2 ** 11 ? (c * 2 ** 21 + d) * 2 ** 11 + e : `${c},${d},${e}`
    let at = rows.get(inner)
    if (at === undefined) rows.set(inner, at = this.newRow([a, b, c, d, e]))
    this.values[at + 5 + outcome]!++
  }

  private newRow(dims: ReadonlyArray<number>): number {
    const at = this.values.length
    for (const value of dims) this.values.push(value)
    for (let o = 0; o < OUTCOMES; o++) this.values.push(0)
    this.rows++
    return at
  }
}

/** Two non-negative integers as one map key: a number when they fit in 53 bits. */
const pair = (a: number, b: number): number | string => a < 2 ** 31 && b < 2 ** 22 ? a * 2 ** 22 + b : `${a},${b}`

const MAX_ROWS_PER_STATEMENT = 256

const upsertText = (table: Table, rows: number): string => {
  const columns = [...TABLES[table], ...COUNTER_COLUMNS]
  const row = `(${columns.map(() => "?").join(", ")})`
  return `INSERT INTO ${table} (${columns.join(", ")}) VALUES ${new Array(rows).fill(row).join(", ")} ` +
    `ON CONFLICT DO UPDATE SET ${COUNTER_COLUMNS.map((c) => `${c} = ${c} + excluded.${c}`).join(", ")}`
}

const texts = new Map<string, string>()
const textFor = (table: Table, rows: number) => {
  const id = `${table}:${rows}`
  let text = texts.get(id)
  if (text === undefined) texts.set(id, text = upsertText(table, rows))
  return text
}

/** Adds `rows` to their table: statements of 256 rows, then of decreasing powers of two. */
export const upsert = (sql: SqlClient.SqlClient, rows: RollupRows) =>
  Effect.suspend(() => {
    const width = TABLES[rows.table].length + OUTCOMES
    const total = rows.size
    const statements: Array<Effect.Effect<unknown, any>> = []
    let done = 0
    while (done < total) {
      let n = MAX_ROWS_PER_STATEMENT
      while (n > total - done) n >>= 1
      statements.push(sql.unsafe(textFor(rows.table, n), rows.values.slice(done * width, (done + n) * width)))
      done += n
    }
    return Effect.all(statements, { discard: true })
  })
