/**
 * keymeter SQL analytics: a ClickHouse-dialect SELECT subset over the public event tables, run
 * in-process over any store's scan, isolated to the caller's rows and bounded by budgets.
 */
export * as Ast from "./Ast.js"
export * as SqlAnalytics from "./SqlAnalytics.js"
export * as SqlEngine from "./SqlEngine.js"
export * as SqlError from "./SqlError.js"
export * as SqlQuery from "./SqlQuery.js"
export * as SqlRunner from "./SqlRunner.js"
export * as SqlWorker from "./SqlWorker.js"
export * as Tables from "./Tables.js"
