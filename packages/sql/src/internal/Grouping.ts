/**
 * A SELECT with GROUP BY or aggregates: groups are numbers, their keys and aggregates columns
 * indexed by them, filled as rows stream; then HAVING, and the rows ORDER BY and LIMIT want (the
 * first of many chosen without building a row for every group).
 */
import { OUTCOMES } from "@keymeter/core/Aggregation"
import type * as Ast from "../Ast.js"
import type { Aggregate, State } from "./Aggregates.js"
import { AGGREGATES, once } from "./Aggregates.js"
import type { Binder } from "./Compile.js"
import { canonical, compileExpr } from "./Compile.js"
import type { Compiled, Context, Env, Eval, Input, Produced } from "./Context.js"
import { BindFault, emptyEnv, SLICE_CHECK } from "./Context.js"
import { hasAggregate, readsColumn } from "./Exprs.js"
import { compareOrdered, firstRows, topN } from "./FirstRows.js"
import { PairIndex } from "./PairIndex.js"
import { SignatureError } from "./Signature.js"
import { needCondition } from "./Typing.js"
import type { Value, VType } from "./Values.js"
import { keyOf, truthy } from "./Values.js"

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

/** The SELECT's clauses, aliases resolved and positions read. */
export interface Clauses {
  readonly items: ReadonlyArray<Ast.Expr>
  readonly groupBy: ReadonlyArray<Ast.Expr>
  readonly having: Ast.Expr | undefined
  readonly orderBy: ReadonlyArray<{ readonly expr: Ast.Expr; readonly descending: boolean }>
}

/**
 * The grouped SELECT's output types, and `produce`, which reads its rows (`visitRows`, `env`
 * positioned at each) into groups and answers a row per group kept: the outputs, then the ORDER
 * BY values. Expressions compile now, against `rowBinder` before grouping and the groups after.
 */
export const grouped = (
  context: Context,
  select: Ast.Select,
  input: Input,
  rowBinder: Binder,
  clauses: Clauses,
  env: Env,
  visitRows: (visit: () => void) => Promise<void>
): Produced => {
  const { groupBy, having, orderBy } = clauses
  const itemExprs = clauses.items
  const orderCount = orderBy.length
  const compileRow = (e: Ast.Expr) => compileExpr(context, e, rowBinder)
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
  const outTypes = outputs.map((o) => o.type)
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
  const produce = async () => {
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
  return { outTypes, produce }
}
