/**
 * SQL analytics run in ClickHouse: the `SqlEngine` of `@keymeter/sql` for the ClickHouse stores.
 * The executor binds each query (so it is refused, named and typed as on every store), then this
 * engine writes the bound plan as ClickHouse SQL (`internal/Translate`) over the stores' sources
 * for the caller's scope and runs it under the query's budgets as ClickHouse settings. A plan the
 * translation cannot write faithfully is declined, and the executor runs it over the stores' scans.
 */
import type { StorageError } from "@keymeter/core/Errors"
import { SqlEngine } from "@keymeter/sql/SqlEngine"
import type { Request } from "@keymeter/sql/SqlEngine"
import { narrowWithin } from "@keymeter/sql/SqlEngine"
import { InvalidQuery, QueryBudgetExceeded } from "@keymeter/sql/SqlError"
import type { Budget } from "@keymeter/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ClickhouseRatelimitStore from "./ClickhouseRatelimitStore.js"
import * as ClickhouseVerificationStore from "./ClickhouseVerificationStore.js"
import type { Connection } from "./internal/Connection.js"
import * as Database from "./internal/Database.js"
import { translate, Untranslatable } from "./internal/Translate.js"

export interface Options {
  /** The database the stores use (`ClickhouseVerificationStore.Options.url`). */
  readonly url: string
  /** As the rate-limit store keeps decisions (`ClickhouseRatelimitStore.Options`): older days are not read. */
  readonly decisionRetentionDays?: number | undefined
  /** How long one request may take (default 30 s); a query's time budget bounds it too. */
  readonly requestTimeoutMs?: number | undefined
}

/** ClickHouse's codes for a budget's setting exceeded. */
const BUDGET_CODES: Record<number, Budget> = {
  158: "scannedRows", // TOO_MANY_ROWS
  159: "time", // TIMEOUT_EXCEEDED
  160: "time", // TOO_SLOW
  241: "memory", // MEMORY_LIMIT_EXCEEDED
  396: "resultRows" // TOO_MANY_ROWS_OR_BYTES
}

/** Codes of a fault of the query's values, answered as the executor answers its own. */
const VALUE_FAULTS: Record<number, string> = {
  153: "division by zero", // ILLEGAL_DIVISION
  6: "a value that cannot be read as a number", // CANNOT_PARSE_TEXT
  72: "a value that cannot be read as a number" // CANNOT_PARSE_NUMBER
}

const BUDGET_MESSAGES: Record<Budget, (request: Request) => string> = {
  time: (r) => `the query ran longer than its time budget (${r.limits.timeMs} ms)`,
  scannedRows: (r) => `the query reads more than its budget of ${r.limits.scannedRows} rows`,
  resultRows: (r) => `the answer has more than ${r.limits.resultRows} rows: add a LIMIT or group more coarsely`,
  memory: (r) => `the query holds more than its memory budget of ${Math.round(r.limits.memoryBytes / 1048576)} MiB`
}

/** The engine over the database `options.url` names. */
export const make = (options: Options) =>
  Effect.gen(function*() {
    const db = yield* Database.connect(options)
    const retentionDays = Math.max(
      0,
      options.decisionRetentionDays ?? ClickhouseRatelimitStore.DEFAULT_DECISION_RETENTION_DAYS
    )
    return SqlEngine.of({ run: (request) => run(db, retentionDays, request) })
  })

/** The engine as a layer. */
export const layer = (options: Options): Layer.Layer<SqlEngine, StorageError> => Layer.scoped(SqlEngine, make(options))

/**
 * The code of an exception the server raised: 18.16 words it "Code: 158, e.displayText() = …",
 * which the client does not parse (it expects the newer "Code: 158. DB::Exception: … (TYPE)").
 */
const serverCode = (cause: unknown): number | undefined => {
  const parsed = (cause as { code?: unknown } | undefined)?.code
  if (typeof parsed === "string" && /^\d+$/.test(parsed)) return Number(parsed)
  const message = (cause as { message?: unknown } | undefined)?.message
  const match = typeof message === "string" ? /^Code: (\d+)[,.]/.exec(message) : null
  return match === null ? undefined : Number(match[1])
}

const run = (db: Connection, retentionDays: number, request: Request) => {
  let text: string
  try {
    text = translate(request.plan, (table, hint) => {
      // The caller's scope, narrowed (never widened) by the bounds the query's WHERE implies.
      const scope = {
        workspaceId: request.workspaceId,
        within: narrowWithin(request.within, hint.within),
        from: hint.from,
        to: hint.to
      }
      return table.family === "verifications"
        ? ClickhouseVerificationStore.sourceText(scope)
        : ClickhouseRatelimitStore.sourceText(scope, request.now, retentionDays)
    })
  } catch (error) {
    if (error instanceof Untranslatable) return undefined
    throw error
  }
  const limits = request.limits
  return db.query(text, {
    readonly: 2,
    max_execution_time: Math.max(1, Math.ceil(limits.timeMs / 1000)),
    timeout_overflow_mode: "throw",
    max_rows_to_read: limits.scannedRows,
    read_overflow_mode: "throw",
    // One row past the budget is enough to refuse the answer; the rest is not sent.
    max_result_rows: limits.resultRows + 1,
    result_overflow_mode: "break",
    max_memory_usage: limits.memoryBytes
  }).pipe(
    Effect.catchTag(
      "StorageError",
      (error): Effect.Effect<never, StorageError | InvalidQuery | QueryBudgetExceeded> => {
        const code = serverCode(error.cause)
        const budget = code === undefined ? undefined : BUDGET_CODES[code]
        if (budget !== undefined) {
          return Effect.fail(new QueryBudgetExceeded({ budget, message: BUDGET_MESSAGES[budget](request) }))
        }
        const fault = code === undefined ? undefined : VALUE_FAULTS[code]
        if (fault !== undefined) return Effect.fail(new InvalidQuery({ message: `the query met ${fault}` }))
        return Effect.fail(error)
      }
    )
  )
}
