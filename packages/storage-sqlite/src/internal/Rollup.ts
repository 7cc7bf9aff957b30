/**
 * Rollup rows: aggregation of a transaction's events in memory, then multi-row upserts (`Rows`)
 * that add the counters to what is stored.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { COUNTER_COLUMNS, OUTCOMES } from "@keymeter/core/Aggregation"
import * as Rows from "./Rows.js"
import type { Rollup, Tables } from "./Tables.js"

/** Dimension columns of every rollup table, in primary-key order. */
export const DIMENSIONS: { readonly [R in Rollup]: ReadonlyArray<string> } = {
  hour: ["p", "hour", "key", "identity", "tagset"],
  hourTotal: ["p", "hour"],
  day: ["p", "day", "key", "identity", "tagset"],
  dayTotal: ["p", "day"],
  dayKey: ["p", "key", "day"],
  dayIdentity: ["p", "identity", "day"],
  dayTagset: ["p", "tagset", "day"]
}

/** Rows of one table (of a family's `rollup`), keyed by their dimension values. */
export class RollupRows {
  private readonly index = new Map<number | string, number>()
  /** Rows of 5 dimensions: by the first two, then by the other three. */
  private readonly nested = new Map<number | string, Map<number | string, number>>()
  private rows = 0
  /** Per row: the dimension values, then nine counters. */
  readonly values: Array<number> = []
  readonly table: string
  constructor(tables: Tables, readonly rollup: Rollup) {
    this.table = tables.rollups[rollup]
  }

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

const upsertText = (table: string, rollup: Rollup, rows: number): string =>
  Rows.insertText(
    table,
    [...DIMENSIONS[rollup], ...COUNTER_COLUMNS],
    rows,
    ` ON CONFLICT DO UPDATE SET ${COUNTER_COLUMNS.map((c) => `${c} = ${c} + excluded.${c}`).join(", ")}`
  )

const texts = new Map<string, string>()
const textFor = (table: string, rollup: Rollup, rows: number) => {
  const id = `${table}:${rows}`
  let text = texts.get(id)
  if (text === undefined) texts.set(id, text = upsertText(table, rollup, rows))
  return text
}

/** Adds `rows` to their table (see `Rows`). */
export const upsert = (sql: SqlClient.SqlClient, rows: RollupRows) =>
  Rows.run(sql, (n) => textFor(rows.table, rows.rollup, n), DIMENSIONS[rows.rollup].length + OUTCOMES, rows.values)
