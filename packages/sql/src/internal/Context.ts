/**
 * A query's run: what it may read (`Sources`, built by the caller for one workspace and the apis it
 * may read), its budgets, clock and pauses (`Context`), and the shapes that inputs, compiled
 * expressions and rows share.
 */
import type { RatelimitColumns, VerificationColumns } from "@keymeter/core/EventScan"
import type { Outcome } from "@keymeter/core/Verification"
import type * as Ast from "../Ast.js"
import type { PlannedInput, PlannedSelect } from "../SqlEngine.js"
import type { Budget } from "../SqlError.js"
import type { Family } from "../Tables.js"
import { giveWay } from "./Lane.js"
import type { Value, VType } from "./Values.js"

/** What a scan may be narrowed to by the query (the caller's scope still bounds it). */
export interface ScanHint {
  readonly from: number
  readonly to: number
  /** Api (namespace) ids the query names; undefined: it names none. */
  readonly within: ReadonlyArray<string> | undefined
}

/**
 * Where a query's rows come from: one workspace's, already limited to what the caller may read. A
 * scan holding more than `maxRows` rows rejects with {@link TooManyRows}.
 */
export interface Sources {
  readonly workspaceId: string
  /** `pause` is called between the steps of a long read: the query's pause (see `Context.pause`). */
  readonly verifications: (hint: ScanHint, maxRows: number, pause: Pause) => Promise<ReadonlyArray<VerificationColumns>>
  readonly ratelimits: (hint: ScanHint, maxRows: number, pause: Pause) => Promise<ReadonlyArray<RatelimitColumns>>
  /**
   * Bytes each scanned row holds while the query runs, for stores whose scan builds its batches
   * (SQLite pages, ClickHouse's answer); 0 where batches are views of rows the store keeps anyway.
   */
  readonly rowBytes: { readonly verifications: number; readonly ratelimits: number }
  /**
   * The store's counts of events, where it keeps them (see `countsInput`): rows of events equal in
   * what `shape` keeps, each with how many it stands for, or undefined when the store cannot count
   * this scope. Absent: every SELECT reads raw events.
   */
  readonly counts?: {
    readonly verifications?: CountSource<VerificationColumns> | undefined
    readonly ratelimits?: CountSource<RatelimitColumns> | undefined
  } | undefined
}

/**
 * Rows of counted events: row `i` stands for `weight[i]` equal events. With `byOutcome`, a row
 * stands for events that differ in their outcome only (see `CountShape.outcomes`): `weight[i]` is
 * their total and `byOutcome[i * OUTCOMES + o]` those of outcome `o`; the row's outcome column
 * reads nothing.
 */
export interface Weighted {
  readonly weight: ArrayLike<number>
  readonly byOutcome?: Float64Array | undefined
}

/**
 * What counted rows must tell apart for a SELECT to read them rather than events: the time bucket
 * (or none), and whether the key, the identity (the override for decisions) and the tag set.
 */
export interface CountShape {
  readonly timeUnit: "hour" | "day" | undefined
  readonly key: boolean
  readonly identity: boolean
  /**
   * "tags": by tag set; "tag": by single tag, a row's tags being that one (when the SELECT reads
   * tags only as `arrayJoin(tags)`, which gives the same rows).
   */
  readonly tags: "tags" | "tag" | undefined
  /** By identity, and only events with one are read (the SELECT keeps `identity_id != ''` only). */
  readonly identified?: boolean | undefined
  /**
   * Rows carry the spent credits of their events, summed (`spent_credits` is a total, read only by
   * `sum`/`sumIf`, which add it once: see `InputColumn.total`).
   */
  readonly credits?: boolean | undefined
  /**
   * "together": a row holds the events of every outcome of its group (`Weighted.byOutcome`): the
   * SELECT reads the outcome (`passed` for decisions) only inside counts and sums of it, which
   * weigh each outcome by its events (see `outcomesTogether`).
   */
  readonly outcomes?: "together" | undefined
  /**
   * The SELECT keeps only its first `limit` groups by this counter, and a group's counts are all
   * it reads of it: a read that answers in one step may return only the groups that can make
   * them (those and every group tied with the last, as `AggregationResult.groups` describes).
   */
  readonly top?: {
    readonly orderBy: "total" | Outcome
    readonly order: "asc" | "desc"
    readonly limit: number
  } | undefined
}

