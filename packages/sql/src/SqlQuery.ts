/**
 * Runs one SQL query of the subset over one workspace's events: parse, bind against the public
 * tables of one family, execute under budgets. The rows come only through the given scans, which
 * the caller bounded to what its key may read; see the README's "SQL analytics" for the argument.
 */
import type { AggregationQuery, AggregationResult } from "@keymeter/core/Aggregation"
import type { QueryTooLarge, StorageError } from "@keymeter/core/Errors"
import type { RatelimitColumns, ScanScope, VerificationColumns } from "@keymeter/core/EventScan"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import type * as Ast from "./Ast.js"
import { constantValue } from "./internal/Compile.js"
import type { CountSource, Limits, Pause, Relation, ScanHint, Sources } from "./internal/Context.js"
import { BindFault, BudgetFault, Context, TooManyRows } from "./internal/Context.js"
import * as CountedReads from "./internal/CountedReads.js"
import { ratelimitCounts, verificationCounts } from "./internal/Counts.js"
import { execute } from "./internal/Executor.js"
import { ParseError } from "./internal/ExpressionParser.js"
import { parse as parseText } from "./internal/Parser.js"
import { QueryFault } from "./internal/Values.js"
import type { PlannedSelect, SqlEngine } from "./SqlEngine.js"
import { narrowWithin } from "./SqlEngine.js"
import { InvalidQuery, placeOf, QueryBudgetExceeded } from "./SqlError.js"
import type { Family, Type } from "./Tables.js"

export type { Limits } from "./internal/Context.js"

/** Budgets when none are configured. */
export const DEFAULT_LIMITS: Limits = {
  timeMs: 10_000,
  scannedRows: 100_000_000,
  resultRows: 10_000,
  memoryBytes: 256 * 1024 * 1024
}

/** A scan of one family's raw events for a scope (a store's `scan`). */
export type Scan<A> = (scope: ScanScope) => Effect.Effect<ReadonlyArray<A>, StorageError | QueryTooLarge>

export interface Options {
  readonly family: Family
  readonly workspaceId: string
  /** Api (namespace) ids the caller may read; undefined: all of the workspace's. */
  readonly within: ReadonlyArray<string> | undefined
  readonly verifications: Scan<VerificationColumns>
  readonly ratelimits: Scan<RatelimitColumns>
  /**
   * Bytes a scanned row holds while the query runs, where the store builds its batches (its
   * `scanRowBytes`): counted against the memory budget before the scan reads. Absent: 0.
   */
  readonly rowBytes?:
    | { readonly verifications?: number | undefined; readonly ratelimits?: number | undefined }
    | undefined
  readonly limits: Limits
  /** Unix ms that `now()` reads. */
  readonly now: number
  /** A store that runs queries itself: it gets each query's plan first (see `SqlEngine`). */
  readonly engine?: SqlEngine["Type"] | undefined
  /**
   * The stores' counts, read in place of events by the SELECTs they answer the same (the stores'
   * `aggregate` and `scanCountsFrom`). Absent: every SELECT reads events.
   */
  readonly counts?: {
    readonly verifications?: Counts | undefined
    readonly ratelimits?: Counts | undefined
    /** Most events a store counts in one step (default: as many as a step's time allows). */
    readonly partEvents?: number | undefined
  } | undefined
}

/** A store's counts, as SQL analytics read them (see `Options.counts`). */
export interface Counts {
  readonly aggregate: (query: AggregationQuery) => Effect.Effect<AggregationResult, StorageError | QueryTooLarge>
  /** From when on its counts are of exactly the events its scan reads. */
  readonly from: Effect.Effect<number>
  /** Whether `aggregate` sums spent credits when asked (`AggregationQuery.sumCredits`). */
  readonly sumsCredits?: boolean | undefined
  /** The apis (namespaces) of a workspace it counts: a query over all of them reads each one's. */
  readonly within?: ((workspaceId: string) => Effect.Effect<ReadonlyArray<string>>) | undefined
}

/** A store's counts, where it keeps them for SQL analytics (`scanCountsFrom`). */
export const countsOf = (store: {
  readonly aggregate: Counts["aggregate"]
  readonly scanCountsFrom?: Effect.Effect<number> | undefined
  readonly sumsCredits?: boolean | undefined
  readonly countedIn?: ((workspaceId: string) => Effect.Effect<ReadonlyArray<string>>) | undefined
}): Counts | undefined =>
  store.scanCountsFrom === undefined ? undefined : {
    aggregate: store.aggregate,
    from: store.scanCountsFrom,
    sumsCredits: store.sumsCredits === true,
    within: store.countedIn
  }

/** The store ports' parts a query reads (`VerificationStore`, `RatelimitStore` as core declares them). */
type ScanStore<A> = Parameters<typeof countsOf>[0] & {
  readonly scan?: Scan<A> | undefined
  readonly scanRowBytes?: number | undefined
}

