/**
 * Runs a parsed query over the caller's rows. Names resolve against the public tables of one
 * family and the query's own CTEs and subqueries, nothing else: a table is read only through
 * `Sources`, which the caller built for one workspace and the apis (or namespaces) its key may
 * read. Expressions compile to closures once per SELECT; rows stream from scans batch by batch,
 * yielding the event loop every few milliseconds of work, under the query's budgets.
 */
import type { RatelimitColumns, VerificationColumns } from "@keymeter/core/EventScan"
import type { Outcome } from "@keymeter/core/Verification"
import { Outcomes } from "@keymeter/core/Verification"
import type * as Ast from "../Ast.js"
import type { PlannedInput, PlannedSelect } from "../SqlEngine.js"
import type { Budget } from "../SqlError.js"
import type { Family, PublicTable } from "../Tables.js"
import { OUTCOME_NAMES, TABLES } from "../Tables.js"
import type { Aggregate, State } from "./Functions.js"
import {
  AGGREGATES,
  likePattern,
  once,
  SCALARS,
  shift,
  SignatureError,
  SPECIAL,
  UNIT_MONTHS,
  UNIT_MS
} from "./Functions.js"
import { giveWay } from "./Lane.js"
import { PairIndex } from "./PairIndex.js"
import { parse } from "./Parser.js"
import type { IntervalValue, Value, VType } from "./Values.js"
import { compare, equal, isNumeric, keyOf, keyOfRow, QueryFault, truthy } from "./Values.js"

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

/** Rows of counted events: row `i` stands for `weight[i]` equal events. */
export interface Weighted {
  readonly weight: ArrayLike<number>
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

/** Bytes a kept value is counted as (for the memory budget). */
const CELL_BYTES = 16

interface Env {
  b: any
  i: number
  /** How many equal events the row stands for: 1, but for rows of counts (see `countsInput`). */
  w: number
  row: Array<Value>
  elem: Value
  /** The group (its number) an expression after GROUP BY is evaluated for. */
  g: number
}

type Eval = (env: Env) => Value

interface Compiled {
  readonly type: VType
  readonly eval: Eval
  /** No column, no aggregate, no arrayJoin: foldable. */
  readonly constant: boolean
  /** For a dictionary column: its value's code (see `InputColumn.code`), cheaper to group by. */
  readonly code?: Eval | undefined
}

interface InputColumn {
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
interface Input {
  readonly columns: ReadonlyArray<InputColumn>
  readonly qualifiers: ReadonlySet<string>
  /** Calls `visit` with `env` positioned at each row. */
  readonly run: (env: Env, visit: () => void) => Promise<void>
  /** What it is, for a plan. */
  readonly planned: PlannedInput
}

const MAX_DEPTH = 64

/**
 * Longest a query holds the event loop between pauses, in ms: verifications and limits are served
 * in between (see `Lane`). Checked every {@link SLICE_CHECK} rows (a clock read per row would cost
 * more).
 */
export const SLICE_MS = 3
const SLICE_CHECK = 1023

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

