/**
 * A bound query of the SQL subset (`@keymeter/sql`'s plan) as ClickHouse 18.16 SQL. Nothing of the
 * query's text is copied: names were resolved by the executor and are written here as this module's
 * own (`_r<relation>_<column>` for every SELECT's outputs, the public column names of the sources),
 * and values go through `Literal`. Each public table is read only as `source` writes it, from the
 * caller's scope. Where 18.16 has no construct of the subset, its equivalent is written (CTEs
 * inlined, EXCEPT as NOT IN, UNION DISTINCT as DISTINCT over UNION ALL); where it would answer
 * differently from the subset, the translation is refused ({@link Untranslatable}) and the
 * executor runs the query itself.
 */
import type * as Ast from "@keymeter/sql/Ast"
import type { Plan, PlannedSelect, ScanHint, Value, VType } from "@keymeter/sql/SqlEngine"
import type { PublicTable } from "@keymeter/sql/Tables"
import { integer, LiteralError, string } from "./Literal.js"

/** A construct this translation does not write. */
export class Untranslatable {
  constructor(readonly what: string) {}
}

/** The SELECT of a raw table's public columns, for the caller's scope narrowed by `hint`. */
export type Source = (table: PublicTable, hint: ScanHint) => string

const DAY = 86_400_000
/** Milliseconds of the fixed interval units. */
const UNIT_MS: Record<string, number> = { SECOND: 1000, MINUTE: 60_000, HOUR: 3_600_000, DAY, WEEK: 7 * DAY }
/** Months of the calendar interval units. */
const UNIT_MONTHS: Record<string, number> = { MONTH: 1, QUARTER: 3, YEAR: 12 }

const refuse = (what: string): never => {
  throw new Untranslatable(what)
}

/** Operators whose result is already 0 or 1 (UInt8), as a filter needs. */
const isCondition = (e: Ast.Expr): boolean =>
  (e._tag === "Binary" && ["AND", "OR", "=", "!=", "<", "<=", ">", ">="].includes(e.op)) ||
  (e._tag === "Unary" && e.op === "NOT") || e._tag === "InList" || e._tag === "InQuery" || e._tag === "Like" ||
  e._tag === "Between" || e._tag === "IsNull"

