/**
 * The rollups' views: a rollup table is a view over its raw table, grouped by its time bucket and
 * dimensions; a SELECT that needs fewer of them (see `prunedView`) reads a narrower view.
 */
import type * as Ast from "../Ast.js"
import type { PublicTable } from "../Tables.js"
import { childrenOf, isAggregateCall, visitExpr } from "./Exprs.js"
import { parse } from "./Parser.js"

/** Milliseconds a bucket of each grain may span at most (months: 31 days). */
export const GRAIN_SPAN: Record<string, number> = {
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
  month: 31 * 86_400_000
}

/**
 * A rollup's view, grouped by `dimensions` only when given and with `measures` only when given
 * (see `prunedView`).
 */
export const viewOf = (
  table: PublicTable,
  dimensions: ReadonlyArray<string> | undefined,
  measures?: ReadonlyArray<string> | undefined
): Ast.Query => {
  const text = dimensions === undefined && measures === undefined
    ? table.view!
    : table.viewBy!(dimensions ?? table.dimensions, measures)
  return parse(text)
}

/** Aggregates whose answer does not depend on how many rollup rows a group spans. */
const ROW_COUNT_FREE = new Set(["sum", "sumif", "min", "max", "minif", "maxif", "any", "uniq", "uniqexact", "uniqif"])

/**
 * What of a rollup a SELECT over it needs. Its dimensions, when grouping the rollup by those alone
 * answers the SELECT the same: the SELECT aggregates, its measures appear only summed (`sum`,
 * `sumIf`'s first argument), and its other aggregates do not count rows; else undefined (the full
 * rollup is built). A rollup of 2M raw rows by all its dimensions holds nearly as many groups;
 * `SELECT time, sum(count) … GROUP BY time` needs one per bucket. And its measures: those it names
 * (a measure not computed costs nothing, and one of counts alone can be read from counts).
 */
export const prunedView = (
  table: PublicTable,
  exprs: ReadonlyArray<Ast.Expr>,
  aggregated: boolean
): { readonly dimensions: ReadonlyArray<string> | undefined; readonly measures: ReadonlyArray<string> } => {
  const used = new Set<string>()
  const measures = new Set<string>()
  let prunable = aggregated
  const column = (node: Ast.Column, summed: boolean) => {
    const name = node.name.toLowerCase()
    if (!table.measures.includes(name)) used.add(name)
    else {
      measures.add(name)
      if (!summed || name === "latency_avg") prunable = false
    }
  }
  const walk = (expr: Ast.Expr): void => {
    if (expr._tag === "Column") return column(expr, false)
    if (expr._tag === "Call" && isAggregateCall(expr)) {
      const name = expr.name.toLowerCase()
      if (!ROW_COUNT_FREE.has(name) && !(name === "count" && expr.distinct)) prunable = false
      // A sum counts rows unless what it sums is a measure (summed again, it is the same).
      const first = expr.args[0]
      if (
        (name === "sum" || name === "sumif") &&
        !(first?._tag === "Column" && table.measures.includes(first.name.toLowerCase()))
      ) prunable = false
      expr.args.forEach((arg, i) =>
        visitExpr(arg, (node) => {
          if (node._tag === "Call" && isAggregateCall(node)) prunable = false
          else if (node._tag === "Column") column(node, node === arg && i === 0 && (name === "sum" || name === "sumif"))
        })
      )
      return
    }
    childrenOf(expr).forEach(walk)
  }
  for (const expr of exprs) walk(expr)
  return { dimensions: prunable ? [...used] : undefined, measures: [...measures] }
}
