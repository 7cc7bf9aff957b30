/**
 * A raw table read as the store's counts: when a SELECT cannot tell rows of counts from the events
 * they stand for (`countShape`), it reads what `getVerifications` reads, thousands of rows rather
 * than millions, each weighing the events it stands for; the partial buckets at its edges as events.
 */
import type { RatelimitColumns, VerificationColumns } from "@keymeter/core/EventScan"
import type { Outcome } from "@keymeter/core/Verification"
import { Outcomes } from "@keymeter/core/Verification"
import type * as Ast from "../Ast.js"
import type { Family, PublicTable } from "../Tables.js"
import { OUTCOME_NAMES } from "../Tables.js"
import { constantValue } from "./Compile.js"
import type { Context, CountShape, CountSource, Input, ScanHint } from "./Context.js"
import { TooManyRows } from "./Context.js"
import { outcomeRows } from "./Counts.js"
import { childrenOf, isAggregateCall, isColumn, readsColumn as reads, visitExpr } from "./Exprs.js"
import type { Uses } from "./Inputs.js"
import { rawInput, readFault, tableColumns, visitBatches } from "./Inputs.js"

/** Bytes a row of counts is counted as while the query runs (built for it, as SQLite's rows). */
const COUNT_ROW_BYTES = 64

/**
 * The events of a raw table read as the store's counts, when the SELECT cannot tell the two apart
 * (`countShape`): every group, filter and aggregate answers the same over rows of counts, each
 * aggregate weighing a row by the events it stands for. Undefined when the SELECT or the store
 * cannot (the SELECT then reads events). Counts are what `getVerifications` reads: for the
 * dashboard's questions, thousands of rows rather than millions.
 */
export const countsInput = async (
  context: Context,
  table: PublicTable,
  qualifiers: ReadonlySet<string>,
  hint: ScanHint,
  uses: Uses
): Promise<Input | undefined> => {
  const verifications = table.family === "verifications"
  const source = verifications ? context.sources.counts?.verifications : context.sources.counts?.ratelimits
  if (source === undefined || hint.from >= hint.to || hint.within?.length === 0) return undefined
  const counting = countShape(context, table, uses, hint)
  if (counting === undefined) return undefined
  const { from, to } = counting
  const identified = counting.shape.identity && uses.where.some((e) => keepsIdentified(table.family, e))
  // The bounds' partial buckets, before and after the counted ones: their events.
  const edges = [
    ...(hint.from < from ? [rawInput(context, table, qualifiers, { ...hint, to: from })] : []),
    ...(to < hint.to ? [rawInput(context, table, qualifiers, { ...hint, from: to })] : [])
  ]
  const together = counting.shape.credits !== true && outcomesTogether(table.family, uses)
  const whole: CountShape = { ...counting.shape, identified, ...(together ? { outcomes: "together" } : {}) }
  // Events of the edges are added to the groups: then no group's counts are all of it.
  const shape = edges.length > 0 ? whole : { ...whole, top: countTop(table.family, uses, whole) }
  const columns = tableColumns(context, table)
  return {
    planned: { _tag: "Table", table, hint },
    outcomes: together ? { column: OUTCOME_COLUMN[table.family], rows: outcomeRows[table.family] } : undefined,
    columns: shape.credits === true
      ? columns.map((column) => column.name === "spent_credits" ? { ...column, total: true } : column)
      : columns,
    qualifiers,
    run: async (env, visit) => {
      // Each batch is visited as it is read and then dropped: a read in many parts holds one
      // part's rows at a time, and they die young.
      const byMemory = Math.floor(context.memoryLeft / COUNT_ROW_BYTES)
      let read: "read" | undefined
      try {
        read = await (source as CountSource<VerificationColumns | RatelimitColumns>)(
          { ...hint, from, to },
          shape,
          Math.min(context.scanLeft, byMemory),
          context.pauser,
          async (batch) => {
            context.scannedRows(batch.length)
            context.hold(0, batch.length * COUNT_ROW_BYTES)
            await visitBatches(context, env, [batch], visit)
          }
        )
      } catch (error) {
        if (!(error instanceof TooManyRows)) throw error
        throw readFault(context, byMemory)
      }
      if (read === undefined) return rawInput(context, table, qualifiers, hint).run(env, visit)
      for (const edge of edges) await edge.run(env, visit)
    }
  }
}

/** The column that reads a family's outcome. */
const OUTCOME_COLUMN: Record<Family, string> = { verifications: "outcome", ratelimits: "passed" }

/** Aggregates that add, for rows standing for many events, what one event adds times their number. */
const BY_WEIGHT = new Set(["count", "countif", "sum", "sumif"])

