/**
 * Why a SQL analytics query was refused. Neither is ever a server fault: the wire answers 400 for
 * {@link InvalidQuery} and 422 for {@link QueryBudgetExceeded}, with the message as written here.
 */
import * as Schema from "effect/Schema"

/**
 * The query is not in the supported subset, names something that does not exist or may not be
 * read, or does not type. The message names the construct and, when known, its line and column.
 */
export class InvalidQuery extends Schema.TaggedError<InvalidQuery>()("InvalidQuery", {
  message: Schema.String,
  /** Offset in the query text (0-based), when the fault has a place. */
  position: Schema.optional(Schema.Number)
}) {}

/** Budgets a query runs under (see `Budgets`). */
export const Budgets = ["time", "scannedRows", "resultRows", "memory"] as const

/** One budget. */
export type Budget = typeof Budgets[number]

/** The query needed more than one of its budgets allow; nothing of its answer is returned. */
export class QueryBudgetExceeded extends Schema.TaggedError<QueryBudgetExceeded>()("QueryBudgetExceeded", {
  budget: Schema.Literal(...Budgets),
  message: Schema.String
}) {}

/** "line L, column C" of an offset in `text` (both 1-based). */
export const placeOf = (text: string, position: number): string => {
  let line = 1
  let column = 1
  for (let i = 0; i < position && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++
      column = 1
    } else column++
  }
  return `line ${line}, column ${column}`
}