/** The plan as one SELECT text, its columns in the answer's order. */
export const translate = (plan: Plan, source: Source): string => {
  let relations = 0

  const selectOf = (select: Ast.Select): PlannedSelect =>
    plan.selects.get(select) ?? refuse("a SELECT the executor did not bind")

  /** A query whose output columns are `_r<id>_<k>`. */
  const query = (q: Ast.Query, id: number): string => {
    const body = q.body
    if (body._tag === "Select") return select(selectOf(body), id)
    const left = query(body.left, id)
    const right = query(body.right, id)
    switch (body.op) {
      case "UNION ALL":
        return `SELECT * FROM (${left}) UNION ALL SELECT * FROM (${right})`
      case "UNION DISTINCT":
        return `SELECT * FROM (SELECT * FROM (${left}) UNION ALL SELECT * FROM (${right}))` + distinct(id, body.left)
      case "EXCEPT":
      case "EXCEPT DISTINCT": {
        const columns = outputs(id, widthOf(body.left))
        const tuple = columns.length === 1 ? columns[0]! : `(${columns.join(", ")})`
        return `SELECT * FROM (${left}) WHERE ${tuple} NOT IN (SELECT * FROM (${right}))` +
          (body.op === "EXCEPT DISTINCT" ? distinct(id, body.left) : "")
      }
    }
  }

  const widthOf = (q: Ast.Query): number =>
    q.body._tag === "Select" ? selectOf(q.body).items.length : widthOf(q.body.left)

  const outputs = (id: number, width: number) => Array.from({ length: width }, (_, k) => `_r${id}_${k}`)

  /**
   * DISTINCT as a GROUP BY of every column: 18.16's DISTINCT over a subquery can let duplicates
   * through (its streams are not merged).
   */
  const distinct = (id: number, q: Ast.Query) => ` GROUP BY ${outputs(id, widthOf(q)).join(", ")}`

  const select = (s: PlannedSelect, id: number): string => {
    if (!s.distinct) return plainSelect(s, id)
    // The rows, and the values they are ordered by, then one row of each distinct answer ordered
    // by its values (equal answers have equal order values when these are of the answer's columns).
    const inner = ++relations
    const width = s.items.length
    const rows = plainSelect({
      ...s,
      distinct: false,
      items: [...s.items, ...s.orderBy.map((o) => o.expr)],
      orderBy: [],
      limit: undefined,
      offset: 0
    }, inner)
    let text = `SELECT ${outputs(inner, width).map((c, k) => `${c} AS _r${id}_${k}`).join(", ")} FROM (${rows})` +
      ` GROUP BY ${outputs(inner, width).join(", ")}`
    if (s.orderBy.length > 0) {
      text += ` ORDER BY ${
        s.orderBy.map((o, j) => `any(_r${inner}_${width + j}) ${o.descending ? "DESC" : "ASC"}`).join(", ")
      }`
    }
    return text + limitOf(s)
  }

  const limitOf = (s: PlannedSelect) =>
    s.limit !== undefined
      ? ` LIMIT ${integer(s.offset)}, ${integer(s.limit)}`
      : s.offset > 0
      ? ` LIMIT ${integer(s.offset)}, 18446744073709551615`
      : ""

  const plainSelect = (s: PlannedSelect, id: number): string => {
    let from = ""
    let column: (name: string) => string
    const input = s.input
    const position = (name: string): number => {
      const key = name.toLowerCase()
      for (let k = s.inputNames.length - 1; k >= 0; k--) if (s.inputNames[k]!.toLowerCase() === key) return k
      return refuse(`the column ${name}`)
    }
    switch (input._tag) {
      case "None":
        column = (name) => refuse(`the column ${name} without FROM`)
        break
      case "Table": {
        from = ` FROM (${source(input.table, input.hint)})`
        column = (name) => s.inputNames[position(name)]!
        break
      }
      case "Query": {
        const inner = ++relations
        from = ` FROM (${query(input.query, inner)})`
        column = (name) => `_r${inner}_${position(name)}`
        break
      }
    }
    const x = expression(column, s)
    let text = "SELECT " +
      (s.items.length === 0 ? refuse("a SELECT of no columns") : s.items.map((e, k) => `${x(e)} AS _r${id}_${k}`))
        .join(", ") +
      from
    if (s.where !== undefined) text += ` WHERE ${condition(x, s.where)}`
    if (s.groupBy.length > 0) text += ` GROUP BY ${s.groupBy.map(x).join(", ")}`
    if (s.having !== undefined) text += ` HAVING ${condition(x, s.having)}`
    if (s.orderBy.length > 0) {
      text += ` ORDER BY ${s.orderBy.map((o) => `${x(o.expr)} ${o.descending ? "DESC" : "ASC"}`).join(", ")}`
    }
    return text + limitOf(s)
  }

  /** A condition as ClickHouse filters take it: 0 or 1 (NULL false). */
  const condition = (x: (e: Ast.Expr) => string, e: Ast.Expr): string => isCondition(e) ? x(e) : `(${x(e)} != 0)`

  const literal = (value: Value, type: VType | undefined): string => {
    if (value === null) return "NULL"
    if (typeof value === "string") return string(value)
    if (typeof value === "number") {
      if (!Number.isFinite(value)) return refuse("a non-finite constant")
      if (type === "Float") return `toFloat64(${String(value)})`
      if (!Number.isSafeInteger(value)) return refuse("an integer constant past 2^53")
      return value < 0 ? `(${integer(value)})` : integer(value)
    }
    if (Array.isArray(value)) return value.length === 0 ? "emptyArrayString()" : `[${value.map(string).join(", ")}]`
    return refuse("an INTERVAL as a value")
  }

  const expression = (column: (name: string) => string, s: PlannedSelect) => {
    /** The type the executor gave an expression of this SELECT; never guessed. */
    const typeOf = (e: Ast.Expr): VType => s.typeOf(e) ?? refuse("an expression of unknown type")
    /** A Float as an Int64 as the subset converts it: NaN and infinities are NULL. */
    const wholeOf = (e: Ast.Expr, arg: string) =>
      typeOf(e) === "Float" ? `if(isFinite(${arg}), toInt64(${arg}), NULL)` : `toInt64(${arg})`
    const x = (e: Ast.Expr): string => {
      switch (e._tag) {
        case "Column":
          return column(e.name)
        case "Literal":
          return literal(e.value, typeof e.value === "number" && !e.integer ? "Float" : undefined)
        case "Interval":
          return refuse("an INTERVAL outside time ± INTERVAL")
        case "ArrayLiteral":
          return e.items.length === 0 ? "emptyArrayString()" : `[${e.items.map(x).join(", ")}]`
        case "Unary":
          return e.op === "-" ? `negate(${x(e.operand)})` : `(NOT ${condition(x, e.operand)})`
        case "Binary":
          return binary(e)
        case "Call":
          return call(e)
        case "InList": {
          const constant = e.items.every((item) => plan.constant(item) !== undefined)
          if (!constant) return refuse("IN with a list of non-constants")
          return `(${x(e.expr)} ${e.not ? "NOT IN" : "IN"} (${e.items.map(x).join(", ")}))`
        }
        case "InQuery": {
          const inner = ++relations
          return `(${x(e.expr)} ${e.not ? "NOT IN" : "IN"} (${query(e.query, inner)}))`
        }
        case "Like": {
          // 18.16 has no ILIKE: both sides lowered (the subset folds case as JavaScript's /iu
          // does; they differ only on letters whose lower case is not their folding, as ς and σ).
          const [value, pattern] = e.caseInsensitive
            ? [`lowerUTF8(${x(e.expr)})`, `lowerUTF8(${x(e.pattern)})`]
            : [x(e.expr), x(e.pattern)]
          return `(${value} ${e.not ? "NOT LIKE" : "LIKE"} ${pattern})`
        }
        case "Between": {
          const inside = `(${x(e.expr)} >= ${x(e.low)} AND ${x(e.expr)} <= ${x(e.high)})`
          return e.not ? `(NOT ${inside})` : inside
        }
        case "IsNull":
          return `${e.not ? "isNotNull" : "isNull"}(${x(e.expr)})`
        case "Case": {
          const args: Array<string> = []
          for (const w of e.whens) {
            args.push(e.operand === undefined ? condition(x, w.when) : `(${x(e.operand)} = ${x(w.when)})`, x(w.then))
          }
          args.push(e.otherwise === undefined ? "NULL" : x(e.otherwise))
          return `multiIf(${args.join(", ")})`
        }
      }
    }

    const binary = (e: Ast.Binary): string => {
      if (e.left._tag === "Interval" || e.right._tag === "Interval") {
        const folded = plan.constant(e)
        if (folded !== undefined) return literal(folded, "Int")
        const [time, interval] = e.right._tag === "Interval" ? [e.left, e.right] : [e.right, e.left]
        if (interval._tag !== "Interval") return refuse("an INTERVAL expression")
        const ms = UNIT_MS[interval.unit]
        if (ms !== undefined) return `(${x(time)} ${e.op} (${x(interval.value)} * ${ms}))`
        // Calendar months, the day clamped to the month's last, the time of day kept (`addMonths`).
        const count = plan.constant(interval.value)
        if (typeof count !== "number" || !Number.isFinite(count)) return refuse("INTERVAL of months not a constant")
        const months = Math.trunc(count * UNIT_MONTHS[interval.unit]!) * (e.op === "-" ? -1 : 1)
        const day = wholeOf(time, `floor(${x(time)} / ${DAY})`)
        return `(toInt64(addMonths(toDate('1970-01-01') + ${day}, ${literal(months, "Int")}) - toDate('1970-01-01'))` +
          ` * ${DAY} + (${x(time)} - ${day} * ${DAY}))`
      }
      switch (e.op) {
        case "AND":
        case "OR":
          return `(${condition(x, e.left)} ${e.op} ${condition(x, e.right)})`
        case "||":
          return `concat(${x(e.left)}, ${x(e.right)})`
        case "%":
          // 18.16's modulo truncates floats to integers; the subset's keeps the fraction.
          if (typeOf(e.left) === "Float" || typeOf(e.right) === "Float") return refuse("'%' of a Float")
          return `modulo(${x(e.left)}, ${x(e.right)})`
        default:
          return `(${x(e.left)} ${e.op} ${x(e.right)})`
      }
    }

    // 18.16's parser fails on some nestings of `%`: `modulo` everywhere.
    const positiveModulo = (arg: string, n: number) => `modulo(modulo(${arg}, ${n}) + ${n}, ${n})`
    const floorTo = (e: Ast.Call, ms: number) => wholeOf(e.args[0]!, `floor(${x(e.args[0]!)} / ${ms}) * ${ms}`)
    const dayOf = (e: Ast.Call) => wholeOf(e.args[0]!, `floor(${x(e.args[0]!)} / ${DAY})`)
    /** Days back from `t`'s day to its week's start: from Sunday, or from Monday. */
    const weekStart = (e: Ast.Call, monday: boolean) => {
      const day = dayOf(e)
      return `((${day} - ${positiveModulo(`(${day} + ${monday ? 3 : 4})`, 7)}) * ${DAY})`
    }
    const monthStart = (e: Ast.Call, fn: string) =>
      `(toInt64(${fn}(toDate('1970-01-01') + ${dayOf(e)}) - toDate('1970-01-01')) * ${DAY})`
    const pairwise = (fn: string, args: ReadonlyArray<string>): string =>
      args.slice(1).reduce((acc, arg) => `${fn}(${acc}, ${arg})`, args[0]!)

    const call = (e: Ast.Call): string => {
      const name = e.name.toLowerCase()
      const a = e.args.map(x)
      const cond = (k: number) => condition(x, e.args[k]!)
      switch (name) {
        // Aggregates
        case "count":
          if (e.distinct) return `uniqExact(${a[0]})`
          return e.star || a.length === 0 ? "count()" : `count(${a[0]})`
        case "countif":
          return `countIf(${cond(0)})`
        case "sum":
        case "avg":
        case "min":
        case "max":
        case "any":
          return `${name}(${a[0]})`
        case "sumif":
        case "avgif":
        case "minif":
        case "maxif":
          return `${name.slice(0, -2)}If(${a[0]}, ${cond(1)})`
        case "uniq":
        case "uniqexact":
          return `uniqExact(${a[0]})`
        case "uniqif":
          return `uniqExactIf(${a[0]}, ${cond(1)})`
        // The query's clock
        case "now":
        case "today":
          return literal(plan.constant(e) ?? refuse(`${name}()`), "Int")
        case "arrayjoin":
          return `arrayJoin(${a[0]})`
        // Times: unix ms in, unix ms out, computed as the subset does (no time zone).
        case "tostartofminute":
          return floorTo(e, 60_000)
        case "tostartoffiveminutes":
          return floorTo(e, 300_000)
        case "tostartoffifteenminutes":
          return floorTo(e, 900_000)
        case "tostartofhour":
          return floorTo(e, 3_600_000)
        case "tostartofday":
        case "todate":
          return floorTo(e, DAY)
        case "tomonday":
          return weekStart(e, true)
        case "tostartofweek": {
          const mode = e.args.length > 1 ? plan.constant(e.args[1]!) : 0
          if (typeof mode !== "number") return refuse("toStartOfWeek with a mode that is not a constant number")
          return weekStart(e, mode % 2 === 1)
        }
        case "tostartofmonth":
          return monthStart(e, "toStartOfMonth")
        case "tostartofquarter":
          return monthStart(e, "toStartOfQuarter")
        case "tostartofyear":
          return monthStart(e, "toStartOfYear")
        case "tohour":
          return positiveModulo(wholeOf(e.args[0]!, `floor(${a[0]} / 3600000)`), 24)
        case "todayofweek":
          return `(${positiveModulo(`(${dayOf(e)} + 3)`, 7)} + 1)`
        case "fromunixtimestamp64milli":
        case "tounixtimestamp64milli":
          return `(${a[0]})`
        case "tounixtimestamp":
          return wholeOf(e.args[0]!, `floor(${a[0]} / 1000)`)
        // Scalars
        case "if":
          return `if(${cond(0)}, ${a[1]}, ${a[2]})`
        case "multiif":
          return `multiIf(${a.map((arg, k) => (k % 2 === 0 && k < a.length - 1 ? cond(k) : arg)).join(", ")})`
        case "abs":
        case "floor":
        case "ceil":
        case "intdiv":
        case "length":
        case "empty":
        case "notempty":
        case "has":
        case "hasany":
        case "hasall":
        case "startswith":
        case "endswith":
          return `${FUNCTION_NAMES[name]}(${a.join(", ")})`
        case "round":
          return `round(${a.join(", ")})`
        case "greatest":
        case "least":
          return pairwise(name, a)
        case "tostring":
          // A Float's text differs between the two (1e+21 against 1e21).
          if (typeOf(e.args[0]!) === "Float") return refuse("toString of a Float")
          return `toString(${a[0]})`
        case "toint64":
          if (typeOf(e.args[0]!) === "String") return refuse("toInt64 of a String")
          return wholeOf(e.args[0]!, a[0]!)
        case "tofloat64":
          if (typeOf(e.args[0]!) === "String") return refuse("toFloat64 of a String")
          return `toFloat64(${a[0]})`
        case "lower":
          return `lowerUTF8(${a[0]})`
        case "upper":
          return `upperUTF8(${a[0]})`
        case "concat":
          return a.length === 1 ? `concat(${a[0]}, '')` : `concat(${a.join(", ")})`
        default:
          return refuse(`the function ${e.name}`)
      }
    }
    return x
  }

  try {
    return query(plan.query, 0)
  } catch (error) {
    if (error instanceof LiteralError) throw new Untranslatable(error.message)
    throw error
  }
}

/** ClickHouse's spelling of the functions written as they are. */
const FUNCTION_NAMES: Record<string, string> = {
  abs: "abs",
  floor: "floor",
  ceil: "ceil",
  intdiv: "intDiv",
  length: "length",
  empty: "empty",
  notempty: "notEmpty",
  has: "has",
  hasany: "hasAny",
  hasall: "hasAll",
  startswith: "startsWith",
  endswith: "endsWith"
}