/** A store's counts for a hint and a shape (see {@link Sources.counts}). */
export type CountSource<A> = (
  hint: ScanHint,
  shape: CountShape,
  maxRows: number,
  pause: Pause,
  /** Takes each batch as it is read (the source keeps none). */
  take: (batch: A & Weighted) => Promise<void>
) => Promise<"read" | undefined>

/** Lets other work run between the steps of a read; rejects when the query is past its time. */
export type Pause = () => Promise<void>

/** A scan's scope held more rows than the scan was allowed. */
export class TooManyRows {}

export interface Limits {
  /** Milliseconds a query may run, its own work only (not the time it gives way to other work). */
  readonly timeMs: number
  /** Rows all its scans together may read. */
  readonly scannedRows: number
  /** Rows its answer may have. */
  readonly resultRows: number
  /** Bytes it may hold at once (estimated: groups, states, rows kept). */
  readonly memoryBytes: number
}

/** A budget exceeded, as thrown inside the executor. */
export class BudgetFault {
  constructor(readonly budget: Budget, readonly message: string) {}
}

/** A binding or typing fault at a place. */
export class BindFault {
  constructor(readonly message: string, readonly at: number | undefined) {}
}

/** A materialized result. */
export interface Relation {
  readonly names: ReadonlyArray<string>
  readonly types: ReadonlyArray<VType>
  readonly rows: Array<Array<Value>>
}

/**
 * A SELECT compiled: its output types, and `produce`, which reads its input and answers its rows
 * (the outputs, then the ORDER BY values).
 */
export interface Produced {
  readonly outTypes: Array<VType>
  readonly produce: () => Promise<Array<Array<Value>>>
}

/** Bytes a kept value is counted as (for the memory budget). */
const CELL_BYTES = 16

export interface Env {
  b: any
  i: number
  /** How many equal events the row stands for: 1, but for rows of counts (see `countsInput`). */
  w: number
  /** The batch's events by outcome, when its rows hold every outcome (`Weighted.byOutcome`). */
  o: Float64Array | undefined
  row: Array<Value>
  elem: Value
  /** The group (its number) an expression after GROUP BY is evaluated for. */
  g: number
}

export type Eval = (env: Env) => Value

export interface Compiled {
  readonly type: VType
  readonly eval: Eval
  /** No column, no aggregate, no arrayJoin: foldable. */
  readonly constant: boolean
  /** For a dictionary column: its value's code (see `InputColumn.code`), cheaper to group by. */
  readonly code?: Eval | undefined
}

export interface InputColumn {
  readonly name: string
  readonly type: VType
  readonly get: Eval
  /** A number standing for the value, the same for equal values within the query (dictionary columns). */
  readonly code?: Eval | undefined
  /**
   * On a row of counts, the value is the total over the events the row stands for (not each
   * event's): `sum` and `sumIf` add it once rather than weighed.
   */
  readonly total?: boolean | undefined
}

/** The rows a SELECT reads. */
export interface Input {
  readonly columns: ReadonlyArray<InputColumn>
  readonly qualifiers: ReadonlySet<string>
  /** Calls `visit` with `env` positioned at each row. */
  readonly run: (env: Env, visit: () => void) => Promise<void>
  /** What it is, for a plan. */
  readonly planned: PlannedInput
  /**
   * Where its rows hold the events of every outcome (`Weighted.byOutcome`): the column that reads
   * the outcome, and a row of each outcome `o` (`rows[o]`, read at index 0), on which an
   * aggregate of that column finds what one event of that outcome adds.
   */
  readonly outcomes?: { readonly column: string; readonly rows: ReadonlyArray<unknown> } | undefined
}

export const MAX_DEPTH = 64