  /** {@link pause} as a function of its own, for the stores' reads. */
  readonly pauser: Pause = () => this.pause()

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

interface CteBinding {
  readonly query: Ast.Query
  readonly scope: Scope
  result: Promise<Relation> | undefined
}

/** Names visible to a query: its CTEs and those around it. */
class Scope {
  constructor(readonly ctes: ReadonlyMap<string, CteBinding>, readonly depth: number) {}
}

/** Runs a query. */
export const execute = (context: Context, query: Ast.Query): Promise<Relation> =>
  runQuery(context, query, new Scope(new Map(), 0), undefined)

const runQuery = async (
  context: Context,
  query: Ast.Query,
  outer: Scope,
  hint: ScanHint | undefined
): Promise<Relation> => {
  if (outer.depth > MAX_DEPTH) throw new BindFault(`the query nests more than ${MAX_DEPTH} levels deep`, query.at)
  let scope = outer
  if (query.with.length > 0) {
    const ctes = new Map(outer.ctes)
    for (const cte of query.with) {
      const key = cte.name.toLowerCase()
      if (query.with.filter((other) => other.name.toLowerCase() === key).length > 1) {
        throw new BindFault(`the CTE ${cte.name} is defined twice`, cte.at)
      }
      // A CTE sees the CTEs before it (and the outer ones).
      ctes.set(key, { query: cte.query, scope: new Scope(new Map(ctes), outer.depth + 1), result: undefined })
    }
    scope = new Scope(ctes, outer.depth + 1)
  }
  return runBody(context, query.body, scope, hint)
}

const runBody = async (
  context: Context,
  body: Ast.Select | Ast.SetOperation,
  scope: Scope,
  hint: ScanHint | undefined
): Promise<Relation> => {
  if (body._tag === "Select") return runSelect(context, body, scope, hint)
  const left = await runQuery(context, body.left, scope, undefined)
  const right = await runQuery(context, body.right, scope, undefined)
  if (left.names.length !== right.names.length) {
    throw new BindFault(
      `${body.op} needs the same number of columns on both sides (${left.names.length} and ${right.names.length})`,
      body.at
    )
  }
  const types = left.types.map((type, i) => {
    const other = right.types[i]!
    if (type === "Null") return other
    if (other === "Null" || type === other) return type
    if (isNumeric(type) && isNumeric(other)) return "Float" as VType
    throw new BindFault(`${body.op} column ${i + 1} is ${type} on the left and ${other} on the right`, body.at)
  })
  let rows: Array<Array<Value>>
  if (body.op === "UNION ALL") rows = left.rows.concat(right.rows)
  else if (body.op === "UNION DISTINCT") rows = distinctRows(left.rows.concat(right.rows))
  else {
    const exclude = new Set(right.rows.map(keyOfRow))
    rows = left.rows.filter((row) => !exclude.has(keyOfRow(row)))
    if (body.op === "EXCEPT DISTINCT") rows = distinctRows(rows)
  }
  return { names: left.names, types, rows }
}

const distinctRows = (rows: Array<Array<Value>>): Array<Array<Value>> => {
  const seen = new Set<string>()
  return rows.filter((row) => {
    const key = keyOfRow(row)
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

// ---------------------------------------------------------------------------------------------
// Inputs

const tableNotFound = (name: string, family: Family, at: number): BindFault => {
  const names = [...TABLES.values()].filter((table) => table.family === family).map((table) => table.name)
  const other = TABLES.get(name.toLowerCase())
  if (other !== undefined) {
    return new BindFault(
      `the table ${name} holds ${other.family}: this route reads ${family} only (${names.join(", ")})`,
      at
    )
  }
  return new BindFault(`unknown table ${name}: queries may read ${names.join(", ")}`, at)
}

interface Dict {
  readonly codes: ArrayLike<number>
  readonly values: ReadonlyArray<unknown>
}

/**
 * Codes of a dictionary column that hold across batches: each batch's dictionary code is mapped,
 * once per distinct value, to a number of this query's own. Only the last dictionary's map is
 * kept: a store's batches share one, and each part of counts has its own (kept, they would pile
 * up for the collector to copy).
 */
const interner = (pick: (batch: any) => Dict): Eval => {
  const ids = new Map<unknown, number>()
  let lastValues: ReadonlyArray<unknown> | undefined
  let remap: Array<number> = []
  return (e) => {
    const dict = pick(e.b)
    if (dict.values !== lastValues) {
      lastValues = dict.values
      remap = []
    }
    const c = dict.codes[e.i]!
    let id = remap[c]
    if (id === undefined) {
      const value = dict.values[c]
      const key = typeof value === "string" ? value : JSON.stringify(value)
      let known = ids.get(key)
      if (known === undefined) ids.set(key, known = ids.size)
      remap[c] = id = known
    }
    return id
  }
}

const verificationColumns = (workspaceId: string): Array<InputColumn> => [
  { name: "time", type: "Int", get: (e) => e.b.time[e.i] },
  { name: "workspace_id", type: "String", get: () => workspaceId },
  {
    name: "key_space_id",
    type: "String",
    get: (e) => e.b.apiId.values[e.b.apiId.codes[e.i]],
    code: interner((b) => b.apiId)
  },
  {
    name: "key_id",
    type: "String",
    get: (e) => e.b.keyId.values[e.b.keyId.codes[e.i]],
    code: interner((b) => b.keyId)
  },
  {
    name: "identity_id",
    type: "String",
    get: (e) => e.b.identityId.values[e.b.identityId.codes[e.i]],
    code: interner((b) => b.identityId)
  },
  {
    name: "external_id",
    type: "String",
    get: (e) => e.b.externalId.values[e.b.externalId.codes[e.i]],
    code: interner((b) => b.externalId)
  },
  { name: "outcome", type: "String", get: (e) => OUTCOME_NAMES[e.b.outcome[e.i]]!, code: (e) => e.b.outcome[e.i] },
  {
    name: "tags",
    type: "Array(String)",
    get: (e) => e.b.tags.values[e.b.tags.codes[e.i]],
    code: interner((b) => b.tags)
  },
  { name: "spent_credits", type: "Int", get: (e) => e.b.spentCredits[e.i] },
  { name: "latency", type: "Float", get: (e) => e.b.latency[e.i] },
  {
    name: "region",
    type: "String",
    get: (e) => e.b.region.values[e.b.region.codes[e.i]],
    code: interner((b) => b.region)
  }
]

const ratelimitColumns = (workspaceId: string): Array<InputColumn> => [
  { name: "time", type: "Int", get: (e) => e.b.time[e.i] },
  { name: "workspace_id", type: "String", get: () => workspaceId },
  {
    name: "namespace_id",
    type: "String",
    get: (e) => e.b.namespaceId.values[e.b.namespaceId.codes[e.i]],
    code: interner((b) => b.namespaceId)
  },
  {
    name: "identifier",
    type: "String",
    get: (e) => e.b.identifier.values[e.b.identifier.codes[e.i]],
    code: interner((b) => b.identifier)
  },
  { name: "passed", type: "Int", get: (e) => e.b.passed[e.i] },
  { name: "latency", type: "Float", get: (e) => e.b.latency[e.i] },
  {
    name: "override_id",
    type: "String",
    get: (e) => e.b.overrideId.values[e.b.overrideId.codes[e.i]],
    code: interner((b) => b.overrideId)
  }
]

/** The columns of a raw table, for the caller's workspace. */
const tableColumns = (context: Context, table: PublicTable): Array<InputColumn> =>
  table.family === "verifications"
    ? verificationColumns(context.sources.workspaceId)
    : ratelimitColumns(context.sources.workspaceId)

/** A read refused for more rows than allowed: the memory budget's fault when it allowed fewer. */
const readFault = (context: Context, byMemory: number): BudgetFault =>
  byMemory < context.scanLeft ? context.memoryFault() : new BudgetFault(
    "scannedRows",
    `the query reads more than its budget of ${context.limits.scannedRows} rows`
  )

const rawInput = (context: Context, table: PublicTable, qualifiers: ReadonlySet<string>, hint: ScanHint): Input => {
  const verifications = table.family === "verifications"
  return {
    planned: { _tag: "Table", table, hint },
    columns: tableColumns(context, table),
    qualifiers,
    run: async (env, visit) => {
      if (hint.from >= hint.to || (hint.within !== undefined && hint.within.length === 0)) return
      // A store that builds its batches holds them all until the query ends: the memory budget
      // bounds the rows it may read before it reads them.
      const rowBytes = verifications ? context.sources.rowBytes.verifications : context.sources.rowBytes.ratelimits
      const byMemory = rowBytes > 0 ? Math.floor(context.memoryLeft / rowBytes) : Infinity
      const maxRows = Math.min(context.scanLeft, byMemory)
      let batches: ReadonlyArray<VerificationColumns | RatelimitColumns>
      try {
        batches = verifications
          ? await context.sources.verifications(hint, maxRows, context.pauser)
          : await context.sources.ratelimits(hint, maxRows, context.pauser)
      } catch (error) {
        if (!(error instanceof TooManyRows)) throw error
        throw readFault(context, byMemory)
      }
      let rows = 0
      for (const batch of batches) rows += batch.length
      context.scannedRows(rows)
      if (rowBytes > 0) context.hold(0, rows * rowBytes)
      context.checkTime()
      await visitBatches(context, env, batches, visit)
    }
  }
}

/** Visits the rows of batches, pausing as a scan does; rows of counts set `env.w`. */
const visitBatches = async (
  context: Context,
  env: Env,
  batches: ReadonlyArray<VerificationColumns | RatelimitColumns>,
  visit: () => void
) => {
  for (const batch of batches) {
    env.b = batch
    const weights = (batch as Partial<Weighted>).weight
    for (let i = 0; i < batch.length; i++) {
      env.i = i
      if (weights !== undefined) env.w = weights[i]!
      visit()
      if ((i & SLICE_CHECK) === SLICE_CHECK && context.due()) {
        await context.pause()
        env.b = batch
      }
    }
    env.w = 1
    context.checkTime()
    if (context.due()) await context.pause()
  }
  env.b = undefined
}

/** Bytes a row of counts is counted as while the query runs (built for it, as SQLite's rows). */
const COUNT_ROW_BYTES = 64

/**
 * The events of a raw table read as the store's counts, when the SELECT cannot tell the two apart
 * (`countShape`): every group, filter and aggregate answers the same over rows of counts, each
 * aggregate weighing a row by the events it stands for. Undefined when the SELECT or the store
 * cannot (the SELECT then reads events). Counts are what `getVerifications` reads: for the
 * dashboard's questions, thousands of rows rather than millions.
 */
const countsInput = async (
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
  const whole = { ...counting.shape, identified }
  // Events of the edges are added to the groups: then no group's counts are all of it.
  const shape = edges.length > 0 ? whole : { ...whole, top: countTop(table.family, uses, whole) }
  const columns = tableColumns(context, table)
  return {
    planned: { _tag: "Table", table, hint },
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
      return { shape: { timeUnit, ...shape, tags, ...(credits ? { credits } : {}) }, from, to }
    }
  }
  return undefined
}

const HOUR_MS = 3_600_000
const DAY_MS = 86_400_000
const FLIPPED: Record<string, string> = { "<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "!=": "!=" }

const relationInput = (
  context: Context,
  relation: Relation,
  qualifiers: ReadonlySet<string>,
  query: Ast.Query
): Input => ({
  planned: { _tag: "Query", query },
  columns: relation.names.map((name, k) => ({ name, type: relation.types[k]!, get: (e: Env) => e.row[k]! })),
  qualifiers,
  run: async (env, visit) => {
    const rows = relation.rows
    for (let r = 0; r < rows.length; r++) {
      env.row = rows[r]!
      visit()
      if ((r & SLICE_CHECK) === SLICE_CHECK && context.due()) await context.pause()
    }
  }
})

const noInput: Input = {
  planned: { _tag: "None" },
  columns: [],
  qualifiers: new Set(),
  run: async (_env, visit) => visit()
}

/** Milliseconds a bucket of each grain may span at most (months: 31 days). */
const GRAIN_SPAN: Record<string, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000, month: 31 * 86_400_000 }

const viewCache = new Map<string, Ast.Query>()

/**
 * A rollup's view, grouped by `dimensions` only when given and with `measures` only when given
 * (see `prunedView`).
 */
const viewOf = (
  table: PublicTable,
  dimensions: ReadonlyArray<string> | undefined,
  measures?: ReadonlyArray<string> | undefined
): Ast.Query => {
  const text = dimensions === undefined && measures === undefined
    ? table.view!
    : table.viewBy!(dimensions ?? table.dimensions, measures)
  let query = viewCache.get(text)
  if (query === undefined) {
    if (viewCache.size > 256) viewCache.clear()
    viewCache.set(text, query = parse(text))
  }
  return query
}

/** Aggregates whose answer does not depend on how many rollup rows a group spans. */
const ROW_COUNT_FREE = new Set(["sum", "sumif", "min", "max", "minif", "maxif", "any", "uniq", "uniqexact", "uniqif"])

/**
 * What of a rollup a SELECT over it needs. Its dimensions, when grouping the rollup by those alone
 * answers the SELECT the same: the SELECT aggregates, its measures appear only summed (`sum`,
 * `sumIf`'s first argument), and its other aggregates do not count rows; else undefined (the full
 * rollup is built). A rollup of 2M raw rows by all its dimensions holds nearly as many groups;
 * `SELECT time, sum(count) … GROUP BY time` needs one per bucket. And its measures: those it names
 * (a measure not computed costs nothing, and one of counts alone can be read from counts).
 */
const prunedView = (
  table: PublicTable,
  exprs: ReadonlyArray<Ast.Expr>,
  aggregated: boolean
): { readonly dimensions: ReadonlyArray<string> | undefined; readonly measures: ReadonlyArray<string> } => {
  const used = new Set<string>()
  const measures = new Set<string>()
  let prunable = aggregated
  const column = (node: Ast.Column, summed: boolean) => {
    const name = node.name.toLowerCase()
    if (!table.measures.includes(name)) used.add(name)
    else {
      measures.add(name)
      if (!summed || name === "latency_avg") prunable = false
    }
  }
  const walk = (expr: Ast.Expr): void => {
    if (expr._tag === "Column") return column(expr, false)
    if (expr._tag === "Call" && isAggregateCall(expr)) {
      const name = expr.name.toLowerCase()
      if (!ROW_COUNT_FREE.has(name) && !(name === "count" && expr.distinct)) prunable = false
      // A sum counts rows unless what it sums is a measure (summed again, it is the same).
      const first = expr.args[0]
      if (
        (name === "sum" || name === "sumif") &&
        !(first?._tag === "Column" && table.measures.includes(first.name.toLowerCase()))
      ) prunable = false
      expr.args.forEach((arg, i) =>
        visitExpr(arg, (node) => {
          if (node._tag === "Call" && isAggregateCall(node)) prunable = false
          else if (node._tag === "Column") column(node, node === arg && i === 0 && (name === "sum" || name === "sumif"))
        })
      )
      return
    }
    childrenOf(expr).forEach(walk)
  }
  for (const expr of exprs) walk(expr)
  return { dimensions: prunable ? [...used] : undefined, measures: [...measures] }
}

/** The expressions directly inside one (not into subqueries). */
const childrenOf = (expr: Ast.Expr): ReadonlyArray<Ast.Expr> => {
  switch (expr._tag) {
    case "Interval":
      return [expr.value]
    case "ArrayLiteral":
      return expr.items
    case "Unary":
      return [expr.operand]
    case "Binary":
      return [expr.left, expr.right]
    case "Call":
      return expr.args
    case "InList":
      return [expr.expr, ...expr.items]
    case "InQuery":
    case "IsNull":
      return [expr.expr]
    case "Like":
      return [expr.expr, expr.pattern]
    case "Between":
      return [expr.expr, expr.low, expr.high]
    case "Case":
      return [
        ...(expr.operand ? [expr.operand] : []),
        ...expr.whens.flatMap((w) => [w.when, w.then]),
        ...(expr.otherwise ? [expr.otherwise] : [])
      ]
    default:
      return []
  }
}

const inputOf = async (
  context: Context,
  from: Ast.From | undefined,
  scope: Scope,
  where: Ast.Expr | undefined,
  outer: ScanHint | undefined,
  /** What the SELECT reads (undefined when it has `*`). */
  uses: Uses | undefined
): Promise<Input> => {
  if (from === undefined) return noInput
  if (from._tag === "Subquery") {
    const relation = await runQuery(context, from.query, new Scope(scope.ctes, scope.depth + 1), undefined)
    return relationInput(
      context,
      relation,
      new Set(from.alias === undefined ? [] : [from.alias.toLowerCase()]),
      from.query
    )
  }
  const key = from.name.toLowerCase()
  const qualifiers = new Set([from.alias?.toLowerCase() ?? key])
  const cte = from.name.includes(".") ? undefined : scope.ctes.get(key)
  if (cte !== undefined) {
    cte.result ??= runQuery(context, cte.query, cte.scope, undefined)
    return relationInput(context, await cte.result, qualifiers, cte.query)
  }
  const table = TABLES.get(key)
  if (table === undefined || table.family !== context.family) throw tableNotFound(from.name, context.family, from.at)
  const hint = intersect(hintOf(context, table, where), outer)
  if (table.view === undefined) {
    const counted = uses === undefined ? undefined : await countsInput(context, table, qualifiers, hint, uses)
    return counted ?? rawInput(context, table, qualifiers, hint)
  }
  // A rollup is its view over the raw table; the outer bounds on its bucket start bound the raw
  // times from below as they are, and from above a bucket's span later.
  const span = GRAIN_SPAN[table.grain]!
  const inner: ScanHint = {
    from: hint.from,
    to: hint.to >= Number.MAX_SAFE_INTEGER ? hint.to : hint.to + span,
    within: hint.within
  }
  const pruned = uses === undefined ? undefined : prunedView(table, uses.exprs, uses.aggregated)
  const view = viewOf(table, pruned?.dimensions, pruned?.measures)
  const relation = await runQuery(context, view, new Scope(new Map(), scope.depth + 1), inner)
  return relationInput(context, relation, qualifiers, view)
}

// ---------------------------------------------------------------------------------------------
// Scan hints: bounds on time and the api (namespace) column that WHERE implies.

const intersect = (a: ScanHint, b: ScanHint | undefined): ScanHint =>
  b === undefined ? a : {
    from: Math.max(a.from, b.from),
    to: Math.min(a.to, b.to),
    within: a.within === undefined
      ? b.within
      : b.within === undefined
      ? a.within
      : a.within.filter((id) => b.within!.includes(id))
  }

const conjuncts = (expr: Ast.Expr | undefined, out: Array<Ast.Expr> = []): Array<Ast.Expr> => {
  if (expr === undefined) return out
  if (expr._tag === "Binary" && expr.op === "AND") {
    conjuncts(expr.left, out)
    conjuncts(expr.right, out)
  } else out.push(expr)
  return out
}

const isColumn = (expr: Ast.Expr, name: string): boolean => expr._tag === "Column" && expr.name.toLowerCase() === name

const hintOf = (context: Context, table: PublicTable, where: Ast.Expr | undefined): ScanHint => {
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

// ---------------------------------------------------------------------------------------------
// Binding and compiling expressions

const emptyEnv = (): Env => ({ b: undefined, i: 0, w: 1, row: [], elem: null, g: -1 })

/** How a SELECT's names and aggregates resolve while compiling one expression. */
interface Binder {
  /** The column `name` (qualified by `table`), or undefined when the input has none. */
  column(ref: Ast.Column): InputColumn | undefined
  /** Post-aggregation only: the group key equal to `expr`, if any. */
  groupKey(expr: Ast.Expr): Compiled | undefined
  /** Post-aggregation only: a slot for an aggregate call; undefined where aggregates are not allowed. */
  aggregate(call: Ast.Call, aggregate: Aggregate): Compiled | undefined
  /** Where an aggregate is refused, why. */
  readonly aggregateRefusal: string
  /** The arrayJoin of this SELECT, if compiling row expressions. */
  arrayJoin(call: Ast.Call): Compiled | undefined
  /** IN (subquery) results, computed before rows flow. */
  readonly subqueries: ReadonlyMap<Ast.InQuery, { readonly keys: ReadonlySet<string | number>; readonly type: VType }>
  /** True in post-aggregation expressions: a bare column must be a group key. */
  readonly grouped: boolean
}

const constantBinder: Binder = {
  column: () => undefined,
  groupKey: () => undefined,
  aggregate: () => undefined,
  aggregateRefusal: "aggregate functions are not allowed here",
  arrayJoin: () => undefined,
  subqueries: new Map(),
  grouped: false
}

/** A canonical text of an expression (positions and letter case of keywords left out). */
export const canonical = (expr: Ast.Expr): string => {
  switch (expr._tag) {
    case "Column":
      return `c(${expr.name.toLowerCase()})`
    case "Literal":
      return typeof expr.value === "string"
        ? `s(${JSON.stringify(expr.value)})`
        : `l(${expr.value}${expr.integer ? "" : "f"})`
    case "Interval":
      return `iv(${canonical(expr.value)},${expr.unit})`
    case "ArrayLiteral":
      return `[${expr.items.map(canonical).join(",")}]`
    case "Unary":
      return `${expr.op}(${canonical(expr.operand)})`
    case "Binary":
      return `(${canonical(expr.left)}${expr.op}${canonical(expr.right)})`
    case "Call":
      return `${expr.name.toLowerCase()}(${expr.distinct ? "distinct " : ""}${
        expr.star ? "*" : expr.args.map(canonical).join(",")
      })`
    case "InList":
      return `in${expr.not ? "!" : ""}(${canonical(expr.expr)};${expr.items.map(canonical).join(",")})`
    case "InQuery":
      return `inq${expr.not ? "!" : ""}(${canonical(expr.expr)};@${expr.at})`
    case "Like":
      return `like${expr.not ? "!" : ""}${expr.caseInsensitive ? "i" : ""}(${canonical(expr.expr)},${
        canonical(expr.pattern)
      })`
    case "Between":
      return `btw${expr.not ? "!" : ""}(${canonical(expr.expr)},${canonical(expr.low)},${canonical(expr.high)})`
    case "IsNull":
      return `null${expr.not ? "!" : ""}(${canonical(expr.expr)})`
    case "Case":
      return `case(${expr.operand === undefined ? "" : canonical(expr.operand)};${
        expr.whens.map((w) => canonical(w.when) + ">" + canonical(w.then)).join(";")
      };${expr.otherwise === undefined ? "" : canonical(expr.otherwise)})`
  }
}

const constantOf = (type: VType, value: Value): Compiled => ({ type, eval: () => value, constant: true })

/** Folds a compiled expression whose inputs are all constant. */
const folded = (compiled: Compiled): Compiled =>
  compiled.constant && compiled.type !== "Interval" ? constantOf(compiled.type, compiled.eval(emptyEnv())) : compiled

const unify = (types: ReadonlyArray<VType>, what: string, at: number): VType => {
  let out: VType = "Null"
  for (const type of types) {
    if (type === "Null") continue
    if (out === "Null") out = type
    else if (isNumeric(out) && isNumeric(type)) out = out === "Int" && type === "Int" ? "Int" : "Float"
    else if (out !== type) throw new BindFault(`${what} mixes ${out} and ${type}`, at)
  }
  return out
}

const comparable = (a: VType, b: VType, what: string, at: number) => {
  if (a === "Null" || b === "Null") return
  if (a === "Interval" || b === "Interval") throw new BindFault(`${what} cannot compare an INTERVAL`, at)
  if (isNumeric(a) && isNumeric(b)) return
  if (a !== b) throw new BindFault(`${what} compares ${a} with ${b}`, at)
}

const needCondition = (compiled: Compiled, what: string, at: number) => {
  if (!isNumeric(compiled.type)) throw new BindFault(`${what} needs a condition (a number), got ${compiled.type}`, at)
}

export const compileExpr = (context: Context, expr: Ast.Expr, binder: Binder): Compiled => {
  const compiled = compileNode(context, expr, binder)
  context.types?.set(expr, compiled.type)
  context.texts?.set(canonical(expr), compiled.type)
  return compiled
}

const compileNode = (context: Context, expr: Ast.Expr, binder: Binder): Compiled => {
  if (binder.grouped) {
    const key = binder.groupKey(expr)
    if (key !== undefined) return key
  }
  const recurse = (inner: Ast.Expr) => compileExpr(context, inner, binder)
  switch (expr._tag) {
    case "Literal":
      if (expr.value === null) return constantOf("Null", null)
      return constantOf(typeof expr.value === "string" ? "String" : expr.integer ? "Int" : "Float", expr.value)
    case "Column": {
      if (expr.name === "*") throw new BindFault("'*' is only allowed as a whole SELECT item or in count(*)", expr.at)
      const column = binder.column(expr)
      if (column === undefined) {
        throw new BindFault(`unknown column ${expr.table === undefined ? "" : expr.table + "."}${expr.name}`, expr.at)
      }
      if (binder.grouped) {
        throw new BindFault(`the column ${expr.name} must be in GROUP BY or inside an aggregate function`, expr.at)
      }
      return { type: column.type, eval: column.get, constant: false, code: column.code }
    }
    case "Interval": {
      const value = recurse(expr.value)
      if (!isNumeric(value.type)) throw new BindFault(`INTERVAL needs a number, got ${value.type}`, expr.at)
      const ms = UNIT_MS[expr.unit]
      const months = UNIT_MONTHS[expr.unit]
      const f = value.eval
      return {
        type: "Interval",
        eval: (env): IntervalValue => {
          const n = f(env) as number
          return ms !== undefined ? { ms: n * ms, months: 0 } : { ms: 0, months: Math.trunc(n * months!) }
        },
        constant: value.constant
      }
    }
    case "ArrayLiteral": {
      const items = expr.items.map(recurse)
      for (const item of items) {
        if (item.type !== "String") throw new BindFault(`arrays hold Strings only, got ${item.type}`, expr.at)
      }
      const fs = items.map((item) => item.eval)
      return folded({
        type: "Array(String)",
        eval: (env) => fs.map((f) => f(env) as string),
        constant: items.every((i) => i.constant)
      })
    }
    case "Unary": {
      const operand = recurse(expr.operand)
      const f = operand.eval
      if (expr.op === "NOT") {
        needCondition(operand, "NOT", expr.at)
        return folded({
          type: "Int",
          eval: (env) => {
            const v = f(env)
            return v === null ? null : truthy(v) ? 0 : 1
          },
          constant: operand.constant
        })
      }
      if (!isNumeric(operand.type)) throw new BindFault(`'-' needs a number, got ${operand.type}`, expr.at)
      return folded({
        type: operand.type,
        eval: (env) => {
          const v = f(env)
          return v === null ? null : -(v as number)
        },
        constant: operand.constant
      })
    }
    case "Binary":
      return compileBinary(expr, recurse(expr.left), recurse(expr.right))
    case "Between": {
      const value = recurse(expr.expr)
      const low = recurse(expr.low)
      const high = recurse(expr.high)
      comparable(value.type, low.type, "BETWEEN", expr.at)
      comparable(value.type, high.type, "BETWEEN", expr.at)
      const [f, l, h] = [value.eval, low.eval, high.eval]
      const not = expr.not
      return folded({
        type: "Int",
        eval: (env) => {
          const v = f(env)
          const a = l(env)
          const b = h(env)
          if (v === null || a === null || b === null) return null
          const inside = compare(v, a) >= 0 && compare(v, b) <= 0
          return inside !== not ? 1 : 0
        },
        constant: value.constant && low.constant && high.constant
      })
    }
    case "IsNull": {
      const value = recurse(expr.expr)
      const f = value.eval
      const not = expr.not
      return folded({ type: "Int", eval: (env) => (f(env) === null) !== not ? 1 : 0, constant: value.constant })
    }
    case "Like": {
      const value = recurse(expr.expr)
      const pattern = recurse(expr.pattern)
      if (value.type !== "String" && value.type !== "Null") {
        throw new BindFault(`LIKE needs a String, got ${value.type}`, expr.at)
      }
      if (pattern.type !== "String" && pattern.type !== "Null") {
        throw new BindFault(`LIKE needs a String pattern, got ${pattern.type}`, expr.at)
      }
      const [f, p] = [value.eval, pattern.eval]
      const not = expr.not
      const ci = expr.caseInsensitive
      if (pattern.constant) {
        const text = p(emptyEnv())
        if (text === null) return constantOf("Null", null)
        const regex = likePattern(text as string, ci)
        return folded({
          type: "Int",
          eval: (env) => {
            const v = f(env)
            return v === null ? null : regex.test(v as string) !== not ? 1 : 0
          },
          constant: value.constant
        })
      }
      return {
        type: "Int",
        eval: (env) => {
          const v = f(env)
          const t = p(env)
          return v === null || t === null ? null : likePattern(t as string, ci).test(v as string) !== not ? 1 : 0
        },
        constant: false
      }
    }
    case "InList": {
      const value = recurse(expr.expr)
      const items = expr.items.map(recurse)
      for (const item of items) comparable(value.type, item.type, "IN", expr.at)
      const f = value.eval
      const not = expr.not
      if (items.every((item) => item.constant)) {
        const keys = new Set(items.map((item) => keyOf(item.eval(emptyEnv()))))
        return folded({
          type: "Int",
          eval: (env) => {
            const v = f(env)
            return v === null ? null : keys.has(keyOf(v)) !== not ? 1 : 0
          },
          constant: value.constant
        })
      }
      const fs = items.map((item) => item.eval)
      return {
        type: "Int",
        eval: (env) => {
          const v = f(env)
          if (v === null) return null
          const found = fs.some((g) => equal(g(env), v))
          return found !== not ? 1 : 0
        },
        constant: false
      }
    }
    case "InQuery": {
      const value = recurse(expr.expr)
      const result = binder.subqueries.get(expr)
      if (result === undefined) throw new BindFault("IN (SELECT …) is not allowed here", expr.at)
      comparable(value.type, result.type, "IN", expr.at)
      const f = value.eval
      const keys = result.keys
      const not = expr.not
      return {
        type: "Int",
        eval: (env) => {
          const v = f(env)
          return v === null ? null : keys.has(keyOf(v)) !== not ? 1 : 0
        },
        constant: false
      }
    }
    case "Case":
      return compileCase(expr, recurse)
    case "Call":
      return compileCall(context, expr, binder, recurse)
  }
}

const compileBinary = (expr: Ast.Binary, left: Compiled, right: Compiled): Compiled => {
  const [a, b] = [left.eval, right.eval]
  const constant = left.constant && right.constant
  const op = expr.op
  switch (op) {
    case "AND":
    case "OR": {
      needCondition(left, op, expr.at)
      needCondition(right, op, expr.at)
      const and = op === "AND"
      return folded({
        type: "Int",
        eval: (env) => {
          const x = a(env)
          if (and && x !== null && !truthy(x)) return 0
          if (!and && truthy(x)) return 1
          const y = b(env)
          if (and) return y !== null && !truthy(y) ? 0 : x === null || y === null ? null : 1
          return truthy(y) ? 1 : x === null || y === null ? null : 0
        },
        constant
      })
    }
    case "=":
    case "!=":
    case "<":
    case "<=":
    case ">":
    case ">=": {
      comparable(left.type, right.type, `'${op}'`, expr.at)
      const test = op === "=" ?
        (c: number) => c === 0
        : op === "!=" ?
        (c: number) => c !== 0
        : op === "<" ?
        (c: number) => c < 0
        : op === "<=" ?
        (c: number) => c <= 0
        : op === ">" ?
        (c: number) => c > 0
        : (c: number) => c >= 0
      const numbers = (left.type === "Int" || left.type === "Float") && (right.type === "Int" || right.type === "Float")
      const strings = left.type === "String" && right.type === "String"
      // Numbers, and strings for (in)equality, compare with JS's own operators: the same answers as
      // `compare` (NaN is unequal to all and unordered; strings by code unit), without its dispatch.
      if (numbers || (strings && (op === "=" || op === "!="))) {
        return folded({ type: "Int", eval: primitiveComparison(op, a, b), constant })
      }
      return folded({
        type: "Int",
        eval: (env) => {
          const x = a(env)
          const y = b(env)
          if (x === null || y === null) return null
          if (typeof x === "number" && typeof y === "number" && (Number.isNaN(x) || Number.isNaN(y))) {
            return op === "!="
              ? 1
              : 0
          }
          return test(compare(x, y)) ? 1 : 0
        },
        constant
      })
    }
    case "||": {
      if ((left.type !== "String" && left.type !== "Null") || (right.type !== "String" && right.type !== "Null")) {
        throw new BindFault(`'||' joins Strings, got ${left.type} and ${right.type}`, expr.at)
      }
      return folded({
        type: "String",
        eval: (env) => {
          const x = a(env)
          const y = b(env)
          return x === null || y === null ? null : (x as string) + (y as string)
        },
        constant
      })
    }
    default: {
      if ((op === "+" || op === "-") && (left.type === "Interval" || right.type === "Interval")) {
        if (right.type === "Interval" && isNumeric(left.type)) {
          const sign = op === "+" ? 1 : -1
          return folded({
            type: "Int",
            eval: (env) => {
              const x = a(env)
              return x === null ? null : shift(x as number, b(env) as IntervalValue, sign)
            },
            constant
          })
        }
        if (op === "+" && left.type === "Interval" && isNumeric(right.type)) {
          return folded({
            type: "Int",
            eval: (env) => {
              const y = b(env)
              return y === null ? null : shift(y as number, a(env) as IntervalValue, 1)
            },
            constant
          })
        }
        throw new BindFault(`'${op}' takes a time and an INTERVAL (time - INTERVAL 1 DAY)`, expr.at)
      }
      if (!isNumeric(left.type) || !isNumeric(right.type)) {
        throw new BindFault(`'${op}' needs numbers, got ${left.type} and ${right.type}`, expr.at)
      }
      const integer = left.type !== "Float" && right.type !== "Float"
      const type: VType = op === "/" ? "Float" : integer ? "Int" : "Float"
      const apply = op === "+" ?
        (x: number, y: number) => x + y
        : op === "-" ?
        (x: number, y: number) => x - y
        : op === "*" ?
        (x: number, y: number) => x * y
        : op === "/" ?
        (x: number, y: number) => x / y
        : integer
        ? (x: number, y: number) => {
          if (y === 0) throw new QueryFault("division by zero in '%'", expr.at)
          return x % y
        }
        : (x: number, y: number) => x % y
      return folded({
        type,
        eval: (env) => {
          const x = a(env)
          const y = b(env)
          return x === null || y === null ? null : apply(x as number, y as number)
        },
        constant
      })
    }
  }
}

const compileCase = (expr: Ast.Case, recurse: (e: Ast.Expr) => Compiled): Compiled => {
  const operand = expr.operand === undefined ? undefined : recurse(expr.operand)
  const whens = expr.whens.map((w) => ({ when: recurse(w.when), then: recurse(w.then) }))
  const otherwise = expr.otherwise === undefined ? undefined : recurse(expr.otherwise)
  for (const w of whens) {
    if (operand !== undefined) comparable(operand.type, w.when.type, "CASE", expr.at)
    else needCondition(w.when, "CASE WHEN", expr.at)
  }
  const type = unify([...whens.map((w) => w.then.type), ...(otherwise ? [otherwise.type] : [])], "CASE", expr.at)
  const o = operand?.eval
  const ws = whens.map((w) => [w.when.eval, w.then.eval] as const)
  const e = otherwise?.eval
  const constant = (operand?.constant ?? true) && whens.every((w) => w.when.constant && w.then.constant) &&
    (otherwise?.constant ?? true)
  return folded({
    type,
    eval: (env) => {
      const subject = o === undefined ? undefined : o(env)
      for (const [when, then] of ws) {
        const w = when(env)
        if (subject === undefined ? truthy(w) : subject !== null && w !== null && equal(subject, w)) return then(env)
      }
      return e === undefined ? null : e(env)
    },
    constant
  })
}

const compileCall = (
  context: Context,
  expr: Ast.Call,
  binder: Binder,
  recurse: (e: Ast.Expr) => Compiled
): Compiled => {
  const name = expr.name.toLowerCase()
  const aggregate = AGGREGATES.get(name)
  if (aggregate !== undefined || (name === "count" && expr.star)) {
    const fn = aggregate ?? AGGREGATES.get("count")!
    const slot = binder.aggregate(expr, fn)
    if (slot === undefined) throw new BindFault(binder.aggregateRefusal.replace("{name}", expr.name), expr.at)
    return slot
  }
  if (expr.star) throw new BindFault(`${expr.name}(*) is not supported: only count(*)`, expr.at)
  if (expr.distinct) throw new BindFault(`DISTINCT is only allowed in count(DISTINCT …)`, expr.at)
  if (SPECIAL.has(name)) {
    if (name === "arrayjoin") {
      const compiled = binder.arrayJoin(expr)
      if (compiled === undefined) throw new BindFault("arrayJoin is not allowed here", expr.at)
      return compiled
    }
    if (expr.args.length > 0) throw new BindFault(`${expr.name}() takes no arguments`, expr.at)
    const day = 86_400_000
    return constantOf("Int", name === "now" ? context.now : Math.floor(context.now / day) * day)
  }
  const scalar = SCALARS.get(name)
  if (scalar === undefined) {
    throw new BindFault(`unknown function ${expr.name}: see the README for the functions supported`, expr.at)
  }
  const [min, max] = scalar.arity
  if (expr.args.length < min || expr.args.length > max) {
    throw new BindFault(
      `${expr.name} takes ${min === max ? min : `${min} to ${max}`} argument${
        max === 1 ? "" : "s"
      }, got ${expr.args.length}`,
      expr.at
    )
  }
  const args = expr.args.map(recurse)
  let type: VType
  try {
    type = scalar.type(args.map((arg) => arg.type), expr.name)
  } catch (error) {
    if (error instanceof SignatureError) throw new BindFault(error.message, expr.at)
    throw error
  }
  const fs = args.map((arg) => arg.eval)
  const apply = scalar.apply
  const at = expr.at
  const run = (values: Array<Value>) => {
    try {
      return apply(values)
    } catch (error) {
      if (error instanceof QueryFault && error.at === undefined) throw new QueryFault(error.message, at)
      throw error
    }
  }
  const constant = args.every((arg) => arg.constant)
  // One array of arguments per call site, filled per row (no function keeps it): an array per
  // row was much of what a heavy GROUP BY gave the collector.
  const values: Array<Value> = fs.map(() => null)
  if (fs.length === 1) {
    const f = fs[0]!
    return folded({
      type,
      eval: (env) => {
        values[0] = f(env)
        return run(values)
      },
      constant
    })
  }
  return folded({
    type,
    eval: (env) => {
      for (let k = 0; k < fs.length; k++) values[k] = fs[k]!(env)
      return run(values)
    },
    constant
  })
}

// ---------------------------------------------------------------------------------------------
// SELECT

/** Replaces bare names of SELECT aliases by their expressions (not inside an alias's own). */
const substitute = (
  expr: Ast.Expr,
  aliases: ReadonlyMap<string, Ast.Expr>,
  excluded: ReadonlySet<string> = new Set()
): Ast.Expr => {
  const walk = (e: Ast.Expr): Ast.Expr => substitute(e, aliases, excluded)
  switch (expr._tag) {
    case "Column": {
      if (expr.table !== undefined) return expr
      const key = expr.name.toLowerCase()
      const target = aliases.get(key)
      if (target === undefined || excluded.has(key)) return expr
      return substitute(target, aliases, new Set([...excluded, key]))
    }
    case "Literal":
      return expr
    case "Interval":
      return { ...expr, value: walk(expr.value) }
    case "ArrayLiteral":
      return { ...expr, items: expr.items.map(walk) }
    case "Unary":
      return { ...expr, operand: walk(expr.operand) }
    case "Binary":
      return { ...expr, left: walk(expr.left), right: walk(expr.right) }
    case "Call":
      return { ...expr, args: expr.args.map(walk) }
    case "InList":
      return { ...expr, expr: walk(expr.expr), items: expr.items.map(walk) }
    case "InQuery":
      return { ...expr, expr: walk(expr.expr) }
    case "Like":
      return { ...expr, expr: walk(expr.expr), pattern: walk(expr.pattern) }
    case "Between":
      return { ...expr, expr: walk(expr.expr), low: walk(expr.low), high: walk(expr.high) }
    case "IsNull":
      return { ...expr, expr: walk(expr.expr) }
    case "Case":
      return {
        ...expr,
        operand: expr.operand === undefined ? undefined : walk(expr.operand),
        whens: expr.whens.map((w) => ({ when: walk(w.when), then: walk(w.then) })),
        otherwise: expr.otherwise === undefined ? undefined : walk(expr.otherwise)
      }
  }
}

/** Calls `f` on every node of an expression (not into subqueries). */
const visitExpr = (expr: Ast.Expr, f: (e: Ast.Expr) => void): void => {
  f(expr)
  for (const child of childrenOf(expr)) visitExpr(child, f)
}

const isAggregateCall = (e: Ast.Expr): boolean =>
  e._tag === "Call" && (AGGREGATES.has(e.name.toLowerCase()) || (e.star && e.name.toLowerCase() === "count"))

const hasAggregate = (expr: Ast.Expr): boolean => {
  let found = false
  visitExpr(expr, (e) => {
    if (isAggregateCall(e)) found = true
  })
  return found
}

/** A positional reference (`ORDER BY 2`) as the item's expression. */
const positional = (expr: Ast.Expr, items: ReadonlyArray<Ast.SelectItem>, what: string): Ast.Expr => {
  if (expr._tag !== "Literal" || !expr.integer || typeof expr.value !== "number") return expr
  const item = items[expr.value - 1]
  if (item === undefined || item.expr._tag === "Column" && item.expr.name === "*") {
    throw new BindFault(`${what} ${expr.value} names no column of the SELECT list`, expr.at)
  }
  return item.expr
}

const constantInteger = (context: Context, expr: Ast.Expr | undefined, what: string): number | undefined => {
  if (expr === undefined) return undefined
  const compiled = compileExpr(context, expr, constantBinder)
  const value = compiled.constant ? compiled.eval(emptyEnv()) : undefined
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
    throw new BindFault(`${what} needs a whole number ≥ 0`, expr.at)
  }
  return value
}

/** What a SELECT reads of its input, aliases and positions resolved. */
interface Uses {
  readonly exprs: ReadonlyArray<Ast.Expr>
  readonly aggregated: boolean
  /** Its WHERE's conjuncts, and its GROUP BY. */
  readonly where: ReadonlyArray<Ast.Expr>
  readonly group: ReadonlyArray<Ast.Expr>
  /** When it answers only its first rows by an expression: which, the order, and how many. */
  readonly first?: { readonly by: Ast.Expr; readonly descending: boolean; readonly rows: number } | undefined
}

/**
 * The first ORDER BY key and LIMIT (with OFFSET) of a SELECT that keeps every group it makes
 * (no HAVING, no DISTINCT); undefined otherwise, or when they are not constant (the SELECT's own
 * binding refuses those later, with its message).
 */
const firstOf = (
  context: Context,
  select: Ast.Select,
  resolve: (e: Ast.Expr) => Ast.Expr
): Uses["first"] => {
  const order = select.orderBy[0]
  if (order === undefined || select.limit === undefined || select.having !== undefined || select.distinct) {
    return undefined
  }
  const rows = firstRows(context, select)
  return rows === undefined ? undefined : { by: resolve(order.expr), descending: order.descending, rows }
}

/** Two values of an ORDER BY key: NULLs last whatever the direction, as ClickHouse sorts them. */
const compareOrdered = (x: Value, y: Value, descending: boolean): number => {
  if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1
  const c = compare(x, y)
  return descending ? -c : c
}

/** OFFSET + LIMIT when both are constant (undefined otherwise: the SELECT refuses them later). */
const firstRows = (context: Context, select: Ast.Select): number | undefined => {
  if (select.limit === undefined) return undefined
  try {
    return constantInteger(context, select.limit, "LIMIT")! + (constantInteger(context, select.offset, "OFFSET") ?? 0)
  } catch (error) {
    if (error instanceof BindFault || error instanceof QueryFault) return undefined
    throw error
  }
}

const runSelect = async (
  context: Context,
  select: Ast.Select,
  scope: Scope,
  hint: ScanHint | undefined
): Promise<Relation> => {
  context.checkTime()
  // Aliases first: WHERE may name them (as ClickHouse allows), and the scan's bounds come from
  // the WHERE they resolve to. `*` names no alias.
  const aliases = new Map<string, Ast.Expr>()
  for (const item of select.items) {
    if (item.alias === undefined) continue
    const key = item.alias.toLowerCase()
    const prior = aliases.get(key)
    if (prior !== undefined && canonical(prior) !== canonical(item.expr)) {
      throw new BindFault(`the alias ${item.alias} names two different expressions`, item.expr.at)
    }
    aliases.set(key, item.expr)
  }
  const resolve = (expr: Ast.Expr, own?: string) =>
    substitute(expr, aliases, own === undefined ? new Set() : new Set([own.toLowerCase()]))
  const where = select.where === undefined ? undefined : resolve(select.where)
  // What the SELECT reads of its input, known before `*` is expanded unless it has one.
  const starred = select.items.some((item) => item.expr._tag === "Column" && item.expr.name === "*")
  const used = starred ? undefined : (() => {
    const list = select.items.map((item) => resolve(item.expr, item.alias))
    const positionals = (e: Ast.Expr) => resolve(positional(e, select.items, "GROUP BY"))
    const group = select.groupBy.map(positionals)
    const rest = [
      ...(where ? [where] : []),
      ...(select.having ? [resolve(select.having)] : []),
      ...select.orderBy.map((o) => positionals(o.expr))
    ]
    const exprs = [...list, ...group, ...rest]
    return {
      exprs,
      aggregated: group.length > 0 || exprs.some(hasAggregate),
      where: conjuncts(where),
      group,
      first: firstOf(context, select, positionals)
    }
  })()
  const input = await inputOf(context, select.from, scope, where, hint, used)
  const byName = new Map(input.columns.map((column) => [column.name.toLowerCase(), column]))

  // The SELECT list, `*` expanded.
  const items: Array<Ast.SelectItem> = []
  for (const item of select.items) {
    if (item.expr._tag === "Column" && item.expr.name === "*") {
      if (input.columns.length === 0) throw new BindFault("SELECT * needs a FROM", item.expr.at)
      for (const column of input.columns) {
        items.push({
          expr: { _tag: "Column", at: item.expr.at, table: undefined, name: column.name },
          alias: undefined,
          text: column.name
        })
      }
    } else items.push(item)
  }
  const itemExprs = items.map((item) => resolve(item.expr, item.alias))
  const groupBy = select.groupBy.map((e) => resolve(positional(e, items, "GROUP BY")))
  const having = select.having === undefined ? undefined : resolve(select.having)
  const orderBy = select.orderBy.map((o) => ({
    expr: resolve(positional(o.expr, items, "ORDER BY")),
    descending: o.descending
  }))

  if (where !== undefined && hasAggregate(where)) {
    throw new BindFault("aggregate functions are not allowed in WHERE: use HAVING", where.at)
  }
  for (const e of groupBy) {
    if (hasAggregate(e)) throw new BindFault("aggregate functions are not allowed in GROUP BY", e.at)
  }
  const aggregated = groupBy.length > 0 || having !== undefined || itemExprs.some(hasAggregate) ||
    orderBy.some((o) => hasAggregate(o.expr))

  // IN (SELECT …) results, before rows flow.
  const subqueries = new Map<Ast.InQuery, { keys: Set<string | number>; type: VType }>()
  const allExprs = [
    ...itemExprs,
    ...(where ? [where] : []),
    ...groupBy,
    ...(having ? [having] : []),
    ...orderBy.map((o) => o.expr)
  ]
  for (const e of allExprs) {
    const pending: Array<Ast.InQuery> = []
    visitExpr(e, (node) => {
      if (node._tag === "InQuery" && !subqueries.has(node)) pending.push(node)
    })
    for (const node of pending) {
      const relation = await runQuery(context, node.query, new Scope(scope.ctes, scope.depth + 1), undefined)
      if (relation.names.length !== 1) {
        throw new BindFault(`IN (SELECT …) needs one column, got ${relation.names.length}`, node.at)
      }
      context.hold(relation.rows.length)
      subqueries.set(node, { keys: new Set(relation.rows.map((row) => keyOf(row[0]!))), type: relation.types[0]! })
    }
  }

  // The one arrayJoin of this SELECT, if any: every row is repeated once per element.
  let arrayJoin: { readonly text: string; readonly source: Compiled; type: VType } | undefined
  const rowBinder: Binder = {
    column: (ref) => {
      if (ref.table !== undefined && !input.qualifiers.has(ref.table.toLowerCase())) {
        throw new BindFault(`unknown table ${ref.table} in ${ref.table}.${ref.name}`, ref.at)
      }
      return byName.get(ref.name.toLowerCase())
    },
    groupKey: () => undefined,
    aggregate: () => undefined,
    aggregateRefusal: "aggregate functions cannot be nested or used here ({name})",
    arrayJoin: (call) => {
      if (call.args.length !== 1) throw new BindFault("arrayJoin takes one array", call.at)
      const text = canonical(call.args[0]!)
      if (arrayJoin === undefined) {
        const source = compileExpr(context, call.args[0]!, rowBinder)
        if (source.type !== "Array(String)") {
          throw new BindFault(`arrayJoin needs an array, got ${source.type}`, call.at)
        }
        arrayJoin = { text, source, type: "String" }
      } else if (arrayJoin.text !== text) {
        throw new BindFault("only one arrayJoin (of one array) per SELECT is supported", call.at)
      }
      return { type: "String", eval: (env) => env.elem, constant: false }
    },
    subqueries,
    grouped: false
  }
  const compileRow = (e: Ast.Expr) => compileExpr(context, e, rowBinder)

  // For a plan, the types of what this SELECT compiles, by text (a GROUP BY key written again in
  // the SELECT list is not compiled again).
  if (context.plan !== undefined) context.texts = new Map()
  const whereEval = where === undefined ? undefined : compileRow(where)
  if (whereEval !== undefined) needCondition(whereEval, "WHERE", where!.at)

  let outTypes: Array<VType>
  let produce: () => Promise<Array<Array<Value>>>
  const env = emptyEnv()
  const visitRows = async (visit: () => void) => {
    const w = whereEval?.eval
    const join = arrayJoin
    await input.run(env, () => {
      context.tick()
      if (join === undefined) {
        if (w === undefined || truthy(w(env))) visit()
        return
      }
      const elements = join.source.eval(env) as ReadonlyArray<string>
      for (let k = 0; k < elements.length; k++) {
        env.elem = elements[k]!
        if (w === undefined || truthy(w(env))) visit()
      }
    })
  }

  const orderCount = orderBy.length
  if (!aggregated) {
    const outputs = itemExprs.map(compileRow)
    const orders = orderBy.map((o) => compileRow(o.expr))
    outTypes = outputs.map((o) => o.type)
    const fs = [...outputs, ...orders].map((o) => o.eval)
    produce = async () => {
      const rows: Array<Array<Value>> = []
      const width = fs.length
      await visitRows(() => {
        const row = new Array<Value>(width)
        for (let k = 0; k < width; k++) row[k] = fs[k]!(env)
        rows.push(row)
        context.hold(width)
      })
      return rows
    }
  } else {
    const keys = groupBy.map(compileRow)
    const keyTexts = groupBy.map(canonical)
    // A group's key and aggregate values, once its columns are laid out below.
    let groupKey: (k: number, group: number) => Value = () => null
    let resultOf: (group: number, s: number) => Value = () => null
    const slots: Array<{
      readonly aggregate: Aggregate
      readonly type: VType
      readonly result: VType
      readonly args: Array<Eval>
    }> = []
    const slotTexts: Array<string> = []
    const groupBinder: Binder = {
      ...rowBinder,
      grouped: true,
      column: rowBinder.column,
      groupKey: (e) => {
        const k = keyTexts.indexOf(canonical(e))
        if (k < 0) return undefined
        const type = keys[k]!.type
        return { type, eval: (env) => groupKey(k, env.g), constant: false }
      },
      aggregate: (call, aggregate) => {
        const name = call.name.toLowerCase()
        const text = canonical(call)
        let s = slotTexts.indexOf(text)
        if (s < 0) {
          const [min, max] = aggregate.arity
          if (!call.star && (call.args.length < min || call.args.length > max)) {
            throw new BindFault(
              `${call.name} takes ${min === max ? min : `${min} to ${max}`} argument${
                max === 1 ? "" : "s"
              }, got ${call.args.length}`,
              call.at
            )
          }
          if (call.star && name !== "count") throw new BindFault(`${call.name}(*) is not supported`, call.at)
          const args = call.args.map((arg) => {
            if (hasAggregate(arg)) throw new BindFault("aggregate functions cannot be nested", arg.at)
            return compileRow(arg)
          })
          let fn = aggregate
          // A sum of a column of totals (rows of counts) adds each row's once.
          const first = call.args[0]
          if (
            fn.adds !== undefined && (name === "sum" || name === "sumif") && first?._tag === "Column" &&
            rowBinder.column(first)?.total === true
          ) fn = once(fn)
          if (call.distinct) {
            if (name !== "count") throw new BindFault("DISTINCT is only allowed in count(DISTINCT …)", call.at)
            fn = AGGREGATES.get("uniqexact")!
          }
          let type: VType
          try {
            type = call.star || args.length === 0 ? "Int" : fn.type(args.map((a) => a.type), call.name)
          } catch (error) {
            if (error instanceof SignatureError) throw new BindFault(error.message, call.at)
            throw error
          }
          s = slots.length
          // count() and count(*) count rows: a constant argument that is never NULL.
          const evals = args.length === 0 ? [() => 1] : args.map((a) => a.eval)
          slots.push({ aggregate: fn, type: args[0]?.type ?? "Int", result: type, args: evals })
          slotTexts.push(text)
        }
        const index = s
        return { type: slots[index]!.result, eval: (env) => resultOf(env.g, index), constant: false }
      },
      arrayJoin: (call) => {
        // An arrayJoin in GROUP BY is a key; elsewhere after grouping it is refused.
        const k = keyTexts.indexOf(canonical(call))
        if (k < 0) throw new BindFault("arrayJoin after GROUP BY must be one of the GROUP BY expressions", call.at)
        return undefined
      }
    }
    const compileGroup = (e: Ast.Expr): Compiled => compileExpr(context, e, groupBinder)
    const outputs = itemExprs.map(compileGroup)
    const havingEval = having === undefined ? undefined : compileGroup(having)
    if (havingEval !== undefined) needCondition(havingEval, "HAVING", having!.at)
    const orders = orderBy.map((o) => compileGroup(o.expr))
    outTypes = outputs.map((o) => o.type)
    const fs = [...outputs, ...orders].map((o) => o.eval)
    const keyFs = keys.map((k) => k.eval)
    // What rows are grouped by: a dictionary column's code, or the value's key.
    const groupFs = keys.map((k): Eval => {
      if (k.code !== undefined) return k.code
      const f = k.eval
      return k.type === "Int" || k.type === "Float" ? f : (env) => keyOf(f(env))
    })
    const stateBytes = slots.reduce((sum, slot) => sum + slot.aggregate.bytes, 0)
    // Groups are numbers, their keys and aggregates columns indexed by them: no object per group
    // for the collector to trace (a heavy query holds hundreds of thousands). Sums (count, countIf,
    // sum, sumIf) are numbers in a Float64Array; other aggregates keep a state per group.
    const summed = slots.flatMap((slot, s) => slot.aggregate.adds === undefined ? [] : [s])
    const stated = slots.flatMap((slot, s) => slot.aggregate.adds === undefined ? [s] : [])
    const sums = slots.map(() => new Float64Array(0))
    let capacity = 0
    const states = slots.map((): Array<State> => [])
    const keyValues = keys.map((): Array<Value> => [])
    let groups = 0
    const newGroup = (): number => {
      const at = groups++
      if (at >= capacity) {
        capacity = Math.max(64, capacity * 2)
        for (const s of summed) {
          const grown = new Float64Array(capacity)
          grown.set(sums[s]!)
          sums[s] = grown
        }
      }
      for (let k = 0; k < keyFs.length; k++) keyValues[k]!.push(keyFs[k]!(env))
      for (const s of stated) states[s]!.push(slots[s]!.aggregate.make(slots[s]!.type))
      return at
    }
    groupKey = (k, g) => keyValues[k]![g]!
    resultOf = (g, s) => slots[s]!.aggregate.adds === undefined ? states[s]![g]!.result() : sums[s]![g]!
    // Each key as a whole number: a dictionary column's code (dense, from 0), or one given to each
    // distinct value in the order first seen.
    const codes = keys.map((k, j): (env: Env) => number => {
      if (k.code !== undefined) return k.code as (env: Env) => number
      const f = groupFs[j]!
      const known = new Map<Value, number>()
      return (env) => {
        const value = f(env)
        let code = known.get(value)
        if (code === undefined) known.set(value, code = known.size)
        return code
      }
    })
    produce = async () => {
      // One key: its code indexes the groups. More: the codes are paired, the first two, then that
      // pair's number with the third, …, the last pair's number being the group's.
      const depth = groupFs.length
      const byCode: Array<number> = []
      const pairs = Array.from({ length: Math.max(0, depth - 1) }, () => new PairIndex())
      const single = depth === 0 ? newGroup() : undefined
      const args = slots.map((slot) => slot.args)
      const adds = slots.map((slot) => slot.aggregate.adds)
      await visitRows(() => {
        let group: number | undefined = single
        if (group === undefined) {
          let code = codes[0]!(env)
          if (depth === 1) {
            group = byCode[code]
            if (group === undefined) {
              byCode[code] = group = newGroup()
              context.hold(depth + 2, stateBytes)
            }
          } else {
            for (let j = 1; j < depth - 1; j++) code = pairs[j - 1]!.intern(code, codes[j]!(env))
            const last = pairs[depth - 2]!
            const lastCode = codes[depth - 1]!(env)
            group = last.find(code, lastCode)
            if (group < 0) {
              group = newGroup()
              last.add(code, lastCode, group)
              context.hold(depth + 2, stateBytes)
            }
          }
        }
        const at = group
        for (let k = 0; k < summed.length; k++) {
          const s = summed[k]!
          const a = args[s]!
          sums[s]![at] += adds[s]!(a.length > 0 ? a[0]!(env) : null, a.length > 1 ? a[1]!(env) : null, env.w)
        }
        for (let k = 0; k < stated.length; k++) {
          const s = stated[k]!
          const a = args[s]!
          states[s]![at]!.add(a.length > 0 ? a[0]!(env) : null, a.length > 1 ? a[1]!(env) : null, env.w)
        }
      })
      const genv = emptyEnv()
      const h = havingEval?.eval
      const wanted = firstRows(context, select)
      if (orderCount > 0 && !select.distinct && wanted !== undefined && wanted * 4 < groups) {
        // The first rows of many: chosen by their ORDER BY values, the rows built for them only
        // (a row per group would be hundreds of thousands of arrays for the collector to copy).
        const kept: Array<number> = []
        const values = orders.map(() => new Array<Value>(groups))
        for (let n = 0; n < groups; n++) {
          genv.g = n
          if (h !== undefined && !truthy(h(genv))) continue
          kept.push(n)
          for (let k = 0; k < orderCount; k++) values[k]![n] = orders[k]!.eval(genv)
          if ((n & SLICE_CHECK) === SLICE_CHECK && context.due()) await context.pause()
        }
        const descending = orderBy.map((o) => o.descending)
        const firsts = await topN(context, kept, wanted, (a, b) => {
          for (let k = 0; k < orderCount; k++) {
            const c = compareOrdered(values[k]![a]!, values[k]![b]!, descending[k]!)
            if (c !== 0) return c
          }
          return 0
        })
        context.hold(firsts.length * fs.length)
        return firsts.map((n) => {
          genv.g = n
          return fs.map((f) => f(genv))
        })
      }
      const rows: Array<Array<Value>> = []
      for (let n = 0; n < groups; n++) {
        genv.g = n
        if (h !== undefined && !truthy(h(genv))) continue
        rows.push(fs.map((f) => f(genv)))
        if ((n & SLICE_CHECK) === SLICE_CHECK && context.due()) await context.pause()
      }
      context.hold(rows.length * fs.length)
      return rows
    }
  }

  const texts = context.texts
  context.texts = undefined
  let rows = await produce()
  const width = outTypes.length
  if (select.distinct) {
    const seen = new Set<string>()
    rows = rows.filter((row) => {
      const key = keyOfRow(row.slice(0, width))
      if (seen.has(key)) return false
      seen.add(key)
      return true
    })
  }
  const offset = constantInteger(context, select.offset, "OFFSET") ?? 0
  const limit = constantInteger(context, select.limit, "LIMIT")
  if (orderCount > 0) {
    const descending = orderBy.map((o) => o.descending)
    const order = (a: ReadonlyArray<Value>, b: ReadonlyArray<Value>): number => {
      for (let k = 0; k < orderCount; k++) {
        const c = compareOrdered(a[width + k]!, b[width + k]!, descending[k]!)
        if (c !== 0) return c
      }
      return 0
    }
    const wanted = limit === undefined ? rows.length : offset + limit
    rows = wanted * 4 < rows.length ? await topN(context, rows, wanted, order) : rows.sort(order)
  }
  if (offset > 0 || limit !== undefined) rows = rows.slice(offset, limit === undefined ? undefined : offset + limit)
  if (orderCount > 0) rows = rows.map((row) => row.slice(0, width))
  const names = items.map((item) => item.alias ?? item.text)
  for (const [k, type] of outTypes.entries()) {
    if (type === "Interval") throw new BindFault("an INTERVAL is not a value: add it to a time", items[k]!.expr.at)
  }
  if (context.plan !== undefined) {
    context.plan.set(select, {
      input: plannedInput(context.plan.get(select)?.input, input.planned),
      inputNames: input.columns.map((column) => column.name),
      distinct: select.distinct,
      items: itemExprs,
      where,
      groupBy,
      having,
      orderBy,
      limit,
      offset,
      aggregated,
      typeOf: (e) => context.types?.get(e) ?? texts?.get(canonical(e))
    })
  }
  return { names, types: outTypes, rows }
}

/**
 * A SELECT's input for its plan. A SELECT runs more than once only as a view read under different
 * bounds: its plan reads what every run read (the widest bounds), and its WHERE does the rest.
 */
const plannedInput = (before: PlannedInput | undefined, now: PlannedInput): PlannedInput => {
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

/** The value of an expression without columns, as the query sees it; undefined when it has columns. */
export const constantValue = (context: Context, expr: Ast.Expr): Value | undefined => {
  try {
    const compiled = compileExpr(context, expr, constantBinder)
    return compiled.constant ? compiled.eval(emptyEnv()) : undefined
  } catch {
    return undefined
  }
}

/**
 * The first `n` rows in `order`, as a stable sort would place them (ties keep the order rows came
 * in), without sorting them all: a bounded heap of the best so far, worst on top. Pauses as a scan
 * does, so a top 10 of millions of groups shares the event loop.
 */
const topN = async <R>(
  context: Context,
  rows: ReadonlyArray<R>,
  n: number,
  order: (a: R, b: R) => number
): Promise<Array<R>> => {
  if (n <= 0) return []
  // Rows' positions; a is worse than b when it sorts after it (ties: the later row is worse).
  const worse = (a: number, b: number) => {
    const c = order(rows[a]!, rows[b]!)
    return c > 0 || (c === 0 && a > b)
  }
  const heap: Array<number> = []
  const down = (from: number) => {
    let i = from
    for (;;) {
      const l = 2 * i + 1
      const r = l + 1
      let top = i
      if (l < heap.length && worse(heap[l]!, heap[top]!)) top = l
      if (r < heap.length && worse(heap[r]!, heap[top]!)) top = r
      if (top === i) return
      const t = heap[i]!
      heap[i] = heap[top]!
      heap[top] = t
      i = top
    }
  }
  for (let i = 0; i < rows.length; i++) {
    if (heap.length < n) {
      heap.push(i)
      let c = heap.length - 1
      while (c > 0) {
        const p = (c - 1) >> 1
        if (!worse(heap[c]!, heap[p]!)) break
        const t = heap[c]!
        heap[c] = heap[p]!
        heap[p] = t
        c = p
      }
    } else if (worse(heap[0]!, i)) {
      heap[0] = i
      down(0)
    }
    if ((i & SLICE_CHECK) === SLICE_CHECK && context.due()) await context.pause()
  }
  return heap.sort((a, b) => order(rows[a]!, rows[b]!) || a - b).map((i) => rows[i]!)
}

/** A comparison of two numbers (or two strings, for `=` and `!=`), NULL when either is NULL. */
const primitiveComparison = (op: "=" | "!=" | "<" | "<=" | ">" | ">=", a: Eval, b: Eval): Eval => {
  switch (op) {
    case "=":
      return (env) => {
        const x = a(env)
        const y = b(env)
        return x === null || y === null ? null : x === y ? 1 : 0
      }
    case "!=":
      return (env) => {
        const x = a(env)
        const y = b(env)
        return x === null || y === null ? null : x !== y ? 1 : 0
      }
    case "<":
      return (env) => {
        const x = a(env)
        const y = b(env)
        return x === null || y === null ? null : (x as number) < (y as number) ? 1 : 0
      }
    case "<=":
      return (env) => {
        const x = a(env)
        const y = b(env)
        return x === null || y === null ? null : (x as number) <= (y as number) ? 1 : 0
      }
    case ">":
      return (env) => {
        const x = a(env)
        const y = b(env)
        return x === null || y === null ? null : (x as number) > (y as number) ? 1 : 0
      }
    case ">=":
      return (env) => {
        const x = a(env)
        const y = b(env)
        return x === null || y === null ? null : (x as number) >= (y as number) ? 1 : 0
      }
  }
}
