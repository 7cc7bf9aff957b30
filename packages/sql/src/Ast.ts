/**
 * The syntax tree of keymeter's SQL subset. Every node keeps `at`, the offset in the query text
 * where it starts, so errors can name a line and column.
 */

export type Expr =
  | Column
  | Literal
  | Interval
  | ArrayLiteral
  | Unary
  | Binary
  | Call
  | InList
  | InQuery
  | Like
  | Between
  | IsNull
  | Case

/** A column or an alias, optionally qualified by a table name or alias (`t.key_id`). */
export interface Column {
  readonly _tag: "Column"
  readonly at: number
  readonly table: string | undefined
  readonly name: string
}

export interface Literal {
  readonly _tag: "Literal"
  readonly at: number
  /** Numbers keep whether they were written as integers. */
  readonly value: number | string | null
  readonly integer: boolean
}

export type IntervalUnit = "SECOND" | "MINUTE" | "HOUR" | "DAY" | "WEEK" | "MONTH" | "QUARTER" | "YEAR"

export interface Interval {
  readonly _tag: "Interval"
  readonly at: number
  readonly value: Expr
  readonly unit: IntervalUnit
}

export interface ArrayLiteral {
  readonly _tag: "ArrayLiteral"
  readonly at: number
  readonly items: ReadonlyArray<Expr>
}

export interface Unary {
  readonly _tag: "Unary"
  readonly at: number
  readonly op: "-" | "NOT"
  readonly operand: Expr
}

export type BinaryOp = "OR" | "AND" | "=" | "!=" | "<" | "<=" | ">" | ">=" | "+" | "-" | "*" | "/" | "%" | "||"

export interface Binary {
  readonly _tag: "Binary"
  readonly at: number
  readonly op: BinaryOp
  readonly left: Expr
  readonly right: Expr
}

/** A function call; `count(*)` has no arguments and `star`. */
export interface Call {
  readonly _tag: "Call"
  readonly at: number
  readonly name: string
  readonly args: ReadonlyArray<Expr>
  readonly distinct: boolean
  readonly star: boolean
}

export interface InList {
  readonly _tag: "InList"
  readonly at: number
  readonly expr: Expr
  readonly items: ReadonlyArray<Expr>
  readonly not: boolean
}

export interface InQuery {
  readonly _tag: "InQuery"
  readonly at: number
  readonly expr: Expr
  readonly query: Query
  readonly not: boolean
}

export interface Like {
  readonly _tag: "Like"
  readonly at: number
  readonly expr: Expr
  readonly pattern: Expr
  readonly not: boolean
  readonly caseInsensitive: boolean
}

export interface Between {
  readonly _tag: "Between"
  readonly at: number
  readonly expr: Expr
  readonly low: Expr
  readonly high: Expr
  readonly not: boolean
}

export interface IsNull {
  readonly _tag: "IsNull"
  readonly at: number
  readonly expr: Expr
  readonly not: boolean
}

export interface Case {
  readonly _tag: "Case"
  readonly at: number
  readonly operand: Expr | undefined
  readonly whens: ReadonlyArray<{ readonly when: Expr; readonly then: Expr }>
  readonly otherwise: Expr | undefined
}

/** What a SELECT reads: a table (public or a CTE's name) or a subquery. */
export type From =
  | { readonly _tag: "Table"; readonly at: number; readonly name: string; readonly alias: string | undefined }
  | { readonly _tag: "Subquery"; readonly at: number; readonly query: Query; readonly alias: string | undefined }

export interface SelectItem {
  readonly expr: Expr
  readonly alias: string | undefined
  /** The item's text as written (whitespace collapsed): the column's name when it has no alias. */
  readonly text: string
}

export interface OrderItem {
  readonly expr: Expr
  readonly descending: boolean
}

export interface Select {
  readonly _tag: "Select"
  readonly at: number
  readonly distinct: boolean
  readonly items: ReadonlyArray<SelectItem>
  readonly from: From | undefined
  readonly where: Expr | undefined
  readonly groupBy: ReadonlyArray<Expr>
  readonly having: Expr | undefined
  readonly orderBy: ReadonlyArray<OrderItem>
  readonly limit: Expr | undefined
  readonly offset: Expr | undefined
}

/**
 * `UNION ALL`, `UNION DISTINCT`; `EXCEPT` (or `EXCEPT ALL`): the left rows not found on the right,
 * duplicates kept, as ClickHouse answers it; `EXCEPT DISTINCT`: those rows once each.
 */
export interface SetOperation {
  readonly _tag: "SetOperation"
  readonly at: number
  readonly op: "UNION ALL" | "UNION DISTINCT" | "EXCEPT" | "EXCEPT DISTINCT"
  readonly left: Query
  readonly right: Query
}

export interface Cte {
  readonly at: number
  readonly name: string
  readonly query: Query
}

/** A query: its CTEs (visible to it and its subqueries) and its body. */
export interface Query {
  readonly _tag: "Query"
  readonly at: number
  readonly with: ReadonlyArray<Cte>
  readonly body: Select | SetOperation
}
