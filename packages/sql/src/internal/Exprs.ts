/** Walks over expressions: their children, their nodes, their aggregates, aliases substituted. */
import type * as Ast from "../Ast.js"
import { BindFault } from "./Context.js"
import { AGGREGATES } from "./Functions.js"

/** The expressions directly inside one (not into subqueries). */
export const childrenOf = (expr: Ast.Expr): ReadonlyArray<Ast.Expr> => {
  switch (expr._tag) {
    case "Interval":
      return [expr.value]
    case "ArrayLiteral":
      return expr.items
    case "Unary":
      return [expr.operand]
    case "Binary":
      return [expr.left, expr.right]
    case "Call":
      return expr.args
    case "InList":
      return [expr.expr, ...expr.items]
    case "InQuery":
    case "IsNull":
      return [expr.expr]
    case "Like":
      return [expr.expr, expr.pattern]
    case "Between":
      return [expr.expr, expr.low, expr.high]
    case "Case":
      return [
        ...(expr.operand ? [expr.operand] : []),
        ...expr.whens.flatMap((w) => [w.when, w.then]),
        ...(expr.otherwise ? [expr.otherwise] : [])
      ]
    default:
      return []
  }
}

export const conjuncts = (expr: Ast.Expr | undefined, out: Array<Ast.Expr> = []): Array<Ast.Expr> => {
  if (expr === undefined) return out
  if (expr._tag === "Binary" && expr.op === "AND") {
    conjuncts(expr.left, out)
    conjuncts(expr.right, out)
  } else out.push(expr)
  return out
}

export const isColumn = (expr: Ast.Expr, name: string): boolean =>
  expr._tag === "Column" && expr.name.toLowerCase() === name

/** Replaces bare names of SELECT aliases by their expressions (not inside an alias's own). */
export const substitute = (
  expr: Ast.Expr,
  aliases: ReadonlyMap<string, Ast.Expr>,
  excluded: ReadonlySet<string> = new Set()
): Ast.Expr => {
  const walk = (e: Ast.Expr): Ast.Expr => substitute(e, aliases, excluded)
  switch (expr._tag) {
    case "Column": {
      if (expr.table !== undefined) return expr
      const key = expr.name.toLowerCase()
      const target = aliases.get(key)
      if (target === undefined || excluded.has(key)) return expr
      return substitute(target, aliases, new Set([...excluded, key]))
    }
    case "Literal":
      return expr
    case "Interval":
      return { ...expr, value: walk(expr.value) }
    case "ArrayLiteral":
      return { ...expr, items: expr.items.map(walk) }
    case "Unary":
      return { ...expr, operand: walk(expr.operand) }
    case "Binary":
      return { ...expr, left: walk(expr.left), right: walk(expr.right) }
    case "Call":
      return { ...expr, args: expr.args.map(walk) }
    case "InList":
      return { ...expr, expr: walk(expr.expr), items: expr.items.map(walk) }
    case "InQuery":
      return { ...expr, expr: walk(expr.expr) }
    case "Like":
      return { ...expr, expr: walk(expr.expr), pattern: walk(expr.pattern) }
    case "Between":
      return { ...expr, expr: walk(expr.expr), low: walk(expr.low), high: walk(expr.high) }
    case "IsNull":
      return { ...expr, expr: walk(expr.expr) }
    case "Case":
      return {
        ...expr,
        operand: expr.operand === undefined ? undefined : walk(expr.operand),
        whens: expr.whens.map((w) => ({ when: walk(w.when), then: walk(w.then) })),
        otherwise: expr.otherwise === undefined ? undefined : walk(expr.otherwise)
      }
  }
}

/** Calls `f` on every node of an expression (not into subqueries). */
export const visitExpr = (expr: Ast.Expr, f: (e: Ast.Expr) => void): void => {
  f(expr)
  for (const child of childrenOf(expr)) visitExpr(child, f)
}

export const isAggregateCall = (e: Ast.Expr): boolean =>
  e._tag === "Call" && (AGGREGATES.has(e.name.toLowerCase()) || (e.star && e.name.toLowerCase() === "count"))

export const hasAggregate = (expr: Ast.Expr): boolean => {
  let found = false
  visitExpr(expr, (e) => {
    if (isAggregateCall(e)) found = true
  })
  return found
}

/** A positional reference (`ORDER BY 2`) as the item's expression. */
export const positional = (expr: Ast.Expr, items: ReadonlyArray<Ast.SelectItem>, what: string): Ast.Expr => {
  if (expr._tag !== "Literal" || !expr.integer || typeof expr.value !== "number") return expr
  const item = items[expr.value - 1]
  if (item === undefined || item.expr._tag === "Column" && item.expr.name === "*") {
    throw new BindFault(`${what} ${expr.value} names no column of the SELECT list`, expr.at)
  }
  return item.expr
}
