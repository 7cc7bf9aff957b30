/**
 * The type rules compiled expressions share: a constant, folding one whose inputs are constant,
 * the common type of several, what may be compared, what is a condition.
 */
import type { Compiled } from "./Context.js"
import { BindFault, emptyEnv } from "./Context.js"
import type { Value, VType } from "./Values.js"
import { isNumeric } from "./Values.js"

/** A compiled expression of one value. */
export const constantOf = (type: VType, value: Value): Compiled => ({ type, eval: () => value, constant: true })

/** Folds a compiled expression whose inputs are all constant. */
export const folded = (compiled: Compiled): Compiled =>
  compiled.constant && compiled.type !== "Interval" ? constantOf(compiled.type, compiled.eval(emptyEnv())) : compiled

/** The one type `types` have together (Int and Float: Float; NULL fits any), or a fault naming `what`. */
export const unify = (types: ReadonlyArray<VType>, what: string, at: number): VType => {
  let out: VType = "Null"
  for (const type of types) {
    if (type === "Null") continue
    if (out === "Null") out = type
    else if (isNumeric(out) && isNumeric(type)) out = out === "Int" && type === "Int" ? "Int" : "Float"
    else if (out !== type) throw new BindFault(`${what} mixes ${out} and ${type}`, at)
  }
  return out
}

/** Faults unless values of types `a` and `b` can be compared (by `what`). */
export const comparable = (a: VType, b: VType, what: string, at: number) => {
  if (a === "Null" || b === "Null") return
  if (a === "Interval" || b === "Interval") throw new BindFault(`${what} cannot compare an INTERVAL`, at)
  if (isNumeric(a) && isNumeric(b)) return
  if (a !== b) throw new BindFault(`${what} compares ${a} with ${b}`, at)
}

/** Faults unless `compiled` is a condition (a number) where `what` needs one. */
export const needCondition = (compiled: Compiled, what: string, at: number) => {
  if (!isNumeric(compiled.type)) throw new BindFault(`${what} needs a condition (a number), got ${compiled.type}`, at)
}
