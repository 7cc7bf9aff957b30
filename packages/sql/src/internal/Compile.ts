/**
 * Binding and compiling expressions: names resolve through a `Binder` (a row's columns, a group's
 * keys and aggregates), types are checked once, constants folded; each expression becomes a closure
 * over the row being visited (`Env`).
 */
import type * as Ast from "../Ast.js"
import type { Aggregate } from "./Aggregates.js"
import { AGGREGATES } from "./Aggregates.js"
import type { Compiled, Context, InputColumn } from "./Context.js"
import { BindFault, emptyEnv } from "./Context.js"
import { likePattern, SCALARS, SPECIAL, UNIT_MONTHS, UNIT_MS } from "./Functions.js"
import { compileBinary } from "./Operators.js"
import { SignatureError } from "./Signature.js"
import { comparable, constantOf, folded, needCondition, unify } from "./Typing.js"
import type { IntervalValue, Value, VType } from "./Values.js"
import { compare, equal, isNumeric, keyOf, QueryFault, truthy } from "./Values.js"

/** How a SELECT's names and aggregates resolve while compiling one expression. */
export interface Binder {
  /** The column `name` (qualified by `table`), or undefined when the input has none. */
  column(ref: Ast.Column): InputColumn | undefined
  /** Post-aggregation only: the group key equal to `expr`, if any. */
  groupKey(expr: Ast.Expr): Compiled | undefined
  /** Post-aggregation only: a slot for an aggregate call; undefined where aggregates are not allowed. */
  aggregate(call: Ast.Call, aggregate: Aggregate): Compiled | undefined
  /** Where an aggregate is refused, why. */
  readonly aggregateRefusal: string
  /** The arrayJoin of this SELECT, if compiling row expressions. */
  arrayJoin(call: Ast.Call): Compiled | undefined
  /** IN (subquery) results, computed before rows flow. */
  readonly subqueries: ReadonlyMap<Ast.InQuery, { readonly keys: ReadonlySet<string | number>; readonly type: VType }>
  /** True in post-aggregation expressions: a bare column must be a group key. */
  readonly grouped: boolean
}

const constantBinder: Binder = {
  column: () => undefined,
  groupKey: () => undefined,
  aggregate: () => undefined,
  aggregateRefusal: "aggregate functions are not allowed here",
  arrayJoin: () => undefined,
  subqueries: new Map(),
  grouped: false
}

/**
 * A canonical text of an expression (positions and letter case of keywords left out). Kept per
 * node: binding asks it of every node it compiles after grouping, and syntax trees are kept by the
 * parser, so a repeated query's texts are known already.
 */
export const canonical = (expr: Ast.Expr): string => {
  let text = canonicalTexts.get(expr)
  if (text === undefined) canonicalTexts.set(expr, text = canonicalOf(expr))
  return text
}

const canonicalTexts = new WeakMap<Ast.Expr, string>()

const canonicalOf = (expr: Ast.Expr): string => {
  switch (expr._tag) {
    case "Column":
      return `c(${expr.name.toLowerCase()})`
    case "Literal":
      return typeof expr.value === "string"
        ? `s(${JSON.stringify(expr.value)})`
        : `l(${expr.value}${expr.integer ? "" : "f"})`
    case "Interval":
      return `iv(${canonical(expr.value)},${expr.unit})`
    case "ArrayLiteral":
      return `[${expr.items.map(canonical).join(",")}]`
    case "Unary":
      return `${expr.op}(${canonical(expr.operand)})`
    case "Binary":
      return `(${canonical(expr.left)}${expr.op}${canonical(expr.right)})`
    case "Call":
      return `${expr.name.toLowerCase()}(${expr.distinct ? "distinct " : ""}${
        expr.star ? "*" : expr.args.map(canonical).join(",")
      })`
    case "InList":
      return `in${expr.not ? "!" : ""}(${canonical(expr.expr)};${expr.items.map(canonical).join(",")})`
    case "InQuery":
      return `inq${expr.not ? "!" : ""}(${canonical(expr.expr)};@${expr.at})`
    case "Like":
      return `like${expr.not ? "!" : ""}${expr.caseInsensitive ? "i" : ""}(${canonical(expr.expr)},${
        canonical(expr.pattern)
      })`
    case "Between":
      return `btw${expr.not ? "!" : ""}(${canonical(expr.expr)},${canonical(expr.low)},${canonical(expr.high)})`
    case "IsNull":
      return `null${expr.not ? "!" : ""}(${canonical(expr.expr)})`
    case "Case":
      return `case(${expr.operand === undefined ? "" : canonical(expr.operand)};${
        expr.whens.map((w) => canonical(w.when) + ">" + canonical(w.then)).join(";")
      };${expr.otherwise === undefined ? "" : canonical(expr.otherwise)})`
  }
}

