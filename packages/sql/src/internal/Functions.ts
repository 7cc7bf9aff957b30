/**
 * The scalar functions of the subset (pure, over one row's values; the aggregates are in
 * `Aggregates`). Names are matched case-insensitively. Anything not listed here is refused by name.
 */
import { fail, needArray, needNumber, needString } from "./Signature.js"
import type { IntervalValue, Value, VType } from "./Values.js"
import { isNumeric, QueryFault } from "./Values.js"

const MINUTE = 60_000
const HOUR = 3_600_000
const DAY = 86_400_000

export interface Scalar {
  /** The result type for these argument types, or a SignatureError. */
  readonly type: (args: ReadonlyArray<VType>, name: string) => VType
  readonly apply: (args: ReadonlyArray<Value>) => Value
  /** False for `now()`-like functions that must not be folded … all are deterministic within a query. */
  readonly arity: readonly [min: number, max: number]
}

const num = (value: Value) => value as number

/** A time function: numbers in, Int out; NULL stays NULL. */
const time = (f: (t: number) => number): Scalar => ({
  arity: [1, 1],
  type: (args, name) => (needNumber(name, args[0]!, 1), "Int"),
  apply: ([t]) => t === null ? null : f(num(t))
})

const startOfMonthOf = (day: number, months: number) => {
  const d = new Date(day * DAY)
  const m = d.getUTCMonth()
  return Date.UTC(d.getUTCFullYear(), m - (m % months), 1)
}

/**
 * The start of `t`'s month (quarter: 3, year: 12), remembered for the last day asked: rows come
 * mostly in time order, and a Date per row was most of a monthly grouping's time.
 */
const monthStarts = (months: number) => {
  let lastDay = NaN
  let lastStart = 0
  return (t: number) => {
    const day = Math.floor(t / DAY)
    if (day !== lastDay) {
      lastStart = startOfMonthOf(day, months)
      lastDay = day
    }
    return lastStart
  }
}

/** Adds calendar months to a unix ms time, clamping the day to the target month's last (as ClickHouse). */
export const addMonths = (t: number, months: number): number => {
  const d = new Date(t)
  const y = d.getUTCFullYear()
  const m = d.getUTCMonth() + months
  const last = new Date(Date.UTC(y, m + 1, 0)).getUTCDate()
  const day = Math.min(d.getUTCDate(), last)
  return Date.UTC(y, m, day) + (t - Math.floor(t / DAY) * DAY)
}

const startOfWeek = (t: number, mode: number) => {
  const day = Math.floor(t / DAY)
  // 1970-01-01 was a Thursday: day 0 is weekday 4 (Sunday = 0).
  const weekday = (((day + 4) % 7) + 7) % 7
  const back = mode % 2 === 1 ? (weekday + 6) % 7 : weekday
  return (day - back) * DAY
}

const sameKind = (name: string, args: ReadonlyArray<VType>): VType => {
  let out: VType = "Null"
  for (const type of args) {
    if (type === "Null") continue
    if (out === "Null") out = type
    else if (isNumeric(out) && isNumeric(type)) out = out === "Int" && type === "Int" ? "Int" : "Float"
    else if (out !== type) fail(`${name} mixes ${out} and ${type}`)
  }
  return out
}

const likeCache = new Map<string, RegExp>()

/** A LIKE pattern as a regular expression (`%`, `_`, backslash escapes). */
export const likePattern = (pattern: string, caseInsensitive: boolean): RegExp => {
  const cacheKey = (caseInsensitive ? "i" : "s") + pattern
  let regex = likeCache.get(cacheKey)
  if (regex !== undefined) return regex
  let source = "^"
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!
    if (c === "\\" && i + 1 < pattern.length) source += pattern[++i]!.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")
    else if (c === "%") source += "[\\s\\S]*"
    else if (c === "_") source += "[\\s\\S]"
    else source += c.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")
  }
  regex = new RegExp(source + "$", caseInsensitive ? "iu" : "u")
  if (likeCache.size > 1000) likeCache.clear()
  likeCache.set(cacheKey, regex)
  return regex
}

const roundTo = (x: number, digits: number) => {
  const f = Math.pow(10, digits)
  // Half away from zero, as ClickHouse rounds decimals written in the query.
  return (Math.sign(x) * Math.round(Math.abs(x) * f)) / f
}

