/**
 * The first rows of a SELECT with ORDER BY and LIMIT: the ORDER BY key and row count a scan may
 * use to keep fewer groups, the order of two values of a key, and the first `n` rows of many
 * without sorting them all.
 */
import type * as Ast from "../Ast.js"
import { constantInteger } from "./Compile.js"
import type { Context } from "./Context.js"
import { BindFault, SLICE_CHECK } from "./Context.js"
import type { Uses } from "./Inputs.js"
import type { Value } from "./Values.js"
import { compare, QueryFault } from "./Values.js"

/**
 * The first ORDER BY key and LIMIT (with OFFSET) of a SELECT that keeps every group it makes
 * (no HAVING, no DISTINCT); undefined otherwise, or when they are not constant (the SELECT's own
 * binding refuses those later, with its message).
 */
export const firstOf = (
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
export const compareOrdered = (x: Value, y: Value, descending: boolean): number => {
  if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1
  const c = compare(x, y)
  return descending ? -c : c
}

/** OFFSET + LIMIT when both are constant (undefined otherwise: the SELECT refuses them later). */
export const firstRows = (context: Context, select: Ast.Select): number | undefined => {
  if (select.limit === undefined) return undefined
  try {
    return constantInteger(context, select.limit, "LIMIT")! + (constantInteger(context, select.offset, "OFFSET") ?? 0)
  } catch (error) {
    if (error instanceof BindFault || error instanceof QueryFault) return undefined
    throw error
  }
}

/**
 * The first `n` rows in `order`, as a stable sort would place them (ties keep the order rows came
 * in), without sorting them all: a bounded heap of the best so far, worst on top. Pauses as a scan
 * does, so a top 10 of millions of groups shares the event loop.
 */
export const topN = async <R>(
  context: Context,
  rows: ArrayLike<R>,
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