export const compileExpr = (context: Context, expr: Ast.Expr, binder: Binder): Compiled => {
  const compiled = compileNode(context, expr, binder)
  context.types?.set(expr, compiled.type)
  context.texts?.set(canonical(expr), compiled.type)
  return compiled
}

const compileNode = (context: Context, expr: Ast.Expr, binder: Binder): Compiled => {
  if (binder.grouped) {
    const key = binder.groupKey(expr)
    if (key !== undefined) return key
  }
  const recurse = (inner: Ast.Expr) => compileExpr(context, inner, binder)
  switch (expr._tag) {
    case "Literal":
      if (expr.value === null) return constantOf("Null", null)
      return constantOf(typeof expr.value === "string" ? "String" : expr.integer ? "Int" : "Float", expr.value)
    case "Column": {
      if (expr.name === "*") throw new BindFault("'*' is only allowed as a whole SELECT item or in count(*)", expr.at)
      const column = binder.column(expr)
      if (column === undefined) {
        throw new BindFault(`unknown column ${expr.table === undefined ? "" : expr.table + "."}${expr.name}`, expr.at)
      }
      if (binder.grouped) {
        throw new BindFault(`the column ${expr.name} must be in GROUP BY or inside an aggregate function`, expr.at)
      }
      return { type: column.type, eval: column.get, constant: false, code: column.code }
    }
    case "Interval": {
      const value = recurse(expr.value)
      if (!isNumeric(value.type)) throw new BindFault(`INTERVAL needs a number, got ${value.type}`, expr.at)
      const ms = UNIT_MS[expr.unit]
      const months = UNIT_MONTHS[expr.unit]
      const f = value.eval
      return {
        type: "Interval",
        eval: (env): IntervalValue => {
          const n = f(env) as number
          return ms !== undefined ? { ms: n * ms, months: 0 } : { ms: 0, months: Math.trunc(n * months!) }
        },
        constant: value.constant
      }
    }
    case "ArrayLiteral": {
      const items = expr.items.map(recurse)
      for (const item of items) {
        if (item.type !== "String") throw new BindFault(`arrays hold Strings only, got ${item.type}`, expr.at)
      }
      const fs = items.map((item) => item.eval)
      return folded({
        type: "Array(String)",
        eval: (env) => fs.map((f) => f(env) as string),
        constant: items.every((i) => i.constant)
      })
    }
    case "Unary": {
      const operand = recurse(expr.operand)
      const f = operand.eval
      if (expr.op === "NOT") {
        needCondition(operand, "NOT", expr.at)
        return folded({
          type: "Int",
          eval: (env) => {
            const v = f(env)
            return v === null ? null : truthy(v) ? 0 : 1
          },
          constant: operand.constant
        })
      }
      if (!isNumeric(operand.type)) throw new BindFault(`'-' needs a number, got ${operand.type}`, expr.at)
      return folded({
        type: operand.type,
        eval: (env) => {
          const v = f(env)
          return v === null ? null : -(v as number)
        },
        constant: operand.constant
      })
    }
    case "Binary":
      return compileBinary(expr, recurse(expr.left), recurse(expr.right))
    case "Between": {
      const value = recurse(expr.expr)
      const low = recurse(expr.low)
      const high = recurse(expr.high)
      comparable(value.type, low.type, "BETWEEN", expr.at)
      comparable(value.type, high.type, "BETWEEN", expr.at)
      const [f, l, h] = [value.eval, low.eval, high.eval]
      const not = expr.not
      return folded({
        type: "Int",
        eval: (env) => {
          const v = f(env)
          const a = l(env)
          const b = h(env)
          if (v === null || a === null || b === null) return null
          const inside = compare(v, a) >= 0 && compare(v, b) <= 0
          return inside !== not ? 1 : 0
        },
        constant: value.constant && low.constant && high.constant
      })
    }
    case "IsNull": {
      const value = recurse(expr.expr)
      const f = value.eval
      const not = expr.not
      return folded({ type: "Int", eval: (env) => (f(env) === null) !== not ? 1 : 0, constant: value.constant })
    }
    case "Like": {
      const value = recurse(expr.expr)
      const pattern = recurse(expr.pattern)
      if (value.type !== "String" && value.type !== "Null") {
        throw new BindFault(`LIKE needs a String, got ${value.type}`, expr.at)
      }
      if (pattern.type !== "String" && pattern.type !== "Null") {
        throw new BindFault(`LIKE needs a String pattern, got ${pattern.type}`, expr.at)
      }
      const [f, p] = [value.eval, pattern.eval]
      const not = expr.not
      const ci = expr.caseInsensitive
      if (pattern.constant) {
        const text = p(emptyEnv())
        if (text === null) return constantOf("Null", null)
        const regex = likePattern(text as string, ci)
        return folded({
          type: "Int",
          eval: (env) => {
            const v = f(env)
            return v === null ? null : regex.test(v as string) !== not ? 1 : 0
          },
          constant: value.constant
        })
      }
      return {
        type: "Int",
        eval: (env) => {
          const v = f(env)
          const t = p(env)
          return v === null || t === null ? null : likePattern(t as string, ci).test(v as string) !== not ? 1 : 0
        },
        constant: false
      }
    }
    case "InList": {
      const value = recurse(expr.expr)
      const items = expr.items.map(recurse)
      for (const item of items) comparable(value.type, item.type, "IN", expr.at)
      const f = value.eval
      const not = expr.not
      if (items.every((item) => item.constant)) {
        const keys = new Set(items.map((item) => keyOf(item.eval(emptyEnv()))))
        return folded({
          type: "Int",
          eval: (env) => {
            const v = f(env)
            return v === null ? null : keys.has(keyOf(v)) !== not ? 1 : 0
          },
          constant: value.constant
        })
      }
      const fs = items.map((item) => item.eval)
      return {
        type: "Int",
        eval: (env) => {
          const v = f(env)
          if (v === null) return null
          const found = fs.some((g) => equal(g(env), v))
          return found !== not ? 1 : 0
        },
        constant: false
      }
    }
    case "InQuery": {
      const value = recurse(expr.expr)
      const result = binder.subqueries.get(expr)
      if (result === undefined) throw new BindFault("IN (SELECT …) is not allowed here", expr.at)
      comparable(value.type, result.type, "IN", expr.at)
      const f = value.eval
      const keys = result.keys
      const not = expr.not
      return {
        type: "Int",
        eval: (env) => {
          const v = f(env)
          return v === null ? null : keys.has(keyOf(v)) !== not ? 1 : 0
        },
        constant: false
      }
    }
    case "Case":
      return compileCase(expr, recurse)
    case "Call":
      return compileCall(context, expr, binder, recurse)
  }
}

