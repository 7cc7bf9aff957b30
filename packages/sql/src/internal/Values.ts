/**
 * Values and types as the executor holds them. Times are unix ms numbers; booleans are 1 and 0;
 * an INTERVAL is a value only on its way into `+` or `-`.
 */
import type { Type } from "../Tables.js"

/** An interval: whole milliseconds, or calendar months (months, quarters, years). */
export interface IntervalValue {
  readonly ms: number
  readonly months: number
}

export type Value = number | string | null | ReadonlyArray<string> | IntervalValue

/** Types the executor tracks: the public ones, plus NULL's and INTERVAL's. */
export type VType = Type | "Null" | "Interval"

export const isNumeric = (type: VType): boolean => type === "Int" || type === "Float" || type === "Null"

/** A runtime fault of a query (division by zero in `intDiv`, …): answered as an invalid query. */
export class QueryFault {
  constructor(readonly message: string, readonly at: number | undefined) {}
}

/** Truth of a condition's value: non-zero numbers; NULL is false. */
export const truthy = (value: Value): boolean => typeof value === "number" && value !== 0 && !Number.isNaN(value)

/** A key that tells values of one type apart (for grouping, DISTINCT, IN, EXCEPT). */
export const keyOf = (value: Value): string | number => {
  if (typeof value === "number") return value
  if (typeof value === "string") return "s" + value
  if (value === null) return "\u0000null"
  return "a" + JSON.stringify(value)
}

/** Several values' key: length-prefixed, so no two lists share one. */
export const keyOfRow = (values: ReadonlyArray<Value>): string => {
  let out = ""
  for (const value of values) {
    const key = keyOf(value)
    const text = typeof key === "number" ? "n" + key : key
    out += text.length + ":" + text
  }
  return out
}

/** Orders two values of one type: numbers numerically, strings by code unit, arrays element-wise; NULL last. */
export const compare = (a: Value, b: Value): number => {
  if (a === b) return 0
  if (a === null) return 1
  if (b === null) return -1
  if (typeof a === "number" && typeof b === "number") {
    if (Number.isNaN(a)) return Number.isNaN(b) ? 0 : 1
    if (Number.isNaN(b)) return -1
    return a < b ? -1 : a > b ? 1 : 0
  }
  if (typeof a === "string" && typeof b === "string") return a < b ? -1 : a > b ? 1 : 0
  if (Array.isArray(a) && Array.isArray(b)) {
    const n = Math.min(a.length, b.length)
    for (let i = 0; i < n; i++) {
      const c = compare(a[i]!, b[i]!)
      if (c !== 0) return c
    }
    return a.length - b.length
  }
  return 0
}

/** Equality for `=` and `IN`: by value, arrays element-wise. */
export const equal = (a: Value, b: Value): boolean => {
  if (a === b) return true
  if (Array.isArray(a) && Array.isArray(b)) return compare(a, b) === 0
  return false
}