/**
 * Longest a query holds the event loop between pauses, in ms: verifications and limits are served
 * in between (see `Lane`); a request that arrives during a slice waits for its end, so the slice
 * is short (3 ms raised the hot path's p99 beside heavy queries more than 1 ms does). Checked every
 * {@link SLICE_CHECK} + 1 rows (a clock read per row would cost more; a row making a new group of a
 * heavy GROUP BY costs 10 µs, and 1,024 of them held the loop for 10 ms).
 */
export const SLICE_MS = 1

export const SLICE_CHECK = 127

const NOT_DUE: Promise<void> = Promise.resolve()

/** The query's run: its budgets, clock, CTEs and the subquery results computed before rows flow. */
export class Context {
  /** The type of every expression compiled, when a plan is wanted. */
  readonly types: Map<Ast.Expr, VType> | undefined
  /** The same by canonical text, for the SELECT being compiled. */
  texts: Map<string, VType> | undefined = undefined
  /** Ms the query has run, its pauses not counted: what the time budget bounds. */
  private worked = 0
  private scanned = 0
  private cells = 0
  private ticks = 0
  private sliceStart: number
  constructor(
    readonly sources: Sources,
    readonly family: Family,
    readonly limits: Limits,
    /** Unix ms the query sees as `now()`. */
    readonly now: number,
    private readonly clock: () => number = () => performance.now(),
    /** Where each SELECT is recorded as bound, when a plan is wanted (see `SqlEngine`). */
    readonly plan: Map<Ast.Select, PlannedSelect> | undefined = undefined
  ) {
    this.types = plan === undefined ? undefined : new Map()
    this.sliceStart = clock()
  }

  /** Whether the query has held the event loop for a whole slice. */
  due(): boolean {
    return this.clock() - this.sliceStart >= SLICE_MS
  }

  /** Called once per row visited: checks the clock now and then. */
  tick(): void {
    if ((++this.ticks & 4095) === 0) this.checkTime()
  }

  checkTime(): void {
    if (this.worked + this.clock() - this.sliceStart > this.limits.timeMs) {
      throw new BudgetFault("time", `the query ran longer than its time budget (${this.limits.timeMs} ms)`)
    }
  }

  /**
   * Lets other work run (verifications, limits, I/O): at least one turn of the event loop, longer
   * while other work waits (see `Lane`). The time budget counts the slices only.
   */
  async pause(): Promise<void> {
    const ran = this.clock() - this.sliceStart
    this.worked += ran
    this.checkTime()
    await giveWay(ran)
    this.sliceStart = this.clock()
  }

  /**
   * {@link pause} as a function of its own, for the stores' reads, once the slice is due: a store
   * calls it between short steps (SQLite's pages), and giving way after each of them cost more
   * than the steps (heavy queries beside steady requests took ~3% of the loop, not their share).
   */
  readonly pauser: Pause = () => this.due() ? this.pause() : NOT_DUE

  /** Rows a scan may still read. */
  get scanLeft(): number {
    return Math.max(0, this.limits.scannedRows - this.scanned)
  }

  /** Bytes the query may still hold. */
  get memoryLeft(): number {
    return Math.max(0, this.limits.memoryBytes - this.cells * CELL_BYTES)
  }

  memoryFault(): BudgetFault {
    return new BudgetFault(
      "memory",
      `the query holds more than its memory budget of ${Math.round(this.limits.memoryBytes / 1048576)} MiB`
    )
  }

  scannedRows(n: number): void {
    this.scanned += n
    if (this.scanned > this.limits.scannedRows) {
      throw new BudgetFault("scannedRows", `the query reads more than its budget of ${this.limits.scannedRows} rows`)
    }
  }

  /** Values held (rows kept, groups and their states); `bytes` for those counted by size. */
  hold(cells: number, bytes = 0): void {
    this.cells += cells + bytes / CELL_BYTES
    if (this.cells * CELL_BYTES > this.limits.memoryBytes) throw this.memoryFault()
  }

  release(cells: number): void {
    this.cells = Math.max(0, this.cells - cells)
  }
}

export const emptyEnv = (): Env => ({ b: undefined, i: 0, w: 1, o: undefined, row: [], elem: null, g: -1 })
