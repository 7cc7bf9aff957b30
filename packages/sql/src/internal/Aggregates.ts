/**
 * The aggregates of the subset: a state per group (`count`, `sum`, `avg`, `min`, `uniq` and their
 * `…If` forms). Names are matched case-insensitively. Anything not listed here is refused by name.
 */
import { fail, needNumber } from "./Signature.js"
import type { Value, VType } from "./Values.js"
import { compare, keyOf } from "./Values.js"

/**
 * One group's state of one aggregate: `add` takes the argument values of a row, and how many equal
 * rows it stands for (1 but for rows of counts, see the executor's weighted input).
 */
export interface State {
  add(a: Value, b: Value, weight: number): void
  result(): Value
}

export interface Aggregate {
  readonly arity: readonly [min: number, max: number]
  readonly type: (args: ReadonlyArray<VType>, name: string) => VType
  readonly make: (type: VType) => State
  /** Approximate bytes a state holds, for the memory budget (sets grow: see `UniqState`). */
  readonly bytes: number
  /**
   * A sum the executor may keep as one number per group (no state object): what a row adds, as
   * its `State` would add it. Absent: the aggregate keeps a `State`.
   */
  readonly adds?: (a: Value, b: Value, weight: number) => number
}

/** What `count(x)` (`counted`) or `count()` adds for a row; `countIf(c)`; `sum(x)`; `sumIf(x, c)`. */
const countAdds = (a: Value, _b: Value, weight: number): number => a !== null ? weight : 0
const countIfAdds = (a: Value, _b: Value, weight: number): number => typeof a === "number" && a !== 0 ? weight : 0
const sumAdds = (a: Value, _b: Value, weight: number): number =>
  a === null ? 0 : weight === 1 ? a as number : (a as number) * weight
const sumIfAdds = (a: Value, b: Value, weight: number): number =>
  a === null || !(typeof b === "number" && b !== 0) ? 0 : weight === 1 ? a as number : (a as number) * weight

/**
 * A sum that adds each row once, whatever number of events it stands for: for a column whose value
 * on a row of counts is already the total of its events (spent credits summed by the store).
 */
export const once = (aggregate: Aggregate): Aggregate => {
  const adds = aggregate.adds!
  const addsOnce = (a: Value, b: Value): number => adds(a, b, 1)
  return { ...aggregate, make: () => new SumState(addsOnce), adds: addsOnce }
}

/** A sum of what each row adds (count, countIf, sum, sumIf: see `Aggregate.adds`). */
class SumState implements State {
  sum = 0
  constructor(private readonly adds: NonNullable<Aggregate["adds"]>) {}
  add(a: Value, b: Value, weight: number): void {
    this.sum += this.adds(a, b, weight)
  }
  result(): Value {
    return this.sum
  }
}

class AvgState implements State {
  sum = 0
  n = 0
  constructor(private readonly conditional: boolean) {}
  add(a: Value, b: Value, weight: number): void {
    if (this.conditional && !(typeof b === "number" && b !== 0)) return
    if (a === null) return
    this.sum += weight === 1 ? a as number : (a as number) * weight
    this.n += weight
  }
  result(): Value {
    return this.n === 0 ? null : this.sum / this.n
  }
}

class ExtremeState implements State {
  value: Value = null
  constructor(private readonly max: boolean, private readonly conditional: boolean, private readonly empty: Value) {}
  add(a: Value, b: Value): void {
    if (this.conditional && !(typeof b === "number" && b !== 0)) return
    if (a === null) return
    if (this.value === null) this.value = a
    else if (typeof a === "object") {
      // Arrays compare element by element (JS's `<` would compare their joined text).
      if (this.max ? compare(a, this.value) > 0 : compare(a, this.value) < 0) this.value = a
    } else if (this.max ? a > this.value : a < this.value) this.value = a
  }
  result(): Value {
    return this.value ?? this.empty
  }
}

class AnyState implements State {
  value: Value = null
  seen = false
  add(a: Value): void {
    if (!this.seen && a !== null) {
      this.value = a
      this.seen = true
    }
  }
  result(): Value {
    return this.value
  }
}

/** Distinct values, counted exactly (`uniq` is exact here: ClickHouse's estimate is within 2%). */
export class UniqState implements State {
  readonly seen = new Set<string | number>()
  constructor(private readonly conditional: boolean) {}
  add(a: Value, b: Value): void {
    if (this.conditional && !(typeof b === "number" && b !== 0)) return
    if (a !== null) this.seen.add(keyOf(a))
  }
  result(): Value {
    return this.seen.size
  }
}

const emptyOf = (type: VType): Value => type === "String" ? "" : type === "Array(String)" ? [] : 0

const numberArg = (conditional: boolean, resultType?: VType) => (args: ReadonlyArray<VType>, name: string): VType => {
  needNumber(name, args[0]!, 1)
  if (conditional) needNumber(name, args[1]!, 2)
  return resultType ?? (args[0] === "Int" ? "Int" : "Float")
}

const anyArg = (conditional: boolean, resultType?: VType) => (args: ReadonlyArray<VType>, name: string): VType => {
  if (args[0] === "Interval") fail(`${name} cannot take an INTERVAL`)
  if (conditional) needNumber(name, args[1]!, 2)
  return resultType ?? args[0]!
}

export const AGGREGATES: ReadonlyMap<string, Aggregate> = new Map<string, Aggregate>([
  ["count", { arity: [0, 1], type: () => "Int", make: () => new SumState(countAdds), bytes: 16, adds: countAdds }],
  ["countif", {
    arity: [1, 1],
    type: (args, name) => (needNumber(name, args[0]!, 1), "Int"),
    make: () => new SumState(countIfAdds),
    adds: countIfAdds,
    bytes: 16
  }],
  ["sum", { arity: [1, 1], type: numberArg(false), make: () => new SumState(sumAdds), bytes: 16, adds: sumAdds }],
  ["sumif", { arity: [2, 2], type: numberArg(true), make: () => new SumState(sumIfAdds), bytes: 16, adds: sumIfAdds }],
  ["avg", { arity: [1, 1], type: numberArg(false, "Float"), make: () => new AvgState(false), bytes: 24 }],
  ["avgif", { arity: [2, 2], type: numberArg(true, "Float"), make: () => new AvgState(true), bytes: 24 }],
  ["min", {
    arity: [1, 1],
    type: anyArg(false),
    make: (type) => new ExtremeState(false, false, emptyOf(type)),
    bytes: 24
  }],
  ["minif", {
    arity: [2, 2],
    type: anyArg(true),
    make: (type) => new ExtremeState(false, true, emptyOf(type)),
    bytes: 24
  }],
  ["max", {
    arity: [1, 1],
    type: anyArg(false),
    make: (type) => new ExtremeState(true, false, emptyOf(type)),
    bytes: 24
  }],
  ["maxif", {
    arity: [2, 2],
    type: anyArg(true),
    make: (type) => new ExtremeState(true, true, emptyOf(type)),
    bytes: 24
  }],
  ["any", { arity: [1, 1], type: anyArg(false), make: () => new AnyState(), bytes: 24 }],
  ["uniq", { arity: [1, 1], type: anyArg(false, "Int"), make: () => new UniqState(false), bytes: 64 }],
  ["uniqexact", { arity: [1, 1], type: anyArg(false, "Int"), make: () => new UniqState(false), bytes: 64 }],
  ["uniqif", { arity: [2, 2], type: anyArg(true, "Int"), make: () => new UniqState(true), bytes: 64 }]
])
