/**
 * Scan hints: what a query's WHERE bounds of the tables it reads (time, and the api or namespace
 * ids), so that a scan reads no more; the WHERE itself still filters every row.
 */
import type * as Ast from "../Ast.js"
import type { PlannedInput } from "../SqlEngine.js"
import type { PublicTable } from "../Tables.js"
import { constantValue } from "./Compile.js"
import type { Context, ScanHint } from "./Context.js"
import { conjuncts, isColumn } from "./Exprs.js"
import type { Value } from "./Values.js"

/** Both hints' bounds at once: what a scan under both may skip. */
export const intersect = (a: ScanHint, b: ScanHint | undefined): ScanHint =>
  b === undefined ? a : {
    from: Math.max(a.from, b.from),
    to: Math.min(a.to, b.to),
    within: a.within === undefined
      ? b.within
      : b.within === undefined
      ? a.within
      : a.within.filter((id) => b.within!.includes(id))
  }

/**
 * What a WHERE bounds of a table's scan: its time range (from the conjuncts comparing `time` to
 * constants) and the api or namespace ids it names; what it leaves unbounded, unbounded.
 */
export const hintOf = (context: Context, table: PublicTable, where: Ast.Expr | undefined): ScanHint => {
  let from = 0
  let to = Number.MAX_SAFE_INTEGER
  let within: Array<string> | undefined
  const idColumn = table.family === "verifications" ? "key_space_id" : "namespace_id"
  const constant = (expr: Ast.Expr): Value | undefined => constantValue(context, expr)
  const bound = (op: string, value: Value | undefined) => {
    if (typeof value !== "number" || Number.isNaN(value)) return
    if (op === ">=") from = Math.max(from, Math.ceil(value))
    else if (op === ">") from = Math.max(from, Math.floor(value) + 1)
    else if (op === "<") to = Math.min(to, Math.ceil(value))
    else if (op === "<=") to = Math.min(to, Math.floor(value) + 1)
    else if (op === "=") {
      from = Math.max(from, Math.ceil(value))
      to = Math.min(to, Math.floor(value) + 1)
    }
  }
  const FLIP: Record<string, string> = { "<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=" }
  const narrow = (ids: Array<string>) => {
    within = within === undefined ? ids : within.filter((id) => ids.includes(id))
  }
  for (const term of conjuncts(where)) {
    if (term._tag === "Binary" && FLIP[term.op] !== undefined) {
      if (isColumn(term.left, "time")) bound(term.op, constant(term.right))
      else if (isColumn(term.right, "time")) bound(FLIP[term.op]!, constant(term.left))
      else if (term.op === "=" && (isColumn(term.left, idColumn) || isColumn(term.right, idColumn))) {
        const value = constant(isColumn(term.left, idColumn) ? term.right : term.left)
        if (typeof value === "string") narrow([value])
      }
    } else if (term._tag === "Between" && !term.not && isColumn(term.expr, "time")) {
      bound(">=", constant(term.low))
      bound("<=", constant(term.high))
    } else if (term._tag === "InList" && !term.not && isColumn(term.expr, idColumn)) {
      const values = term.items.map(constant)
      if (values.every((value) => typeof value === "string")) narrow(values as Array<string>)
    }
  }
  return { from, to, within }
}

/**
 * A SELECT's input for its plan. A SELECT runs more than once only as a view read under different
 * bounds: its plan reads what every run read (the widest bounds), and its WHERE does the rest.
 */
export const plannedInput = (before: PlannedInput | undefined, now: PlannedInput): PlannedInput => {
  if (before?._tag !== "Table" || now._tag !== "Table") return now
  const [a, b] = [before.hint, now.hint]
  return {
    ...now,
    hint: {
      from: Math.min(a.from, b.from),
      to: Math.max(a.to, b.to),
      within: a.within === undefined || b.within === undefined ? undefined : [...new Set([...a.within, ...b.within])]
    }
  }
}