const compileCase = (expr: Ast.Case, recurse: (e: Ast.Expr) => Compiled): Compiled => {
  const operand = expr.operand === undefined ? undefined : recurse(expr.operand)
  const whens = expr.whens.map((w) => ({ when: recurse(w.when), then: recurse(w.then) }))
  const otherwise = expr.otherwise === undefined ? undefined : recurse(expr.otherwise)
  for (const w of whens) {
    if (operand !== undefined) comparable(operand.type, w.when.type, "CASE", expr.at)
    else needCondition(w.when, "CASE WHEN", expr.at)
  }
  const type = unify([...whens.map((w) => w.then.type), ...(otherwise ? [otherwise.type] : [])], "CASE", expr.at)
  const o = operand?.eval
  const ws = whens.map((w) => [w.when.eval, w.then.eval] as const)
  const e = otherwise?.eval
  const constant = (operand?.constant ?? true) && whens.every((w) => w.when.constant && w.then.constant) &&
    (otherwise?.constant ?? true)
  return folded({
    type,
    eval: (env) => {
      const subject = o === undefined ? undefined : o(env)
      for (const [when, then] of ws) {
        const w = when(env)
        if (subject === undefined ? truthy(w) : subject !== null && w !== null && equal(subject, w)) return then(env)
      }
      return e === undefined ? null : e(env)
    },
    constant
  })
}

