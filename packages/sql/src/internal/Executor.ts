/**
 * Runs a parsed query over the caller's rows. Names resolve against the public tables of one
 * family and the query's own CTEs and subqueries, nothing else: a table is read only through
 * `Sources`, which the caller built for one workspace and the apis (or namespaces) its key may
 * read. Expressions compile to closures once per SELECT; rows stream from scans batch by batch,
 * yielding the event loop every few milliseconds of work, under the query's budgets.
 */
import type * as Ast from "../Ast.js"
import type { Family } from "../Tables.js"
import { TABLES } from "../Tables.js"
import type { Binder } from "./Compile.js"
import { canonical, compileExpr, constantInteger } from "./Compile.js"
import type { Compiled, Context, Env, Input, Produced, Relation, ScanHint } from "./Context.js"
import { BindFault, emptyEnv, MAX_DEPTH } from "./Context.js"
import { countsInput } from "./CountedInput.js"
import { conjuncts, hasAggregate, positional, substitute, visitExpr } from "./Exprs.js"
import { compareOrdered, firstOf, topN } from "./FirstRows.js"
import { grouped } from "./Grouping.js"
import type { Uses } from "./Inputs.js"
import { noInput, rawInput, relationInput } from "./Inputs.js"
import { GRAIN_SPAN, prunedView, viewOf } from "./RollupViews.js"
import { hintOf, intersect, plannedInput } from "./ScanHints.js"
import { needCondition } from "./Typing.js"
import type { Value, VType } from "./Values.js"
import { isNumeric, keyOf, keyOfRow, truthy } from "./Values.js"

interface CteBinding {
  readonly query: Ast.Query
  readonly scope: Scope
  result: Promise<Relation> | undefined
}

/** Names visible to a query: its CTEs and those around it. */
class Scope {
  constructor(readonly ctes: ReadonlyMap<string, CteBinding>, readonly depth: number) {}
}

/** Runs a query. */
export const execute = (context: Context, query: Ast.Query): Promise<Relation> =>
  runQuery(context, query, new Scope(new Map(), 0), undefined)

const runQuery = async (
  context: Context,
  query: Ast.Query,
  outer: Scope,
  hint: ScanHint | undefined
): Promise<Relation> => {
  if (outer.depth > MAX_DEPTH) throw new BindFault(`the query nests more than ${MAX_DEPTH} levels deep`, query.at)
  let scope = outer
  if (query.with.length > 0) {
    const ctes = new Map(outer.ctes)
    for (const cte of query.with) {
      const key = cte.name.toLowerCase()
      if (query.with.filter((other) => other.name.toLowerCase() === key).length > 1) {
        throw new BindFault(`the CTE ${cte.name} is defined twice`, cte.at)
      }
      // A CTE sees the CTEs before it (and the outer ones).
      ctes.set(key, { query: cte.query, scope: new Scope(new Map(ctes), outer.depth + 1), result: undefined })
    }
    scope = new Scope(ctes, outer.depth + 1)
  }
  return runBody(context, query.body, scope, hint)
}

const runBody = async (
  context: Context,
  body: Ast.Select | Ast.SetOperation,
  scope: Scope,
  hint: ScanHint | undefined
): Promise<Relation> => {
  if (body._tag === "Select") return runSelect(context, body, scope, hint)
  const left = await runQuery(context, body.left, scope, undefined)
  const right = await runQuery(context, body.right, scope, undefined)
  if (left.names.length !== right.names.length) {
    throw new BindFault(
      `${body.op} needs the same number of columns on both sides (${left.names.length} and ${right.names.length})`,
      body.at
    )
  }
  const types = left.types.map((type, i) => {
    const other = right.types[i]!
    if (type === "Null") return other
    if (other === "Null" || type === other) return type
    if (isNumeric(type) && isNumeric(other)) return "Float" as VType
    throw new BindFault(`${body.op} column ${i + 1} is ${type} on the left and ${other} on the right`, body.at)
  })
  let rows: Array<Array<Value>>
  if (body.op === "UNION ALL") rows = left.rows.concat(right.rows)
  else if (body.op === "UNION DISTINCT") rows = distinctRows(left.rows.concat(right.rows))
  else {
    const exclude = new Set(right.rows.map(keyOfRow))
    rows = left.rows.filter((row) => !exclude.has(keyOfRow(row)))
    if (body.op === "EXCEPT DISTINCT") rows = distinctRows(rows)
  }
  return { names: left.names, types, rows }
}