export const SCALARS: ReadonlyMap<string, Scalar> = new Map<string, Scalar>([
  ["tostartofminute", time((t) => Math.floor(t / MINUTE) * MINUTE)],
  ["tostartoffiveminutes", time((t) => Math.floor(t / (5 * MINUTE)) * 5 * MINUTE)],
  ["tostartoffifteenminutes", time((t) => Math.floor(t / (15 * MINUTE)) * 15 * MINUTE)],
  ["tostartofhour", time((t) => Math.floor(t / HOUR) * HOUR)],
  ["tostartofday", time((t) => Math.floor(t / DAY) * DAY)],
  ["todate", time((t) => Math.floor(t / DAY) * DAY)],
  ["tomonday", time((t) => startOfWeek(t, 1))],
  ["tostartofmonth", time(monthStarts(1))],
  ["tostartofquarter", time(monthStarts(3))],
  ["tostartofyear", time(monthStarts(12))],
  ["tohour", time((t) => new Date(t).getUTCHours())],
  ["todayofweek", time((t) => ((new Date(t).getUTCDay() + 6) % 7) + 1)],
  ["fromunixtimestamp64milli", time((t) => t)],
  ["tounixtimestamp64milli", time((t) => t)],
  ["tounixtimestamp", time((t) => Math.floor(t / 1000))],
  ["tostartofweek", {
    arity: [1, 2],
    type: (args, name) => {
      needNumber(name, args[0]!, 1)
      if (args.length > 1) needNumber(name, args[1]!, 2)
      return "Int"
    },
    apply: ([t, mode]) => t === null ? null : startOfWeek(num(t), mode === undefined || mode === null ? 0 : num(mode))
  }],
  ["if", {
    arity: [3, 3],
    type: (args, name) => (needNumber(name, args[0]!, 1), sameKind(name, args.slice(1))),
    apply: ([c, a, b]) => typeof c === "number" && c !== 0 ? a! : b!
  }],
  ["multiif", {
    arity: [3, 99],
    type: (args, name) => {
      if (args.length % 2 === 0) fail(`${name} takes condition, value pairs and a last value`)
      for (let i = 0; i < args.length - 1; i += 2) needNumber(name, args[i]!, i + 1)
      return sameKind(name, args.filter((_, i) => i % 2 === 1 || i === args.length - 1))
    },
    apply: (args) => {
      for (let i = 0; i < args.length - 1; i += 2) {
        const c = args[i]
        if (typeof c === "number" && c !== 0) return args[i + 1]!
      }
      return args[args.length - 1]!
    }
  }],
  ["abs", {
    arity: [1, 1],
    type: (args, name) => (needNumber(name, args[0]!, 1), args[0]!),
    apply: ([x]) => x === null ? null : Math.abs(num(x))
  }],
  ["floor", {
    arity: [1, 1],
    type: (args, name) => (needNumber(name, args[0]!, 1), args[0]!),
    apply: ([x]) => x === null ? null : Math.floor(num(x))
  }],
  ["ceil", {
    arity: [1, 1],
    type: (args, name) => (needNumber(name, args[0]!, 1), args[0]!),
    apply: ([x]) => x === null ? null : Math.ceil(num(x))
  }],
  ["round", {
    arity: [1, 2],
    type: (args, name) => {
      needNumber(name, args[0]!, 1)
      if (args.length > 1) needNumber(name, args[1]!, 2)
      return args[0]!
    },
    apply: ([x, digits]) =>
      x === null ? null : roundTo(num(x), digits === undefined || digits === null ? 0 : num(digits))
  }],
  ["intdiv", {
    arity: [2, 2],
    type: (args, name) => (needNumber(name, args[0]!, 1), needNumber(name, args[1]!, 2), "Int"),
    apply: ([a, b]) => {
      if (a === null || b === null) return null
      if (num(b) === 0) throw new QueryFault("division by zero in intDiv", undefined)
      return Math.trunc(num(a) / num(b))
    }
  }],
  ["greatest", {
    arity: [2, 99],
    type: (args, name) => sameKind(name, args),
    apply: (args) => args.reduce((a, b) => (a === null || (b !== null && b > a!) ? b : a))!
  }],
  ["least", {
    arity: [2, 99],
    type: (args, name) => sameKind(name, args),
    apply: (args) => args.reduce((a, b) => (a === null || (b !== null && b < a!) ? b : a))!
  }],
  ["tostring", {
    arity: [1, 1],
    type: (
      args,
      name
    ) => (args[0] === "Interval" || args[0] === "Array(String)"
      ? fail(`${name} takes a number or a String`)
      : "String"),
    apply: ([x]) => x === null ? null : String(x)
  }],
  ["toint64", {
    arity: [1, 1],
    type: (
      args,
      name
    ) => (args[0] === "Interval" || args[0] === "Array(String)" ? fail(`${name} takes a number or a String`) : "Int"),
    apply: ([x]) => {
      if (x === null) return null
      const n = typeof x === "string" ? Number(x.trim()) : num(x)
      if (typeof x === "string" && (x.trim() === "" || !Number.isFinite(n))) {
        throw new QueryFault(`cannot read '${x}' as an integer`, undefined)
      }
      return Math.trunc(n)
    }
  }],
  ["tofloat64", {
    arity: [1, 1],
    type: (
      args,
      name
    ) => (args[0] === "Interval" || args[0] === "Array(String)" ? fail(`${name} takes a number or a String`) : "Float"),
    apply: ([x]) => {
      if (x === null) return null
      if (typeof x === "string") {
        const n = Number(x.trim())
        if (x.trim() === "" || Number.isNaN(n)) throw new QueryFault(`cannot read '${x}' as a number`, undefined)
        return n
      }
      return num(x)
    }
  }],
  ["lower", {
    arity: [1, 1],
    type: (args, name) => (needString(name, args[0]!, 1), "String"),
    apply: ([s]) => s === null ? null : (s as string).toLowerCase()
  }],
  ["upper", {
    arity: [1, 1],
    type: (args, name) => (needString(name, args[0]!, 1), "String"),
    apply: ([s]) => s === null ? null : (s as string).toUpperCase()
  }],
  ["concat", {
    arity: [1, 99],
    type: (args, name) => (args.forEach((t, i) => needString(name, t, i + 1)), "String"),
    apply: (args) => args.some((a) => a === null) ? null : args.join("")
  }],
  ["startswith", {
    arity: [2, 2],
    type: (args, name) => (needString(name, args[0]!, 1), needString(name, args[1]!, 2), "Int"),
    apply: ([s, p]) => s === null || p === null ? null : ((s as string).startsWith(p as string) ? 1 : 0)
  }],
  ["endswith", {
    arity: [2, 2],
    type: (args, name) => (needString(name, args[0]!, 1), needString(name, args[1]!, 2), "Int"),
    apply: ([s, p]) => s === null || p === null ? null : ((s as string).endsWith(p as string) ? 1 : 0)
  }],
  ["length", {
    arity: [1, 1],
    type: (
      args,
      name
    ) => (args[0] === "String" || args[0] === "Array(String)" || args[0] === "Null"
      ? "Int"
      : fail(`${name} takes a String or an array`)),
    // ClickHouse counts a string's bytes.
    apply: ([x]) =>
      x === null ? null : typeof x === "string" ? Buffer.byteLength(x) : (x as ReadonlyArray<string>).length
  }],
  ["empty", {
    arity: [1, 1],
    type: (
      args,
      name
    ) => (args[0] === "String" || args[0] === "Array(String)" ? "Int" : fail(`${name} takes a String or an array`)),
    apply: ([x]) => (x as string | ReadonlyArray<string>).length === 0 ? 1 : 0
  }],
  ["notempty", {
    arity: [1, 1],
    type: (
      args,
      name
    ) => (args[0] === "String" || args[0] === "Array(String)" ? "Int" : fail(`${name} takes a String or an array`)),
    apply: ([x]) => (x as string | ReadonlyArray<string>).length === 0 ? 0 : 1
  }],
  ["has", {
    arity: [2, 2],
    type: (args, name) => (needArray(name, args[0]!, 1), needString(name, args[1]!, 2), "Int"),
    apply: ([a, x]) => (a as ReadonlyArray<string>).includes(x as string) ? 1 : 0
  }],
  ["hasany", {
    arity: [2, 2],
    type: (args, name) => (needArray(name, args[0]!, 1), needArray(name, args[1]!, 2), "Int"),
    apply: ([a, b]) => (b as ReadonlyArray<string>).some((x) => (a as ReadonlyArray<string>).includes(x)) ? 1 : 0
  }],
  ["hasall", {
    arity: [2, 2],
    type: (args, name) => (needArray(name, args[0]!, 1), needArray(name, args[1]!, 2), "Int"),
    apply: ([a, b]) => (b as ReadonlyArray<string>).every((x) => (a as ReadonlyArray<string>).includes(x)) ? 1 : 0
  }]
])

/** Functions the binder compiles itself (they read the query's context or rows). */
export const SPECIAL = new Set(["now", "today", "arrayjoin"])

/** Milliseconds in a fixed-length interval unit. */
export const UNIT_MS: Record<string, number> = { SECOND: 1000, MINUTE, HOUR, DAY, WEEK: 7 * DAY }

/** Months in a calendar interval unit. */
export const UNIT_MONTHS: Record<string, number> = { MONTH: 1, QUARTER: 3, YEAR: 12 }

/** `time ± interval`. */
export const shift = (t: number, interval: IntervalValue, sign: 1 | -1): number =>
  interval.months !== 0 ? addMonths(t, sign * interval.months) + sign * interval.ms : t + sign * interval.ms