/**
 * Whether a SELECT over counts may read a row per group with its outcomes together (see
 * `CountShape.outcomes`), a ninth of the rows: it reads the outcome only in the arguments of
 * `count`, `countIf`, `sum` and `sumIf` that read no other column, so what one event of each
 * outcome adds is known before rows flow and a row adds it times its events of that outcome; its
 * WHERE, its groups and its other aggregates never read the outcome, so every event of a row
 * answers them the same.
 */
export const outcomesTogether = (family: Family, uses: Uses): boolean => {
  const outcome = OUTCOME_COLUMN[family]
  if (uses.where.some((e) => reads(e, outcome)) || uses.group.some((e) => reads(e, outcome))) return false
  let together = true
  const walk = (e: Ast.Expr): void => {
    if (!together) return
    if (e._tag === "Call" && isAggregateCall(e)) {
      if (!e.args.some((arg) => reads(arg, outcome))) return
      if (!BY_WEIGHT.has(e.name.toLowerCase()) || e.distinct || e.args.some((arg) => reads(arg, outcome, true))) {
        together = false
      }
      return
    }
    if (isColumn(e, outcome)) together = false
    else childrenOf(e).forEach(walk)
  }
  uses.exprs.forEach(walk)
  return together
}

/** Columns of one value in a read of counts (of one api or namespace, within counted bounds). */
const PER_READ = new Set(["workspace_id", "key_space_id", "namespace_id"])

/** The columns counts keep for a part of their shape ("key", "identity"), in COUNTED's order. */
const countedColumns = (family: Family, needs: "key" | "identity"): Array<string> =>
  Object.entries(COUNTED[family]).flatMap(([name, need]) => need === needs ? [name] : [])

const columnsOf = (expr: Ast.Expr): Set<string> => {
  const names = new Set<string>()
  visitExpr(expr, (e) => {
    if (e._tag === "Column") names.add(e.name.toLowerCase())
  })
  return names
}

const isEmptyString = (e: Ast.Expr) => e._tag === "Literal" && e.value === ""

/** `identity_id != ''` (`override_id != ''`): only events with an identity (override). */
const keepsIdentified = (family: Family, e: Ast.Expr): boolean => {
  const column = countedColumns(family, "identity")[0]!
  return e._tag === "Binary" && e.op === "!=" &&
    (isColumn(e.left, column) && isEmptyString(e.right) || isColumn(e.right, column) && isEmptyString(e.left))
}

/**
 * Whether a SELECT over counts keeps only its first groups by a store's counter (`count()`, or
 * `countIf(outcome = '…')`), its groups being the counts' groups and each read whole: then a read
 * may return only the groups that can come first (see `CountShape.top`). Its WHERE holds only
 * what is one value per read (api, namespace, the counted bounds) or keeps identified events.
 */
const countTop = (family: Family, uses: Uses, shape: CountShape): CountShape["top"] => {
  const first = uses.first
  if (
    first === undefined || first.rows === 0 || shape.timeUnit !== undefined || shape.tags !== undefined ||
    shape.credits === true
  ) {
    return undefined
  }
  if (shape.identity && !shape.identified) return undefined
  for (const conjunct of uses.where) {
    if (keepsIdentified(family, conjunct)) continue
    for (const name of columnsOf(conjunct)) if (!PER_READ.has(name) && name !== "time") return undefined
  }
  const wanted = [
    ...(shape.key ? countedColumns(family, "key") : []),
    ...(shape.identity ? countedColumns(family, "identity") : [])
  ]
  const grouped = new Set<string>()
  for (const e of uses.group) {
    if (e._tag !== "Column") return undefined
    grouped.add(e.name.toLowerCase())
  }
  if (wanted.length === 0 || wanted.some((name) => !grouped.has(name))) return undefined
  for (const name of grouped) if (!wanted.includes(name) && !PER_READ.has(name)) return undefined
  const by = first.by
  if (by._tag !== "Call" || by.distinct) return undefined
  const name = by.name.toLowerCase()
  let orderBy: "total" | Outcome | undefined
  if (name === "count" && (by.star || by.args.length === 0)) orderBy = "total"
  else if (family === "verifications" && name === "countif" && by.args.length === 1) {
    const condition = by.args[0]!
    if (condition._tag !== "Binary" || condition.op !== "=") return undefined
    const literal = isColumn(condition.left, "outcome")
      ? condition.right
      : isColumn(condition.right, "outcome")
      ? condition.left
      : undefined
    const code = literal?._tag === "Literal" && typeof literal.value === "string"
      ? OUTCOME_NAMES.indexOf(literal.value)
      : -1
    orderBy = Outcomes[code]
  }
  return orderBy === undefined ? undefined : { orderBy, order: first.descending ? "desc" : "asc", limit: first.rows }
}

/** Time functions whose value is the same for every time of a day, and of an hour. */
const SAME_ALL_DAY = new Set([
  "tostartofday",
  "todate",
  "tomonday",
  "tostartofweek",
  "tostartofmonth",
  "tostartofquarter",
  "tostartofyear",
  "todayofweek"
])

