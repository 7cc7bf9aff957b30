/**
 * A store that runs queries of the subset itself (ClickHouse) instead of handing the executor raw
 * rows. The executor still decides what a query means: it parses and binds it first (every name,
 * type and refusal is its own), and hands the engine a {@link Plan}, the query with each SELECT's
 * names resolved, input named and bounds computed. The engine runs the plan over sources it builds
 * from the caller's scope alone (never from query text), or declines a plan it cannot run as the
 * subset means it; the executor then runs that query in-process.
 */
import type { StorageError } from "@keymeter/core/Errors"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Ast from "./Ast.js"
import type { Limits, ScanHint } from "./internal/Context.js"
import type { Value, VType } from "./internal/Values.js"
import type { InvalidQuery, QueryBudgetExceeded } from "./SqlError.js"
import type { Family, PublicTable } from "./Tables.js"

export type { ScanHint } from "./internal/Context.js"
export type { Value, VType } from "./internal/Values.js"

/** What a SELECT reads. */
export type PlannedInput =
  | { readonly _tag: "None" }
  /** A family's raw table, narrowed by the SELECT's WHERE to `hint` (the caller's scope narrows it further). */
  | { readonly _tag: "Table"; readonly table: PublicTable; readonly hint: ScanHint }
  /** A subquery, a CTE's query or a rollup's view (itself planned). */
  | { readonly _tag: "Query"; readonly query: Ast.Query }

/** A SELECT as the executor bound it: aliases and positions resolved, `*` expanded. */
export interface PlannedSelect {
  readonly input: PlannedInput
  /** The input's column names in order; a name refers to the last column of that name. */
  readonly inputNames: ReadonlyArray<string>
  readonly distinct: boolean
  readonly items: ReadonlyArray<Ast.Expr>
  readonly where: Ast.Expr | undefined
  readonly groupBy: ReadonlyArray<Ast.Expr>
  readonly having: Ast.Expr | undefined
  readonly orderBy: ReadonlyArray<{ readonly expr: Ast.Expr; readonly descending: boolean }>
  readonly limit: number | undefined
  readonly offset: number
  /** Whether it aggregates (GROUP BY, HAVING, or an aggregate anywhere). */
  readonly aggregated: boolean
  /** The type of one of its expressions (`Interval` for an INTERVAL), as the executor bound it. */
  readonly typeOf: (expr: Ast.Expr) => VType | undefined
}

/** A bound query: its text's tree, and each SELECT in it (views' included) as bound. */
export interface Plan {
  readonly query: Ast.Query
  readonly selects: ReadonlyMap<Ast.Select, PlannedSelect>
  /** Columns of the answer. */
  readonly width: number
  /** The value of an expression without columns (`now()` as the query sees it), else undefined. */
  readonly constant: (expr: Ast.Expr) => Value | undefined
}

/** One query for an engine: the plan and the caller's scope, under the query's budgets. */
export interface Request {
  readonly plan: Plan
  readonly family: Family
  readonly workspaceId: string
  /** Api (namespace) ids the caller may read; undefined: all of the workspace's. */
  readonly within: ReadonlyArray<string> | undefined
  readonly now: number
  readonly limits: Limits
}

export class SqlEngine extends Context.Tag("@keymeter/sql/SqlEngine")<SqlEngine, {
  /**
   * The answer's rows (values in column order, as the engine returns them), or undefined when
   * this engine declines the plan.
   */
  readonly run: (
    request: Request
  ) =>
    | Effect.Effect<ReadonlyArray<ReadonlyArray<unknown>>, InvalidQuery | QueryBudgetExceeded | StorageError>
    | undefined
}>() {}

/** The ids a scan may read: the caller's, narrowed (never widened) by those the query names. */
export const narrowWithin = (
  caller: ReadonlyArray<string> | undefined,
  named: ReadonlyArray<string> | undefined
): ReadonlyArray<string> | undefined =>
  caller === undefined ? named : named === undefined ? caller : named.filter((id) => caller.includes(id))