const compileCall = (
  context: Context,
  expr: Ast.Call,
  binder: Binder,
  recurse: (e: Ast.Expr) => Compiled
): Compiled => {
  const name = expr.name.toLowerCase()
  const aggregate = AGGREGATES.get(name)
  if (aggregate !== undefined || (name === "count" && expr.star)) {
    const fn = aggregate ?? AGGREGATES.get("count")!
    const slot = binder.aggregate(expr, fn)
    if (slot === undefined) throw new BindFault(binder.aggregateRefusal.replace("{name}", expr.name), expr.at)
    return slot
  }
  if (expr.star) throw new BindFault(`${expr.name}(*) is not supported: only count(*)`, expr.at)
  if (expr.distinct) throw new BindFault(`DISTINCT is only allowed in count(DISTINCT …)`, expr.at)
  if (SPECIAL.has(name)) {
    if (name === "arrayjoin") {
      const compiled = binder.arrayJoin(expr)
      if (compiled === undefined) throw new BindFault("arrayJoin is not allowed here", expr.at)
      return compiled
    }
    if (expr.args.length > 0) throw new BindFault(`${expr.name}() takes no arguments`, expr.at)
    const day = 86_400_000
    return constantOf("Int", name === "now" ? context.now : Math.floor(context.now / day) * day)
  }
  const scalar = SCALARS.get(name)
  if (scalar === undefined) {
    throw new BindFault(`unknown function ${expr.name}: see the README for the functions supported`, expr.at)
  }
  const [min, max] = scalar.arity
  if (expr.args.length < min || expr.args.length > max) {
    throw new BindFault(
      `${expr.name} takes ${min === max ? min : `${min} to ${max}`} argument${
        max === 1 ? "" : "s"
      }, got ${expr.args.length}`,
      expr.at
    )
  }
  const args = expr.args.map(recurse)
  let type: VType
  try {
    type = scalar.type(args.map((arg) => arg.type), expr.name)
  } catch (error) {
    if (error instanceof SignatureError) throw new BindFault(error.message, expr.at)
    throw error
  }
  const fs = args.map((arg) => arg.eval)
  const apply = scalar.apply
  const at = expr.at
  const run = (values: Array<Value>) => {
    try {
      return apply(values)
    } catch (error) {
      if (error instanceof QueryFault && error.at === undefined) throw new QueryFault(error.message, at)
      throw error
    }
  }
  const constant = args.every((arg) => arg.constant)
  // One array of arguments per call site, filled per row (no function keeps it): an array per
  // row was much of what a heavy GROUP BY gave the collector.
  const values: Array<Value> = fs.map(() => null)
  if (fs.length === 1) {
    const f = fs[0]!
    return folded({
      type,
      eval: (env) => {
        values[0] = f(env)
        return run(values)
      },
      constant
    })
  }
  return folded({
    type,
    eval: (env) => {
      for (let k = 0; k < fs.length; k++) values[k] = fs[k]!(env)
      return run(values)
    },
    constant
  })
}

export const constantInteger = (context: Context, expr: Ast.Expr | undefined, what: string): number | undefined => {
  if (expr === undefined) return undefined
  const compiled = compileExpr(context, expr, constantBinder)
  const value = compiled.constant ? compiled.eval(emptyEnv()) : undefined
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
    throw new BindFault(`${what} needs a whole number ≥ 0`, expr.at)
  }
  return value
}

/** The value of an expression without columns, as the query sees it; undefined when it has columns. */
export const constantValue = (context: Context, expr: Ast.Expr): Value | undefined => {
  try {
    const compiled = compileExpr(context, expr, constantBinder)
    return compiled.constant ? compiled.eval(emptyEnv()) : undefined
  } catch {
    return undefined
  }
}
