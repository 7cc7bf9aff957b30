/**
 * Runs a parsed query over the caller's rows. Names resolve against the public tables of one
 * family and the query's own CTEs and subqueries, nothing else: a table is read only through
 * `Sources`, which the caller built for one workspace and the apis (or namespaces) its key may
 * read. Expressions compile to closures once per SELECT; rows stream from scans batch by batch,
 * yielding the event loop every few milliseconds of work, under the query's budgets.
 */
import { OUTCOMES } from "@keymeter/core/Aggregation"
import type * as Ast from "../Ast.js"
import type { Family } from "../Tables.js"
import { TABLES } from "../Tables.js"
import type { Binder } from "./Compile.js"
import { canonical, compileExpr, constantInteger, needCondition } from "./Compile.js"
import type { Compiled, Context, Env, Eval, Input, Relation, ScanHint } from "./Context.js"
import { BindFault, emptyEnv, MAX_DEPTH, SLICE_CHECK } from "./Context.js"
import { countsInput } from "./CountedInput.js"
import { conjuncts, hasAggregate, positional, readsColumn, substitute, visitExpr } from "./Exprs.js"
import { compareOrdered, firstOf, firstRows, topN } from "./FirstRows.js"
import type { Aggregate, State } from "./Functions.js"
import { AGGREGATES, once, SignatureError } from "./Functions.js"
import type { Uses } from "./Inputs.js"
import { noInput, rawInput, relationInput } from "./Inputs.js"
import { PairIndex } from "./PairIndex.js"
import { GRAIN_SPAN, prunedView, viewOf } from "./RollupViews.js"
import { hintOf, intersect, plannedInput } from "./ScanHints.js"
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
 * What one event of each outcome adds to a sum whose arguments read the outcome and nothing else
 * (`outcomesTogether`), on the input's row of that outcome.
 */
const addedByOutcome = (
  slot: { readonly aggregate: Aggregate; readonly args: ReadonlyArray<Eval> },
  rows: ReadonlyArray<unknown>
): Float64Array => {
  const adds = slot.aggregate.adds
  if (adds === undefined) throw new Error("an aggregate that reads outcomes together must be a sum")
  const env = emptyEnv()
  const a = slot.args
  const added = new Float64Array(rows.length)
  for (let o = 0; o < rows.length; o++) {
    env.b = rows[o]
    added[o] = adds(a.length > 0 ? a[0]!(env) : null, a.length > 1 ? a[1]!(env) : null, 1)
  }
  return added
}

