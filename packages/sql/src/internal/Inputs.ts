/**
 * The rows a SELECT reads: a raw table's events as the store scans them (columns by name, dictionary
 * columns coded per query), or a relation computed before (a CTE, a subquery).
 */
import type { RatelimitColumns, VerificationColumns } from "@keymeter/core/EventScan"
import type * as Ast from "../Ast.js"
import type { PublicTable } from "../Tables.js"
import { OUTCOME_NAMES } from "../Tables.js"
import type { Context, Env, Eval, Input, InputColumn, Relation, ScanHint, Weighted } from "./Context.js"
import { BudgetFault, SLICE_CHECK, TooManyRows } from "./Context.js"

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
export const tableColumns = (context: Context, table: PublicTable): Array<InputColumn> =>
  table.family === "verifications"
    ? verificationColumns(context.sources.workspaceId)
    : ratelimitColumns(context.sources.workspaceId)

/** A read refused for more rows than allowed: the memory budget's fault when it allowed fewer. */
export const readFault = (context: Context, byMemory: number): BudgetFault =>
  byMemory < context.scanLeft ? context.memoryFault() : new BudgetFault(
    "scannedRows",
    `the query reads more than its budget of ${context.limits.scannedRows} rows`
  )

export const rawInput = (
  context: Context,
  table: PublicTable,
  qualifiers: ReadonlySet<string>,
  hint: ScanHint
): Input => {
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
export const visitBatches = async (
  context: Context,
  env: Env,
  batches: ReadonlyArray<VerificationColumns | RatelimitColumns>,
  visit: () => void
) => {
  for (const batch of batches) {
    env.b = batch
    const weights = (batch as Partial<Weighted>).weight
    env.o = (batch as Partial<Weighted>).byOutcome
    for (let i = 0; i < batch.length; i++) {
      env.i = i
      if (weights !== undefined) env.w = weights[i]!
      visit()
      if ((i & SLICE_CHECK) === SLICE_CHECK && context.due()) {
        await context.pause()
        env.b = batch
        env.o = (batch as Partial<Weighted>).byOutcome
      }
    }
    env.w = 1
    env.o = undefined
    context.checkTime()
    if (context.due()) await context.pause()
  }
  env.b = undefined
}

export const relationInput = (
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

export const noInput: Input = {
  planned: { _tag: "None" },
  columns: [],
  qualifiers: new Set(),
  run: async (_env, visit) => visit()
}

/** What a SELECT reads of its input, aliases and positions resolved. */
export interface Uses {
  readonly exprs: ReadonlyArray<Ast.Expr>
  readonly aggregated: boolean
  /** Its WHERE's conjuncts, and its GROUP BY. */
  readonly where: ReadonlyArray<Ast.Expr>
  readonly group: ReadonlyArray<Ast.Expr>
  /** When it answers only its first rows by an expression: which, the order, and how many. */
  readonly first?: { readonly by: Ast.Expr; readonly descending: boolean; readonly rows: number } | undefined
}