/**
 * What {@link run} reads of the two stores: their scans (a store without one fails the query as a
 * defect), the bytes of a scanned row, and their counts. One place for every caller (the service,
 * SQLite's worker), so each runs a query over the same reads.
 */
export const storesOf = (
  verifications: ScanStore<VerificationColumns>,
  ratelimits: ScanStore<RatelimitColumns>
): Pick<Options, "verifications" | "ratelimits" | "rowBytes" | "counts"> => ({
  verifications: verifications.scan ?? noScan,
  ratelimits: ratelimits.scan ?? noScan,
  rowBytes: { verifications: verifications.scanRowBytes, ratelimits: ratelimits.scanRowBytes },
  counts: { verifications: countsOf(verifications), ratelimits: countsOf(ratelimits) }
})

const noScan = (): Effect.Effect<never> => Effect.die(new Error("this server's store cannot run SQL analytics"))

/** One column of an answer. */
export interface AnswerColumn {
  readonly name: string
  readonly type: Type | "Null"
}

/** An answer: its columns, and its rows as objects keyed by column name. */
export interface Answer {
  readonly columns: ReadonlyArray<AnswerColumn>
  readonly rows: ReadonlyArray<Record<string, unknown>>
  /**
   * The rows as JSON, UTF-8 (`JSON.stringify(rows)`), when a runner encoded them on its thread for
   * a caller that writes them out as JSON (`Request.json`): `rows` is then decoded from it when
   * first read, with JSON's values (NaN and Infinity as null).
   */
  readonly json?: Uint8Array | undefined
}

/**
 * Parses a query, or fails with InvalidQuery naming the fault and its place. The syntax trees of
 * recent texts are kept by the parser; binding, and its refusals, run every time.
 */
export const parse = (text: string): Effect.Effect<Ast.Query, InvalidQuery> =>
  Effect.try({
    try: () => parseText(text),
    catch: (error) => toInvalid(text, error)
  })

const toInvalid = (text: string, error: unknown): InvalidQuery => {
  if (error instanceof ParseError || error instanceof BindFault || error instanceof QueryFault) {
    const at = error instanceof ParseError ? error.at : error.at
    return new InvalidQuery({
      message: at === undefined ? error.message : `${error.message} (${placeOf(text, at)})`,
      position: at
    })
  }
  // The parser bounds nesting well below the stack; this is the last guard.
  if (error instanceof RangeError) return new InvalidQuery({ message: "the query nests too deeply" })
  throw error
}

/** A scan's failure, carried through the executor's promises. */
class ScanFailure {
  constructor(readonly error: StorageError) {}
}

/** Runs a query: its answer, or why not (never a partial answer). */
export const run = (
  text: string,
  options: Options
): Effect.Effect<Answer, InvalidQuery | QueryBudgetExceeded | StorageError> =>
  Effect.gen(function*() {
    if (text.length > 100_000) {
      return yield* new InvalidQuery({ message: "the query is longer than 100,000 characters" })
    }
    const query = yield* parse(text)
    if (options.engine !== undefined) {
      const answer = yield* runOnEngine(text, query, options, options.engine)
      if (answer !== undefined) return answer
    }
    const runtime = yield* Effect.runtime<never>()
    const runExit = Runtime.runPromiseExit(runtime)
    const runSync = Runtime.runSyncExit(runtime)
    const awaitFiber = Runtime.runPromise(runtime)
    /**
     * A store's exit, at once where it answers without waiting, else once the fiber it went on
     * waiting in ends (as a promise's run would have it): for reads of counts, each sized to a step,
     * a fiber run to its end on its own costs tens of microseconds of a query of hundreds. Scans run
     * as promises: what they do between their pauses the runtime may break up.
     */
    const exitNow = <A>(
      effect: Effect.Effect<A, StorageError | QueryTooLarge>
    ): Exit.Exit<A, StorageError | QueryTooLarge> | Promise<Exit.Exit<A, StorageError | QueryTooLarge>> => {
      const exit = runSync(effect)
      if (Exit.isFailure(exit)) {
        const defect = Cause.dieOption(exit.cause)
        if (Option.isSome(defect) && Runtime.isAsyncFiberException(defect.value)) {
          return awaitFiber(Fiber.await(defect.value.fiber as Fiber.Fiber<A, StorageError | QueryTooLarge>))
        }
      }
      return exit
    }
    /** A store's answer; a scope over its row budget rejects with TooManyRows. */
    const answer = <A>(exit: Exit.Exit<A, StorageError | QueryTooLarge>): A => {
      if (Exit.isSuccess(exit)) return exit.value
      const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
      if (failure?._tag === "QueryTooLarge") throw new TooManyRows()
      if (failure !== undefined) throw new ScanFailure(failure)
      // The query's own pause stopped the read (its time budget).
      const defect = Cause.dieOption(exit.cause)
      if (Option.isSome(defect) && defect.value instanceof BudgetFault) throw defect.value
      throw new Error("the store failed")
    }
    const outcome = async <A>(effect: Effect.Effect<A, StorageError | QueryTooLarge>): Promise<A> =>
      answer(await runExit(effect))
    const countsRead = async <A>(effect: Effect.Effect<A, StorageError | QueryTooLarge>): Promise<A> =>
      answer(await exitNow(effect))
    const scan = <A>(scanner: Scan<A>) => (hint: ScanHint, maxRows: number, pause: Pause): Promise<ReadonlyArray<A>> =>
      // The caller's scope bounds every scan; the query's hint can only narrow it.
      outcome(scanner({
        workspaceId: options.workspaceId,
        within: narrowWithin(options.within, hint.within),
        from: hint.from,
        to: hint.to,
        maxRows,
        pause: Effect.promise(pause)
      }))
    const reads: CountedReads.Reads = {
      workspaceId: options.workspaceId,
      within: options.within,
      maxPart: Math.max(1, options.counts?.partEvents ?? Infinity),
      countsRead
    }
    const counts: Sources["counts"] = {
      verifications: CountedReads.countSource(reads, options.counts?.verifications, verificationCounts) as
        | CountSource<VerificationColumns>
        | undefined,
      ratelimits: CountedReads.countSource(reads, options.counts?.ratelimits, ratelimitCounts) as
        | CountSource<RatelimitColumns>
        | undefined
    }
    const context = new Context(
      {
        workspaceId: options.workspaceId,
        verifications: scan(options.verifications),
        ratelimits: scan(options.ratelimits),
        rowBytes: {
          verifications: options.rowBytes?.verifications ?? 0,
          ratelimits: options.rowBytes?.ratelimits ?? 0
        },
        counts
      },
      options.family,
      options.limits,
      options.now
    )
    const relation = yield* executeIn(text, context, query)
    return yield* answerOf(relation, options.limits)
  })