/** A row's events of each outcome (from `at` in `byOutcome`), each weighed by what one adds. */
const weighed = (one: Float64Array, byOutcome: Float64Array, at: number): number => {
  let added = 0
  for (let o = 0; o < OUTCOMES; o++) added += one[o]! * byOutcome[at + o]!
  return added
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

  let outTypes: Array<VType>
  let produce: () => Promise<Array<Array<Value>>>
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
  if (!aggregated) {
    const outputs = itemExprs.map(compileRow)
    const orders = orderBy.map((o) => compileRow(o.expr))
    outTypes = outputs.map((o) => o.type)
    const fs = [...outputs, ...orders].map((o) => o.eval)
    produce = async () => {
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
  } else {
    const keys = groupBy.map(compileRow)
    const keyTexts = groupBy.map(canonical)
    // A group's key and aggregate values, once its columns are laid out below.
    let groupKey: (k: number, group: number) => Value = () => null
    let resultOf: (group: number, s: number) => Value = () => null
    const slots: Array<{
      readonly aggregate: Aggregate
      readonly type: VType
      readonly result: VType
      readonly args: Array<Eval>
      /** Its arguments read the outcome of rows holding every outcome (`Input.outcomes`). */
      readonly byOutcome: boolean
    }> = []
    const slotTexts: Array<string> = []
    const groupBinder: Binder = {
      ...rowBinder,
      grouped: true,
      column: rowBinder.column,
      groupKey: (e) => {
        const k = keyTexts.indexOf(canonical(e))
        if (k < 0) return undefined
        const type = keys[k]!.type
        return { type, eval: (env) => groupKey(k, env.g), constant: false }
      },
      aggregate: (call, aggregate) => {
        const name = call.name.toLowerCase()
        const text = canonical(call)
        let s = slotTexts.indexOf(text)
        if (s < 0) {
          const [min, max] = aggregate.arity
          if (!call.star && (call.args.length < min || call.args.length > max)) {
            throw new BindFault(
              `${call.name} takes ${min === max ? min : `${min} to ${max}`} argument${
                max === 1 ? "" : "s"
              }, got ${call.args.length}`,
              call.at
            )
          }
          if (call.star && name !== "count") throw new BindFault(`${call.name}(*) is not supported`, call.at)
          const args = call.args.map((arg) => {
            if (hasAggregate(arg)) throw new BindFault("aggregate functions cannot be nested", arg.at)
            return compileRow(arg)
          })
          let fn = aggregate
          // A sum of a column of totals (rows of counts) adds each row's once.
          const first = call.args[0]
          if (
            fn.adds !== undefined && (name === "sum" || name === "sumif") && first?._tag === "Column" &&
            rowBinder.column(first)?.total === true
          ) fn = once(fn)
          if (call.distinct) {
            if (name !== "count") throw new BindFault("DISTINCT is only allowed in count(DISTINCT …)", call.at)
            fn = AGGREGATES.get("uniqexact")!
          }
          let type: VType
          try {
            type = call.star || args.length === 0 ? "Int" : fn.type(args.map((a) => a.type), call.name)
          } catch (error) {
            if (error instanceof SignatureError) throw new BindFault(error.message, call.at)
            throw error
          }
          s = slots.length
          // count() and count(*) count rows: a constant argument that is never NULL.
          const evals = args.length === 0 ? [() => 1] : args.map((a) => a.eval)
          const byOutcome = input.outcomes !== undefined &&
            call.args.some((arg) => readsColumn(arg, input.outcomes!.column))
          slots.push({ aggregate: fn, type: args[0]?.type ?? "Int", result: type, args: evals, byOutcome })
          slotTexts.push(text)
        }
        const index = s
        return { type: slots[index]!.result, eval: (env) => resultOf(env.g, index), constant: false }
      },
      arrayJoin: (call) => {
        // An arrayJoin in GROUP BY is a key; elsewhere after grouping it is refused.
        const k = keyTexts.indexOf(canonical(call))
        if (k < 0) throw new BindFault("arrayJoin after GROUP BY must be one of the GROUP BY expressions", call.at)
        return undefined
      }
    }
    const compileGroup = (e: Ast.Expr): Compiled => compileExpr(context, e, groupBinder)
    const outputs = itemExprs.map(compileGroup)
    const havingEval = having === undefined ? undefined : compileGroup(having)
    if (havingEval !== undefined) needCondition(havingEval, "HAVING", having!.at)
    const orders = orderBy.map((o) => compileGroup(o.expr))
    outTypes = outputs.map((o) => o.type)
    const fs = [...outputs, ...orders].map((o) => o.eval)
    const keyFs = keys.map((k) => k.eval)
    // What rows are grouped by: a dictionary column's code, or the value's key.
    const groupFs = keys.map((k): Eval => {
      if (k.code !== undefined) return k.code
      const f = k.eval
      return k.type === "Int" || k.type === "Float" ? f : (env) => keyOf(f(env))
    })
    const stateBytes = slots.reduce((sum, slot) => sum + slot.aggregate.bytes, 0)
    // Groups are numbers, their keys and aggregates columns indexed by them: no object per group
    // for the collector to trace (a heavy query holds hundreds of thousands). Sums (count, countIf,
    // sum, sumIf) are numbers in a Float64Array; other aggregates keep a state per group.
    const summed: Array<number> = []
    const stated: Array<number> = []
    for (let s = 0; s < slots.length; s++) (slots[s]!.aggregate.adds === undefined ? stated : summed).push(s)
    const sums = slots.map(() => new Float64Array(0))
    let capacity = 0
    const states = slots.map((): Array<State> => [])
    // A group's keys are its keys' codes (see `codes`), each code's value kept once: an array of
    // values per key, one per group, was most of what a heavy GROUP BY left the collector to copy
    // and promote (a major collection every few seconds beside the hot paths).
    let keyCodes = keys.map(() => new Uint32Array(0))
    const valueOf = keys.map((): Array<Value> => [])
    /** The codes of the row being grouped, one per key, set before a group is made for it. */
    const rowCodes = new Uint32Array(keys.length)
    let groups = 0
    const newGroup = (): number => {
      const at = groups++
      if (at >= capacity) {
        capacity = Math.max(64, capacity * 2)
        for (const s of summed) {
          const grown = new Float64Array(capacity)
          grown.set(sums[s]!)
          sums[s] = grown
        }
        keyCodes = keyCodes.map((held) => {
          const grown = new Uint32Array(capacity)
          grown.set(held)
          return grown
        })
      }
      for (let k = 0; k < keyFs.length; k++) {
        const code = rowCodes[k]!
        keyCodes[k]![at] = code
        if (valueOf[k]![code] === undefined) valueOf[k]![code] = keyFs[k]!(env)
      }
      for (const s of stated) states[s]!.push(slots[s]!.aggregate.make(slots[s]!.type))
      return at
    }
    groupKey = (k, g) => valueOf[k]![keyCodes[k]![g]!]!
    resultOf = (g, s) => slots[s]!.aggregate.adds === undefined ? states[s]![g]!.result() : sums[s]![g]!
    // Each key as a whole number: a dictionary column's code (dense, from 0), or one given to each
    // distinct value in the order first seen.
    const codes = keys.map((k, j): (env: Env) => number => {
      if (k.code !== undefined) return k.code as (env: Env) => number
      const f = groupFs[j]!
      const known = new Map<Value, number>()
      return (env) => {
        const value = f(env)
        let code = known.get(value)
        if (code === undefined) known.set(value, code = known.size)
        return code
      }
    })
    produce = async () => {
      // One key: its code indexes the groups. More: the codes are paired, the first two, then that
      // pair's number with the third, …, the last pair's number being the group's.
      const depth = groupFs.length
      const byCode: Array<number> = []
      const pairs = Array.from({ length: Math.max(0, depth - 1) }, () => new PairIndex())
      const single = depth === 0 ? newGroup() : undefined
      const args = slots.map((slot) => slot.args)
      const adds = slots.map((slot) => slot.aggregate.adds)
      const perOutcome = slots.map((slot) => slot.byOutcome ? addedByOutcome(slot, input.outcomes!.rows) : undefined)
      await visitRows(() => {
        let group: number | undefined = single
        if (group === undefined) {
          let code = rowCodes[0] = codes[0]!(env)
          if (depth === 1) {
            group = byCode[code]
            if (group === undefined) {
              byCode[code] = group = newGroup()
              context.hold(depth + 2, stateBytes)
            }
          } else {
            for (let j = 1; j < depth - 1; j++) code = pairs[j - 1]!.intern(code, rowCodes[j] = codes[j]!(env))
            const last = pairs[depth - 2]!
            const lastCode = rowCodes[depth - 1] = codes[depth - 1]!(env)
            group = last.find(code, lastCode)
            if (group < 0) {
              group = newGroup()
              last.add(code, lastCode, group)
              context.hold(depth + 2, stateBytes)
            }
          }
        }
        const at = group
        const byOutcome = env.o
        for (let k = 0; k < summed.length; k++) {
          const s = summed[k]!
          const one = perOutcome[s]
          if (one !== undefined && byOutcome !== undefined) {
            sums[s]![at] += weighed(one, byOutcome, env.i * OUTCOMES)
            continue
          }
          const a = args[s]!
          sums[s]![at] += adds[s]!(a.length > 0 ? a[0]!(env) : null, a.length > 1 ? a[1]!(env) : null, env.w)
        }
        for (let k = 0; k < stated.length; k++) {
          const s = stated[k]!
          const a = args[s]!
          states[s]![at]!.add(a.length > 0 ? a[0]!(env) : null, a.length > 1 ? a[1]!(env) : null, env.w)
        }
      })
      const genv = emptyEnv()
      const h = havingEval?.eval
      const wanted = firstRows(context, select)
      if (orderCount > 0 && !select.distinct && wanted !== undefined && wanted * 4 < groups) {
        // The first rows of many: chosen by their ORDER BY values, the rows built for them only
        // (a row per group would be hundreds of thousands of arrays for the collector to copy).
        // Numeric ORDER BY values are kept per group in typed arrays, the others read again when
        // compared: an array of a value per group (hundreds of thousands) went straight to the old
        // generation, for a major collection to trace while the hot paths wait.
        const kept = new Int32Array(groups)
        let count = 0
        const numbers = orders.map((o) => o.type === "Int" || o.type === "Float" ? new Float64Array(groups) : undefined)
        /** Groups whose numeric value is not a number: NULL, or (never, by the types) another value. */
        const others = orders.map(() => new Map<number, Value>())
        for (let n = 0; n < groups; n++) {
          genv.g = n
          if (h !== undefined && !truthy(h(genv))) continue
          kept[count++] = n
          for (let k = 0; k < orderCount; k++) {
            const into = numbers[k]
            if (into === undefined) continue
            const value = orders[k]!.eval(genv)
            if (typeof value === "number") into[n] = value
            else others[k]!.set(n, value)
          }
          if ((n & SLICE_CHECK) === SLICE_CHECK && context.due()) await context.pause()
        }
        const cenv = emptyEnv()
        const valueAt = (k: number, n: number): Value => {
          const into = numbers[k]
          if (into === undefined) {
            cenv.g = n
            return orders[k]!.eval(cenv)
          }
          const other = others[k]!
          return other.size > 0 && other.has(n) ? other.get(n)! : into[n]!
        }
        const descending = orderBy.map((o) => o.descending)
        const firsts = await topN(context, kept.subarray(0, count), wanted, (a, b) => {
          for (let k = 0; k < orderCount; k++) {
            const c = compareOrdered(valueAt(k, a), valueAt(k, b), descending[k]!)
            if (c !== 0) return c
          }
          return 0
        })
        context.hold(firsts.length * fs.length)
        return firsts.map((n) => {
          genv.g = n
          return fs.map((f) => f(genv))
        })
      }
      const rows: Array<Array<Value>> = []
      for (let n = 0; n < groups; n++) {
        genv.g = n
        if (h !== undefined && !truthy(h(genv))) continue
        rows.push(fs.map((f) => f(genv)))
        if ((n & SLICE_CHECK) === SLICE_CHECK && context.due()) await context.pause()
      }
      context.hold(rows.length * fs.length)
      return rows
    }
  }

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