const distinctRows = (rows: Array<Array<Value>>): Array<Array<Value>> => {
  const seen = new Set<string>()
  return rows.filter((row) => {
    const key = keyOfRow(row)
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

const tableNotFound = (name: string, family: Family, at: number): BindFault => {
  const names = [...TABLES.values()].filter((table) => table.family === family).map((table) => table.name)
  const other = TABLES.get(name.toLowerCase())
  if (other !== undefined) {
    return new BindFault(
      `the table ${name} holds ${other.family}: this route reads ${family} only (${names.join(", ")})`,
      at
    )
  }
  return new BindFault(`unknown table ${name}: queries may read ${names.join(", ")}`, at)
}

const inputOf = async (
  context: Context,
  from: Ast.From | undefined,
  scope: Scope,
  where: Ast.Expr | undefined,
  outer: ScanHint | undefined,
  /** What the SELECT reads (undefined when it has `*`). */
  uses: Uses | undefined
): Promise<Input> => {
  if (from === undefined) return noInput
  if (from._tag === "Subquery") {
    const relation = await runQuery(context, from.query, new Scope(scope.ctes, scope.depth + 1), undefined)
    return relationInput(
      context,
      relation,
      new Set(from.alias === undefined ? [] : [from.alias.toLowerCase()]),
      from.query
    )
  }
  const key = from.name.toLowerCase()
  const qualifiers = new Set([from.alias?.toLowerCase() ?? key])
  const cte = from.name.includes(".") ? undefined : scope.ctes.get(key)
  if (cte !== undefined) {
    cte.result ??= runQuery(context, cte.query, cte.scope, undefined)
    return relationInput(context, await cte.result, qualifiers, cte.query)
  }
  const table = TABLES.get(key)
  if (table === undefined || table.family !== context.family) throw tableNotFound(from.name, context.family, from.at)
  const hint = intersect(hintOf(context, table, where), outer)
  if (table.view === undefined) {
    const counted = uses === undefined ? undefined : await countsInput(context, table, qualifiers, hint, uses)
    return counted ?? rawInput(context, table, qualifiers, hint)
  }
  // A rollup is its view over the raw table; the outer bounds on its bucket start bound the raw
  // times from below as they are, and from above a bucket's span later.
  const span = GRAIN_SPAN[table.grain]!
  const inner: ScanHint = {
    from: hint.from,
    to: hint.to >= Number.MAX_SAFE_INTEGER ? hint.to : hint.to + span,
    within: hint.within
  }
  const pruned = uses === undefined ? undefined : prunedView(table, uses.exprs, uses.aggregated)
  const view = viewOf(table, pruned?.dimensions, pruned?.measures)
  const relation = await runQuery(context, view, new Scope(new Map(), scope.depth + 1), inner)
  return relationInput(context, relation, qualifiers, view)
}

/**
 * A SELECT without grouping: its output types, and `produce`, which answers a row per row read
 * (`visitRows`, `env` positioned at each): the outputs, then the ORDER BY values.
 */
const plain = (
  context: Context,
  compileRow: (e: Ast.Expr) => Compiled,
  items: ReadonlyArray<Ast.Expr>,
  orderBy: ReadonlyArray<{ readonly expr: Ast.Expr }>,
  env: Env,
  visitRows: (visit: () => void) => Promise<void>
): Produced => {
  const outputs = items.map(compileRow)
  const orders = orderBy.map((o) => compileRow(o.expr))
  const fs = [...outputs, ...orders].map((o) => o.eval)
  const produce = async () => {
    const rows: Array<Array<Value>> = []
    const width = fs.length
    await visitRows(() => {
      const row = new Array<Value>(width)
      for (let k = 0; k < width; k++) row[k] = fs[k]!(env)
      rows.push(row)
      context.hold(width)
    })
    return rows
  }
  return { outTypes: outputs.map((o) => o.type), produce }
}

const runSelect = async (
  context: Context,
  select: Ast.Select,
  scope: Scope,
  hint: ScanHint | undefined
): Promise<Relation> => {
  context.checkTime()
  // Aliases first: WHERE may name them (as ClickHouse allows), and the scan's bounds come from
  // the WHERE they resolve to. `*` names no alias.
  const aliases = new Map<string, Ast.Expr>()
  for (const item of select.items) {
    if (item.alias === undefined) continue
    const key = item.alias.toLowerCase()
    const prior = aliases.get(key)
    if (prior !== undefined && canonical(prior) !== canonical(item.expr)) {
      throw new BindFault(`the alias ${item.alias} names two different expressions`, item.expr.at)
    }
    aliases.set(key, item.expr)
  }
  const resolve = (expr: Ast.Expr, own?: string) =>
    substitute(expr, aliases, own === undefined ? new Set() : new Set([own.toLowerCase()]))
  const where = select.where === undefined ? undefined : resolve(select.where)
  // What the SELECT reads of its input, known before `*` is expanded unless it has one.
  const starred = select.items.some((item) => item.expr._tag === "Column" && item.expr.name === "*")
  const used = starred ? undefined : (() => {
    const list = select.items.map((item) => resolve(item.expr, item.alias))
    const positionals = (e: Ast.Expr) => resolve(positional(e, select.items, "GROUP BY"))
    const group = select.groupBy.map(positionals)
    const rest = [
      ...(where ? [where] : []),
      ...(select.having ? [resolve(select.having)] : []),
      ...select.orderBy.map((o) => positionals(o.expr))
    ]
    const exprs = [...list, ...group, ...rest]
    return {
      exprs,
      aggregated: group.length > 0 || exprs.some(hasAggregate),
      where: conjuncts(where),
      group,
      first: firstOf(context, select, positionals)
    }
  })()
  const input = await inputOf(context, select.from, scope, where, hint, used)
  const byName = new Map(input.columns.map((column) => [column.name.toLowerCase(), column]))

  // The SELECT list, `*` expanded.
  const items: Array<Ast.SelectItem> = []
  for (const item of select.items) {
    if (item.expr._tag === "Column" && item.expr.name === "*") {
      if (input.columns.length === 0) throw new BindFault("SELECT * needs a FROM", item.expr.at)
      for (const column of input.columns) {
        items.push({
          expr: { _tag: "Column", at: item.expr.at, table: undefined, name: column.name },
          alias: undefined,
          text: column.name
        })
      }
    } else items.push(item)
  }
  const itemExprs = items.map((item) => resolve(item.expr, item.alias))
  const groupBy = select.groupBy.map((e) => resolve(positional(e, items, "GROUP BY")))
  const having = select.having === undefined ? undefined : resolve(select.having)
  const orderBy = select.orderBy.map((o) => ({
    expr: resolve(positional(o.expr, items, "ORDER BY")),
    descending: o.descending
  }))

  if (where !== undefined && hasAggregate(where)) {
    throw new BindFault("aggregate functions are not allowed in WHERE: use HAVING", where.at)
  }
  for (const e of groupBy) {
    if (hasAggregate(e)) throw new BindFault("aggregate functions are not allowed in GROUP BY", e.at)
  }
  const aggregated = groupBy.length > 0 || having !== undefined || itemExprs.some(hasAggregate) ||
    orderBy.some((o) => hasAggregate(o.expr))

  // IN (SELECT …) results, before rows flow.
  const subqueries = new Map<Ast.InQuery, { keys: Set<string | number>; type: VType }>()
  const allExprs = [
    ...itemExprs,
    ...(where ? [where] : []),
    ...groupBy,
    ...(having ? [having] : []),
    ...orderBy.map((o) => o.expr)
  ]
  for (const e of allExprs) {
    const pending: Array<Ast.InQuery> = []
    visitExpr(e, (node) => {
      if (node._tag === "InQuery" && !subqueries.has(node)) pending.push(node)
    })
    for (const node of pending) {
      const relation = await runQuery(context, node.query, new Scope(scope.ctes, scope.depth + 1), undefined)
      if (relation.names.length !== 1) {
        throw new BindFault(`IN (SELECT …) needs one column, got ${relation.names.length}`, node.at)
      }
      context.hold(relation.rows.length)
      subqueries.set(node, { keys: new Set(relation.rows.map((row) => keyOf(row[0]!))), type: relation.types[0]! })
    }
  }

  // The one arrayJoin of this SELECT, if any: every row is repeated once per element.
  let arrayJoin: { readonly text: string; readonly source: Compiled; type: VType } | undefined
  const rowBinder: Binder = {
    column: (ref) => {
      if (ref.table !== undefined && !input.qualifiers.has(ref.table.toLowerCase())) {
        throw new BindFault(`unknown table ${ref.table} in ${ref.table}.${ref.name}`, ref.at)
      }
      return byName.get(ref.name.toLowerCase())
    },
    groupKey: () => undefined,
    aggregate: () => undefined,
    aggregateRefusal: "aggregate functions cannot be nested or used here ({name})",
    arrayJoin: (call) => {
      if (call.args.length !== 1) throw new BindFault("arrayJoin takes one array", call.at)
      const text = canonical(call.args[0]!)
      if (arrayJoin === undefined) {
        const source = compileExpr(context, call.args[0]!, rowBinder)
        if (source.type !== "Array(String)") {
          throw new BindFault(`arrayJoin needs an array, got ${source.type}`, call.at)
        }
        arrayJoin = { text, source, type: "String" }
      } else if (arrayJoin.text !== text) {
        throw new BindFault("only one arrayJoin (of one array) per SELECT is supported", call.at)
      }
      return { type: "String", eval: (env) => env.elem, constant: false }
    },
    subqueries,
    grouped: false
  }
  const compileRow = (e: Ast.Expr) => compileExpr(context, e, rowBinder)

  // For a plan, the types of what this SELECT compiles, by text (a GROUP BY key written again in
  // the SELECT list is not compiled again).
  if (context.plan !== undefined) context.texts = new Map()
  const whereEval = where === undefined ? undefined : compileRow(where)
  if (whereEval !== undefined) needCondition(whereEval, "WHERE", where!.at)

  const env = emptyEnv()
  const visitRows = async (visit: () => void) => {
    const w = whereEval?.eval
    const join = arrayJoin
    await input.run(env, () => {
      context.tick()
      if (join === undefined) {
        if (w === undefined || truthy(w(env))) visit()
        return
      }
      const elements = join.source.eval(env) as ReadonlyArray<string>
      for (let k = 0; k < elements.length; k++) {
        env.elem = elements[k]!
        if (w === undefined || truthy(w(env))) visit()
      }
    })
  }

  const orderCount = orderBy.length
  const { outTypes, produce } = aggregated
    ? grouped(context, select, input, rowBinder, { items: itemExprs, groupBy, having, orderBy }, env, visitRows)
    : plain(context, compileRow, itemExprs, orderBy, env, visitRows)

  const texts = context.texts
  context.texts = undefined
  let rows = await produce()
  const width = outTypes.length
  if (select.distinct) {
    const seen = new Set<string>()
    rows = rows.filter((row) => {
      const key = keyOfRow(row.slice(0, width))
      if (seen.has(key)) return false
      seen.add(key)
      return true
    })
  }
  const offset = constantInteger(context, select.offset, "OFFSET") ?? 0
  const limit = constantInteger(context, select.limit, "LIMIT")
  if (orderCount > 0) {
    const descending = orderBy.map((o) => o.descending)
    const order = (a: ReadonlyArray<Value>, b: ReadonlyArray<Value>): number => {
      for (let k = 0; k < orderCount; k++) {
        const c = compareOrdered(a[width + k]!, b[width + k]!, descending[k]!)
        if (c !== 0) return c
      }
      return 0
    }
    const wanted = limit === undefined ? rows.length : offset + limit
    rows = wanted * 4 < rows.length ? await topN(context, rows, wanted, order) : rows.sort(order)
  }
  if (offset > 0 || limit !== undefined) rows = rows.slice(offset, limit === undefined ? undefined : offset + limit)
  if (orderCount > 0) rows = rows.map((row) => row.slice(0, width))
  const names = items.map((item) => item.alias ?? item.text)
  for (const [k, type] of outTypes.entries()) {
    if (type === "Interval") throw new BindFault("an INTERVAL is not a value: add it to a time", items[k]!.expr.at)
  }
  if (context.plan !== undefined) {
    context.plan.set(select, {
      input: plannedInput(context.plan.get(select)?.input, input.planned),
      inputNames: input.columns.map((column) => column.name),
      distinct: select.distinct,
      items: itemExprs,
      where,
      groupBy,
      having,
      orderBy,
      limit,
      offset,
      aggregated,
      typeOf: (e) => context.types?.get(e) ?? texts?.get(canonical(e))
    })
  }
  return { names, types: outTypes, rows }
}