const executeIn = (text: string, context: Context, query: Ast.Query) =>
  Effect.tryPromise({
    try: () => execute(context, query),
    catch: (error): InvalidQuery | QueryBudgetExceeded | StorageError => {
      if (error instanceof BudgetFault) {
        return new QueryBudgetExceeded({ budget: error.budget, message: error.message })
      }
      if (error instanceof ScanFailure) return error.error
      return toInvalid(text, error)
    }
  })

/** Scans that find nothing: a run over them binds the query (names, types, every refusal) only. */
const NO_ROWS: Sources = {
  workspaceId: "",
  verifications: async () => [],
  ratelimits: async () => [],
  rowBytes: { verifications: 0, ratelimits: 0 }
}

/**
 * The query bound over no rows, then run by the engine: its answer, or undefined when the engine
 * declines it. The binding is the executor's, so names, types and refusals are the same wherever
 * the query runs.
 */
const runOnEngine = (text: string, query: Ast.Query, options: Options, engine: SqlEngine["Type"]) =>
  Effect.gen(function*() {
    const selects = new Map<Ast.Select, PlannedSelect>()
    const context = new Context(
      { ...NO_ROWS, workspaceId: options.workspaceId },
      options.family,
      options.limits,
      options.now,
      () => performance.now(),
      selects
    )
    const bound = yield* executeIn(text, context, query)
    const running = engine.run({
      plan: {
        query,
        selects,
        width: bound.names.length,
        constant: (expr) => constantValue(context, expr)
      },
      family: options.family,
      workspaceId: options.workspaceId,
      within: options.within,
      now: options.now,
      limits: options.limits
    })
    if (running === undefined) return undefined
    const rows = yield* running
    return yield* answerOf(
      { ...bound, rows: rows.map((row) => bound.types.map((type, k) => valueOf(type, row[k]))) },
      options.limits
    )
  })

/** A value an engine returned, as the executor would hold it. */
const valueOf = (type: string, value: unknown): any => {
  if (value === null || value === undefined) return null
  if (type === "Int" || type === "Float") return typeof value === "number" ? value : Number(value)
  return value
}

/** The answer of a relation, or why it cannot be one. */
const answerOf = (relation: Relation, limits: Limits) =>
  Effect.gen(function*() {
    if (relation.rows.length > limits.resultRows) {
      return yield* new QueryBudgetExceeded({
        budget: "resultRows",
        message: `the answer has more than ${limits.resultRows} rows: add a LIMIT or group more coarsely`
      })
    }
    const names = relation.names
    const seen = new Set<string>()
    for (const name of names) {
      if (seen.has(name)) {
        return yield* new InvalidQuery({ message: `two columns are named ${name}: give them distinct aliases` })
      }
      seen.add(name)
    }
    const rows = relation.rows.map((row) => {
      const out: Record<string, unknown> = {}
      for (let k = 0; k < names.length; k++) {
        const value = row[k]
        out[names[k]!] = typeof value === "number" && !Number.isFinite(value) ? null : value
      }
      return out
    })
    return {
      columns: names.map((name, k) => ({ name, type: relation.types[k] as Type | "Null" })),
      rows
    }
  })