const SAME_ALL_HOUR = new Set(["tostartofhour", "tohour"])

/** The columns counted rows keep, and what of a count's shape each needs ("": nothing). */
const COUNTED: Record<Family, Readonly<Record<string, "key" | "identity" | "tags" | "">>> = {
  verifications: {
    workspace_id: "",
    key_space_id: "",
    outcome: "",
    key_id: "key",
    identity_id: "identity",
    external_id: "identity",
    tags: "tags"
  },
  ratelimits: { workspace_id: "", namespace_id: "", passed: "", identifier: "key", override_id: "identity" }
}

/**
 * The shape of counts a SELECT over a raw table can read instead of its events, and the bounds to
 * count within (its own, narrowed to whole buckets: the partial buckets at its edges are read as
 * events); or undefined. It must aggregate (a row of counts is many events), never ask `any`
 * (which event came first), read only columns that counts keep (not latency, region; spent credits
 * only summed, which the store then sums with its counts), and read `time` only through functions constant over a bucket (`toStartOfDay(time)`,
 * `toHour(time)`) or in `time >= c` and `time < c` with `c` a bucket's start or outside the
 * counted bounds. Without a time bucket, a row's time is the start of the counted bounds.
 */
const countShape = (
  context: Context,
  table: PublicTable,
  uses: Uses,
  hint: ScanHint
): { readonly shape: CountShape; readonly from: number; readonly to: number } | undefined => {
  if (!uses.aggregated) return undefined
  const columns = COUNTED[table.family]
  const shape = { key: false, identity: false }
  let credits = false
  let tagsets = false
  let tagsJoined = false
  let hour = false
  let day = false
  let countable = true
  const bounds: Array<number> = []
  const isTime = (e: Ast.Expr) => e._tag === "Column" && e.name.toLowerCase() === "time"
  const walk = (e: Ast.Expr): void => {
    if (!countable) return
    if (e._tag === "Column") {
      const needs = columns[e.name.toLowerCase()]
      if (needs === undefined) countable = false
      else if (needs === "tags") tagsets = true
      else if (needs !== "") shape[needs] = true
      return
    }
    if (e._tag === "Call") {
      const name = e.name.toLowerCase()
      if (name === "any") {
        countable = false
        return
      }
      const arg = e.args[0]
      // Spent credits summed: the store sums them with its counts.
      if (
        table.family === "verifications" && (name === "sum" || name === "sumif") && !e.distinct &&
        arg !== undefined && isColumn(arg, "spent_credits")
      ) {
        credits = true
        e.args.slice(1).forEach(walk)
        return
      }
      if (
        name === "arrayjoin" && e.args.length === 1 && arg?._tag === "Column" &&
        columns[arg.name.toLowerCase()] === "tags"
      ) {
        tagsJoined = true
        return
      }
      if ((SAME_ALL_DAY.has(name) || SAME_ALL_HOUR.has(name)) && e.args.length > 0 && isTime(e.args[0]!)) {
        if (SAME_ALL_HOUR.has(name)) hour = true
        else day = true
        e.args.slice(1).forEach(walk)
        return
      }
    }
    if (e._tag === "Binary" && (isTime(e.left) || isTime(e.right))) {
      // time >= c, time < c (or c <= time, c > time): the same for a whole bucket starting at c.
      const [op, other] = isTime(e.left) ? [e.op, e.right] : [FLIPPED[e.op], e.left]
      const value = op === ">=" || op === "<" ? constantValue(context, other) : undefined
      if (typeof value === "number" && Number.isFinite(value)) bounds.push(value)
      else countable = false
      return
    }
    childrenOf(e).forEach(walk)
  }
  for (const expr of uses.exprs) walk(expr)
  if (!countable) return undefined
  // The coarsest bucket that answers: each comparison the same over the counted bounds, or on
  // a bucket's start.
  const units: ReadonlyArray<CountShape["timeUnit"]> = hour ? ["hour"] : day ? ["day", "hour"] : [
    undefined,
    "day",
    "hour"
  ]
  for (const timeUnit of units) {
    const step = timeUnit === "day" ? DAY_MS : HOUR_MS
    const from = Math.ceil(hint.from / step) * step
    const to = hint.to >= Number.MAX_SAFE_INTEGER ? hint.to : Math.floor(hint.to / step) * step
    if (from >= to) continue
    const answers = bounds.every((c) => c <= from || c >= to || (timeUnit !== undefined && c % step === 0))
    if (answers) {
      const tags = tagsets ? "tags" : tagsJoined ? "tag" : undefined
      return { shape: { timeUnit, ...shape, tags, credits }, from, to }
    }
  }
  return undefined
}

const HOUR_MS = 3_600_000

const DAY_MS = 86_400_000

const FLIPPED: Record<string, string> = { "<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "!=": "!=" }
