/**
 * Where a query of the subset may run instead of this event loop: a store that can read its
 * events from another thread (SQLite's file) provides a runner, which runs `SqlQuery.run` there,
 * over stores of its own on the same data, and hands the answer back. The answer is the one this
 * process would give; what changes is whose event loop and heap pay for it (the hot paths'
 * collector does not trace a heavy query's groups). A runner decides per query: it may decline
 * (undefined), and the query then runs here.
 */
import type { StorageError } from "@keymeter/core/Errors"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { Limits } from "./internal/Context.js"
import type { InvalidQuery, QueryBudgetExceeded } from "./SqlError.js"
import type { Answer } from "./SqlQuery.js"
import type { Family } from "./Tables.js"

/** One query, with the caller's scope and budgets, as `SqlQuery.run` takes them. */
export interface Request {
  readonly text: string
  readonly family: Family
  readonly workspaceId: string
  /** Api (namespace) ids the caller may read; undefined: all of the workspace's. */
  readonly within: ReadonlyArray<string> | undefined
  /** Unix ms that `now()` reads. */
  readonly now: number
  readonly limits: Limits
  /**
   * Whether the caller writes the rows out as JSON: a runner on another thread then hands them
   * back encoded (`Answer.json`), so this thread neither decodes them nor encodes them again.
   */
  readonly json?: boolean | undefined
}

export class SqlRunner extends Context.Tag("@keymeter/sql/SqlRunner")<SqlRunner, {
  /** The query's answer, run elsewhere, or undefined when it should run in this process. */
  readonly run: (
    request: Request
  ) => Effect.Effect<Answer, InvalidQuery | QueryBudgetExceeded | StorageError> | undefined
}>() {}
