/** Walks over expressions: their children, their nodes, their aggregates, aliases substituted. */
import type * as Ast from "../Ast.js"
import { AGGREGATES } from "./Aggregates.js"
import { BindFault } from "./Context.js"

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

/** Whether an expression reads the column `name` (with `others`: any column but it). */
export const readsColumn = (expr: Ast.Expr, name: string, others = false): boolean => {
  let found = false
  visitExpr(expr, (e) => {
    if (e._tag === "Column" && (e.name.toLowerCase() === name) !== others) found = true
  })
  return found
}

/**
 * Replaces bare names of SELECT aliases by their expressions (not inside an alias's own). A node
 * with no alias under it is returned as it is, so what is known of it (its canonical text) holds.
 */
export const substitute = (
  expr: Ast.Expr,
  aliases: ReadonlyMap<string, Ast.Expr>,
  excluded: ReadonlySet<string> = NONE
): Ast.Expr => {
  if (aliases.size === 0) return expr
  const walk = (e: Ast.Expr): Ast.Expr => substitute(e, aliases, excluded)
  const all = (es: ReadonlyArray<Ast.Expr>): ReadonlyArray<Ast.Expr> => {
    let out: Array<Ast.Expr> | undefined
    for (let i = 0; i < es.length; i++) {
      const e = walk(es[i]!)
      if (e !== es[i] && out === undefined) out = es.slice(0, i)
      out?.push(e)
    }
    return out ?? es
  }
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
    case "Interval": {
      const value = walk(expr.value)
      return value === expr.value ? expr : { ...expr, value }
    }
    case "ArrayLiteral": {
      const items = all(expr.items)
      return items === expr.items ? expr : { ...expr, items }
    }
    case "Unary": {
      const operand = walk(expr.operand)
      return operand === expr.operand ? expr : { ...expr, operand }
    }
    case "Binary": {
      const left = walk(expr.left)
      const right = walk(expr.right)
      return left === expr.left && right === expr.right ? expr : { ...expr, left, right }
    }
    case "Call": {
      const args = all(expr.args)
      return args === expr.args ? expr : { ...expr, args }
    }
    case "InList": {
      const inner = walk(expr.expr)
      const items = all(expr.items)
      return inner === expr.expr && items === expr.items ? expr : { ...expr, expr: inner, items }
    }
    case "InQuery": {
      const inner = walk(expr.expr)
      return inner === expr.expr ? expr : { ...expr, expr: inner }
    }
    case "Like": {
      const inner = walk(expr.expr)
      const pattern = walk(expr.pattern)
      return inner === expr.expr && pattern === expr.pattern ? expr : { ...expr, expr: inner, pattern }
    }
    case "Between": {
      const inner = walk(expr.expr)
      const low = walk(expr.low)
      const high = walk(expr.high)
      return inner === expr.expr && low === expr.low && high === expr.high
        ? expr
        : { ...expr, expr: inner, low, high }
    }
    case "IsNull": {
      const inner = walk(expr.expr)
      return inner === expr.expr ? expr : { ...expr, expr: inner }
    }
    case "Case": {
      const operand = expr.operand === undefined ? undefined : walk(expr.operand)
      const whens = expr.whens.map((w) => ({ when: walk(w.when), then: walk(w.then) }))
      const otherwise = expr.otherwise === undefined ? undefined : walk(expr.otherwise)
      return operand === expr.operand && otherwise === expr.otherwise &&
          whens.every((w, i) => w.when === expr.whens[i]!.when && w.then === expr.whens[i]!.then)
        ? expr
        : { ...expr, operand, whens, otherwise }
    }
  }
}

const NONE: ReadonlySet<string> = new Set()

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
