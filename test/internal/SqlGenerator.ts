/**
 * Inputs of the SQL differential test (`SqlDifferential.test.ts`): a seeded corpus of events
 * (verifications and rate-limit decisions of two workspaces) and a seeded generator of queries of
 * keymeter's SQL subset. Each query is built once, as a description, and written twice: in
 * keymeter's ClickHouse dialect, and in DuckDB's, spelling out keymeter's semantics there (times in
 * unix ms, UTC buckets, Sunday weeks, calendar months clamped, booleans 1/0, `/` as float division,
 * empty aggregates 0 or '', EXCEPT keeping the left side's duplicates, NULLs last) so that DuckDB
 * answers it independently of keymeter's executor.
 */
import type { RatelimitEvent } from "@keymeter/core/RatelimitEvent"
import type { Outcome, Verification } from "@keymeter/core/Verification"

export const MINUTE = 60_000
export const HOUR = 3_600_000
export const DAY = 86_400_000

// ---------------------------------------------------------------------------------------------
// A seeded PRNG (mulberry32)

export class Rng {
  private state: number
  constructor(seed: number) {
    this.state = seed >>> 0
  }
  /** Uniform in [0, 1). */
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0)
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  /** Uniform integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1))
  }
  chance(p: number): boolean {
    return this.next() < p
  }
  pick<A>(items: ReadonlyArray<A>): A {
    return items[Math.floor(this.next() * items.length)]!
  }
  weighted<A>(pairs: ReadonlyArray<readonly [A, number]>): A {
    let total = 0
    for (const [, w] of pairs) total += w
    let x = this.next() * total
    for (const [a, w] of pairs) {
      x -= w
      if (x < 0) return a
    }
    return pairs[pairs.length - 1]![0]
  }
  shuffle<A>(items: ReadonlyArray<A>): Array<A> {
    const out = [...items]
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1))
      const t = out[i]!
      out[i] = out[j]!
      out[j] = t
    }
    return out
  }
  /** `k` distinct items, in random order. */
  some<A>(items: ReadonlyArray<A>, k: number): Array<A> {
    return this.shuffle(items).slice(0, Math.min(k, items.length))
  }
}

// ---------------------------------------------------------------------------------------------
// The corpus

export const WORKSPACE = "ws_1"
export const OTHER_WORKSPACE = "ws_2"

/** The first event (a Monday); the corpus spans a year's, a quarter's and a month's end. */
export const START = Date.UTC(2025, 11, 8)
/** What `now()` reads: events run up to it. */
export const NOW = Date.UTC(2026, 0, 17, 9, 41, 27, 318)

export const APIS = ["api_a", "api_b", "api_c"] as const
const LETTERS = ["a", "b", "c"]
const keyIdOf = (api: number, k: number) => `${api === 2 ? "sk" : "key"}_${LETTERS[api]}_${String(k).padStart(2, "0")}`
export const KEY_IDS: ReadonlyArray<string> = APIS.flatMap((_, a) =>
  Array.from({ length: 10 }, (_, k) => keyIdOf(a, k))
)
const identityOf = (api: number, k: number) =>
  k % 3 === 0 ? { id: `id_${(api * 10 + k) % 7}`, externalId: `user_${(api * 10 + k) % 7}` } : undefined

/** Tag sets, each sorted and unique (as stored); `["beta program"]` sorts apart from `["beta", "pro"]`. */
const TAG_SETS: ReadonlyArray<ReadonlyArray<string>> = [
  [],
  [],
  [],
  ["free"],
  ["pro"],
  ["beta", "pro"],
  ["beta program"],
  ["eu", "free"],
  ["eu", "pro", "team"],
  ["Beta"],
  ["café"],
  ["path:/v1/keys.verify"],
  ["eu"]
]
export const TAGS: ReadonlyArray<string> = [...new Set(TAG_SETS.flat())].sort()

const OUTCOME_WEIGHTS: ReadonlyArray<readonly [Outcome, number]> = [
  ["valid", 50],
  ["notFound", 6],
  ["forbidden", 4],
  ["usageExceeded", 8],
  ["rateLimited", 12],
  ["unauthorized", 5],
  ["disabled", 4],
  ["insufficientPermissions", 5],
  ["expired", 6]
]

/** Outcome names as the tables spell them, written out here (the test holds them to `Tables.OUTCOME_NAMES`). */
export const OUTCOME_NAME: Readonly<Record<Outcome, string>> = {
  valid: "VALID",
  notFound: "NOT_FOUND",
  forbidden: "FORBIDDEN",
  usageExceeded: "USAGE_EXCEEDED",
  rateLimited: "RATE_LIMITED",
  unauthorized: "UNAUTHORIZED",
  disabled: "DISABLED",
  insufficientPermissions: "INSUFFICIENT_PERMISSIONS",
  expired: "EXPIRED"
}

export const NAMESPACES = ["ns_api", "ns_login"] as const
export const IDENTIFIERS: ReadonlyArray<string> = [
  ...Array.from({ length: 12 }, (_, i) => `user_${String(i + 1).padStart(2, "0")}`),
  ...Array.from({ length: 6 }, (_, i) => `ip:10.0.0.${i + 1}`)
]
const OVERRIDES: Readonly<Record<string, string>> = { user_03: "ovr_user_03", "ip:10.0.0.2": "ovr_ip" }

export interface Corpus {
  /** Verifications of both workspaces, in stored form. */
  readonly verifications: ReadonlyArray<Verification>
  /** Decisions of both workspaces. */
  readonly decisions: ReadonlyArray<RatelimitEvent>
}

/** A time in [START, NOW): uniform, now and then on a minute's, an hour's or a day's start. */
const eventTime = (r: Rng, previous: number | undefined): number => {
  const t = r.int(START, NOW - 1)
  const x = r.next()
  if (x < 0.01 && previous !== undefined) return previous
  if (x < 0.03) return Math.floor(t / MINUTE) * MINUTE
  if (x < 0.07) return Math.floor(t / HOUR) * HOUR
  if (x < 0.09) return Math.floor(t / DAY) * DAY
  return t
}

/** Milliseconds to the microsecond, as the stores keep them. */
const latencyOf = (r: Rng, maxMicros: number) => (20 + Math.floor(Math.pow(r.next(), 3) * maxMicros)) / 1000

/** Picks with weights falling off with the rank (a few heavy hitters, a long tail). */
const skewed = <A>(r: Rng, items: ReadonlyArray<A>): A =>
  r.weighted(items.map((item, i) => [item, 1 / Math.pow(i + 1, 0.8)] as const))

export const makeCorpus = (seed: number): Corpus => {
  const r = new Rng(seed)
  const verifications: Array<Verification> = []
  const keyOrder = r.shuffle(KEY_IDS.map((_, i) => i))
  let previous: number | undefined
  for (let i = 0; i < 3000; i++) {
    const index = skewed(r, keyOrder)
    const api = Math.floor(index / 10)
    const k = index % 10
    const outcome = r.weighted(OUTCOME_WEIGHTS)
    const time: number = i === 0 ? START : i === 1 ? NOW - 1 : eventTime(r, previous)
    previous = time
    const region = r.weighted([["fra1", 48], ["iad1", 48], ["", 4]] as const)
    verifications.push({
      time,
      workspaceId: WORKSPACE,
      apiId: APIS[api]!,
      keyId: keyIdOf(api, k),
      identity: identityOf(api, k),
      outcome,
      tags: r.pick(TAG_SETS),
      spentCredits: outcome === "valid" ? r.pick([0, 0, 1, 1, 1, 2, 3, 5, 10, 100]) : r.chance(0.1) ? 1 : 0,
      latency: latencyOf(r, 180_000),
      region
    })
  }
  // Another workspace, with api and key ids the first one uses too: never visible to it.
  for (let i = 0; i < 500; i++) {
    const api = r.chance(0.7) ? "api_a" : "api_z"
    verifications.push({
      time: eventTime(r, undefined),
      workspaceId: OTHER_WORKSPACE,
      apiId: api,
      keyId: api === "api_a" ? keyIdOf(0, r.int(0, 3)) : "key_z_00",
      identity: r.chance(0.3) ? { id: "id_1", externalId: "user_1" } : undefined,
      outcome: r.weighted(OUTCOME_WEIGHTS),
      tags: r.pick(TAG_SETS),
      spentCredits: r.pick([0, 1, 7]),
      latency: latencyOf(r, 90_000),
      region: r.pick(["fra1", "sin1"])
    })
  }
  const decisions: Array<RatelimitEvent> = []
  const decision = (workspaceId: string, namespaceId: string, identifier: string, time: number): RatelimitEvent => {
    const blocky = identifier.startsWith("ip:") ? 0.45 : 0.2
    const passed = !r.chance(blocky)
    const overrideId = namespaceId === "ns_api" || identifier.startsWith("ip:") ? OVERRIDES[identifier] : undefined
    return {
      time,
      workspaceId,
      namespaceId,
      identifier,
      passed,
      limit: overrideId === undefined ? 100 : 1000,
      duration: 60_000,
      remaining: passed ? r.int(0, 99) : 0,
      cost: 1,
      overrideId,
      source: r.pick(["limit", "multiLimit", "verifyKey"] as const),
      latency: latencyOf(r, 5_000),
      detail: undefined
    }
  }
  previous = undefined
  for (let i = 0; i < 2000; i++) {
    const time: number = i === 0 ? START : eventTime(r, previous)
    previous = time
    decisions.push(decision(WORKSPACE, r.chance(0.65) ? "ns_api" : "ns_login", skewed(r, IDENTIFIERS), time))
  }
  for (let i = 0; i < 200; i++) {
    decisions.push(decision(OTHER_WORKSPACE, r.pick(["ns_api", "ns_z"]), r.pick(IDENTIFIERS), eventTime(r, undefined)))
  }
  return { verifications, decisions }
}

// ---------------------------------------------------------------------------------------------
// Dual expressions: keymeter's text and DuckDB's, of one value

/** `Bool` is keymeter's Int 1/0, and a BOOLEAN in DuckDB (cast to an integer where a value is wanted). */
type Ty = "Int" | "Float" | "String" | "Array" | "Bool" | "Null"

interface D {
  readonly ch: string
  readonly dk: string
  readonly ty: Ty
}

const mk = (ch: string, dk: string, ty: Ty): D => ({ ch, dk, ty })

/** As a value: a condition is 1 or 0 (NULL stays NULL). */
const val = (x: D): D => (x.ty === "Bool" ? mk(x.ch, `CAST(${x.dk} AS BIGINT)`, "Int") : x)

/** As a condition: a number is true when it is not 0 (NULL is not true). */
const cond = (x: D): D => (x.ty === "Bool" ? x : mk(x.ch, `((${x.dk}) <> 0)`, "Bool"))

const numeric = (ty: Ty) => ty === "Int" || ty === "Float" || ty === "Bool"

const chString = (s: string) => `'${s.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`
const dkString = (s: string) => `'${s.replace(/'/g, "''")}'`

const int = (n: number): D => mk(String(n), `CAST(${n} AS BIGINT)`, "Int")
const float = (x: number): D => {
  const text = Number.isInteger(x) ? x.toFixed(1) : String(x)
  return mk(text, `CAST(${text} AS DOUBLE)`, "Float")
}
const str = (s: string): D => mk(chString(s), dkString(s), "String")
const arr = (items: ReadonlyArray<string>): D =>
  mk(
    `[${items.map(chString).join(", ")}]`,
    items.length === 0 ? "CAST([] AS VARCHAR[])" : `[${items.map(dkString).join(", ")}]`,
    "Array"
  )
const literal = (v: string | number, ty: Ty): D => (typeof v === "string" ? str(v) : ty === "Float" ? float(v) : int(v))

type CmpOp = "=" | "!=" | "<" | "<=" | ">" | ">="

const cmp = (op: CmpOp, a: D, b: D, chOp: string = op): D =>
  mk(`(${a.ch} ${chOp} ${b.ch})`, `(${val(a).dk} ${op === "!=" ? "<>" : op} ${val(b).dk})`, "Bool")

const and = (...xs: ReadonlyArray<D>): D =>
  mk(`(${xs.map((x) => x.ch).join(" AND ")})`, `(${xs.map((x) => cond(x).dk).join(" AND ")})`, "Bool")
const or = (...xs: ReadonlyArray<D>): D =>
  mk(`(${xs.map((x) => x.ch).join(" OR ")})`, `(${xs.map((x) => cond(x).dk).join(" OR ")})`, "Bool")
const not = (x: D): D => mk(`NOT (${x.ch})`, `(NOT ${cond(x).dk})`, "Bool")

const arith = (op: "+" | "-" | "*", a: D, b: D): D =>
  mk(
    `(${a.ch} ${op} ${b.ch})`,
    `(${val(a).dk} ${op} ${val(b).dk})`,
    a.ty === "Float" || b.ty === "Float" ? "Float" : "Int"
  )
/** Float division, whatever the operands. */
const div = (a: D, b: D): D => mk(`(${a.ch} / ${b.ch})`, `(CAST(${val(a).dk} AS DOUBLE) / ${val(b).dk})`, "Float")
const mod = (a: D, b: D): D => mk(`(${a.ch} % ${b.ch})`, `(${val(a).dk} % ${val(b).dk})`, "Int")
/** Truncating integer division. */
const intDiv = (a: D, b: D): D =>
  mk(`intDiv(${a.ch}, ${b.ch})`, `CAST(trunc(CAST(${val(a).dk} AS DOUBLE) / ${val(b).dk}) AS BIGINT)`, "Int")
const neg = (a: D): D => mk(`-${a.ch}`, `(-${val(a).dk})`, a.ty === "Float" ? "Float" : "Int")

const between = (x: D, low: D, high: D, negated: boolean): D =>
  mk(
    `(${x.ch} ${negated ? "NOT " : ""}BETWEEN ${low.ch} AND ${high.ch})`,
    `(${val(x).dk} ${negated ? "NOT " : ""}BETWEEN ${val(low).dk} AND ${val(high).dk})`,
    "Bool"
  )
const inList = (x: D, items: ReadonlyArray<D>, negated: boolean): D =>
  mk(
    `(${x.ch} ${negated ? "NOT " : ""}IN (${items.map((i) => i.ch).join(", ")}))`,
    `(${val(x).dk} ${negated ? "NOT " : ""}IN (${items.map((i) => val(i).dk).join(", ")}))`,
    "Bool"
  )
/** `pattern` is a LIKE pattern, with `\` escaping a wildcard. */
const like = (x: D, pattern: string, negated: boolean, insensitive: boolean): D => {
  const word = `${negated ? "NOT " : ""}${insensitive ? "ILIKE" : "LIKE"}`
  return mk(
    `(${x.ch} ${word} ${chString(pattern)})`,
    `(${x.dk} ${word} ${dkString(pattern)}${pattern.includes("\\") ? " ESCAPE '\\'" : ""})`,
    "Bool"
  )
}
const caseWhen = (
  whens: ReadonlyArray<readonly [D, D]>,
  otherwise: D | undefined,
  ty: Ty
): D =>
  mk(
    `CASE ${whens.map(([w, t]) => `WHEN ${w.ch} THEN ${t.ch}`).join(" ")}${
      otherwise === undefined ? "" : ` ELSE ${otherwise.ch}`
    } END`,
    `CASE ${whens.map(([w, t]) => `WHEN ${cond(w).dk} THEN ${val(t).dk}`).join(" ")}${
      otherwise === undefined ? "" : ` ELSE ${val(otherwise).dk}`
    } END`,
    ty
  )
const ifThen = (c: D, a: D, b: D, ty: Ty): D =>
  mk(`if(${c.ch}, ${a.ch}, ${b.ch})`, `CASE WHEN ${cond(c).dk} THEN ${val(a).dk} ELSE ${val(b).dk} END`, ty)

/** A keymeter function applied: the name as written (any letter case), DuckDB's text given. */
const call = (name: string, args: ReadonlyArray<D>, dk: string, ty: Ty): D =>
  mk(`${name}(${args.map((a) => a.ch).join(", ")})`, dk, ty)

const NOW_D = mk("now()", `CAST(${NOW} AS BIGINT)`, "Int")
const TODAY_D = mk("today()", `CAST(${Math.floor(NOW / DAY) * DAY} AS BIGINT)`, "Int")

/** A timestamp of a unix-ms value, in DuckDB. */
const ts = (x: string) => `epoch_ms(CAST(${x} AS BIGINT))`
const truncTo = (part: string) => (x: string) => `epoch_ms(date_trunc('${part}', ${ts(x)}))`
const sundayWeek = (x: string) => `epoch_ms(date_trunc('week', ${ts(x)} + INTERVAL 1 DAY) - INTERVAL 1 DAY)`
const floorTo = (ms: number) => (x: string) => `((${x}) // ${ms}) * ${ms}`

/** Bucket functions of time: keymeter's name and arguments' tail, DuckDB's text. */
const BUCKETS: ReadonlyArray<readonly [name: string, tail: string, dk: (x: string) => string, grain: number]> = [
  ["toStartOfMinute", "", floorTo(MINUTE), MINUTE],
  ["toStartOfFiveMinutes", "", floorTo(5 * MINUTE), 5 * MINUTE],
  ["toStartOfFifteenMinutes", "", floorTo(15 * MINUTE), 15 * MINUTE],
  ["toStartOfHour", "", floorTo(HOUR), HOUR],
  ["toStartOfDay", "", truncTo("day"), DAY],
  ["toDate", "", truncTo("day"), DAY],
  ["toMonday", "", truncTo("week"), 7 * DAY],
  ["toStartOfWeek", "", sundayWeek, 7 * DAY],
  ["toStartOfWeek", ", 0", sundayWeek, 7 * DAY],
  ["toStartOfWeek", ", 1", truncTo("week"), 7 * DAY],
  ["toStartOfMonth", "", truncTo("month"), 31 * DAY],
  ["toStartOfQuarter", "", truncTo("quarter"), 92 * DAY],
  ["toStartOfYear", "", truncTo("year"), 366 * DAY]
]

/** Letter case as a user might write a function name. */
const spell = (r: Rng, name: string) => r.chance(0.08) ? name.toLowerCase() : r.chance(0.04) ? name.toUpperCase() : name

const bucket = (r: Rng, x: D, which = r.pick(BUCKETS)): D => {
  const [name, tail, dk] = which
  return mk(`${spell(r, name)}(${x.ch}${tail})`, dk(x.dk), "Int")
}
const toHour = (x: D) => mk(`toHour(${x.ch})`, `CAST(hour(${ts(x.dk)}) AS BIGINT)`, "Int")
const toDayOfWeek = (x: D) => mk(`toDayOfWeek(${x.ch})`, `CAST(isodow(${ts(x.dk)}) AS BIGINT)`, "Int")

type Unit = "SECOND" | "MINUTE" | "HOUR" | "DAY" | "WEEK" | "MONTH" | "QUARTER" | "YEAR"
const UNIT_MS: Partial<Record<Unit, number>> = { SECOND: 1000, MINUTE, HOUR, DAY, WEEK: 7 * DAY }
const UNIT_MONTHS: Partial<Record<Unit, number>> = { MONTH: 1, QUARTER: 3, YEAR: 12 }

/** `t ± INTERVAL n unit`: milliseconds added, or calendar months (the day clamped to the month's last). */
const shift = (r: Rng, t: D, sign: "+" | "-", n: number, unit: Unit): D => {
  const ms = UNIT_MS[unit]
  const dk = ms !== undefined
    ? `(${t.dk} ${sign} ${n * ms})`
    : `epoch_ms(${ts(t.dk)} ${sign} INTERVAL (${n * UNIT_MONTHS[unit]!}) MONTH)`
  const interval = `INTERVAL ${n} ${r.chance(0.1) ? unit.toLowerCase() : unit}`
  const ch = sign === "+" && r.chance(0.2) ? `(${interval} + ${t.ch})` : `(${t.ch} ${sign} ${interval})`
  return mk(ch, dk, "Int")
}

// ---------------------------------------------------------------------------------------------
// Sources: the public tables, subqueries, CTEs

export type Family = "verifications" | "ratelimits"
type Kind = "time" | "int" | "float" | "string" | "tags" | "passed"

interface Col {
  readonly ty: Ty
  readonly kind: Kind
  /** Values a String column takes (tags for an array): for filters; some absent ones too. */
  readonly domain: ReadonlyArray<string>
  /** The public column it holds, if any: for IN (SELECT …). */
  readonly origin: string | undefined
  /** Thresholds to compare a number with. */
  readonly steps: ReadonlyArray<number>
}

const col = (ty: Ty, kind: Kind, options: Partial<Omit<Col, "ty" | "kind">> = {}): Col => ({
  ty,
  kind,
  domain: options.domain ?? [],
  origin: options.origin,
  steps: options.steps ?? []
})

const COUNT_STEPS = [0, 1, 2, 3, 5, 8, 10, 20, 40, 75, 150, 400]
const CREDIT_STEPS = [0, 1, 2, 3, 5, 10, 50, 100]
const LATENCY_STEPS = [0.05, 0.5, 1.5, 4.25, 12.5, 40.0, 100.0]
const OUTCOME_DOMAIN = [...Object.values(OUTCOME_NAME), "valid", "UNKNOWN"]

const stringCol = (origin: string, domain: ReadonlyArray<string>) => col("String", "string", { origin, domain })

const VERIFICATION_DIMENSIONS: ReadonlyArray<readonly [string, Col]> = [
  ["time", col("Int", "time", { origin: "time" })],
  ["workspace_id", stringCol("workspace_id", [WORKSPACE, OTHER_WORKSPACE])],
  ["key_space_id", stringCol("key_space_id", [...APIS, "api_z"])],
  ["key_id", stringCol("key_id", [...KEY_IDS, "key_z_00"])],
  ["identity_id", stringCol("identity_id", ["", "id_0", "id_1", "id_2", "id_3", "id_5", "id_6", "id_4"])],
  ["external_id", stringCol("external_id", ["", "user_0", "user_1", "user_2", "user_3", "user_5", "user_6"])],
  ["outcome", stringCol("outcome", OUTCOME_DOMAIN)],
  ["tags", col("Array", "tags", { origin: "tags", domain: [...TAGS, "absent"] })]
]

const verificationRaw = new Map<string, Col>([
  ...VERIFICATION_DIMENSIONS,
  ["spent_credits", col("Int", "int", { origin: "spent_credits", steps: CREDIT_STEPS })],
  ["latency", col("Float", "float", { origin: "latency", steps: LATENCY_STEPS })],
  ["region", stringCol("region", ["fra1", "iad1", "", "sin1"])]
])
const verificationRollup = new Map<string, Col>([
  ...VERIFICATION_DIMENSIONS,
  ["count", col("Int", "int", { steps: COUNT_STEPS })],
  ["spent_credits", col("Int", "int", { steps: [...CREDIT_STEPS, 200, 500] })],
  ["latency_avg", col("Float", "float", { steps: LATENCY_STEPS })]
])
const RATELIMIT_DIMENSIONS: ReadonlyArray<readonly [string, Col]> = [
  ["time", col("Int", "time", { origin: "time" })],
  ["workspace_id", stringCol("workspace_id", [WORKSPACE, OTHER_WORKSPACE])],
  ["namespace_id", stringCol("namespace_id", [...NAMESPACES, "ns_z"])],
  ["identifier", stringCol("identifier", [...IDENTIFIERS, "user_99"])]
]
const ratelimitRaw = new Map<string, Col>([
  ...RATELIMIT_DIMENSIONS,
  ["passed", col("Int", "passed", { origin: "passed" })],
  ["latency", col("Float", "float", { origin: "latency", steps: [0.02, 0.1, 0.5, 1.0, 2.5] })],
  ["override_id", stringCol("override_id", ["", "ovr_user_03", "ovr_ip", "ovr_none"])]
])
const ratelimitRollup = new Map<string, Col>([
  ...RATELIMIT_DIMENSIONS,
  ["passed", col("Int", "int", { steps: COUNT_STEPS })],
  ["total", col("Int", "int", { steps: COUNT_STEPS })],
  ["latency_avg", col("Float", "float", { steps: [0.02, 0.1, 0.5, 1.0, 2.5] })]
])

/** Names no alias may take: a column of some table. */
const COLUMN_NAMES = new Set(
  [verificationRaw, verificationRollup, ratelimitRaw, ratelimitRollup].flatMap((m) => [...m.keys()])
)

const GRAINS = ["minute", "hour", "day", "month"] as const

export const TABLES_OF: Readonly<Record<Family, ReadonlyArray<{ readonly name: string; readonly rollup: boolean }>>> = {
  verifications: [
    { name: "key_verifications_v1", rollup: false },
    ...GRAINS.map((g) => ({ name: `key_verifications_per_${g}_v1`, rollup: true }))
  ],
  ratelimits: [
    { name: "ratelimits_v1", rollup: false },
    ...GRAINS.map((g) => ({ name: `ratelimits_per_${g}_v1`, rollup: true }))
  ]
}

interface Source {
  /** FROM, in keymeter's text and DuckDB's. */
  readonly ch: string
  readonly dk: string
  readonly cols: ReadonlyMap<string, Col>
  /** What keymeter's text may qualify a column with. */
  readonly qualifier: string | undefined
}

// ---------------------------------------------------------------------------------------------
// Queries

export interface GeneratedQuery {
  readonly family: Family
  /** keymeter's text. */
  readonly text: string
  /** DuckDB's text. */
  readonly duck: string
  /** Whether the ORDER BY orders the answer totally (else it is compared as a multiset). */
  readonly ordered: boolean
  /** What template made it. */
  readonly template: string
}

/** One output column of a SELECT. */
interface Item {
  readonly alias: string
  readonly e: D
  readonly col: Col
  readonly aggregate: boolean
}

interface OrderKey {
  readonly ch: string
  readonly dk: string
  readonly descending: boolean
}

interface Select {
  readonly sel: Sel
  readonly distinct: boolean
  readonly items: ReadonlyArray<Item>
  readonly where: D | undefined
  readonly groupBy: ReadonlyArray<{ readonly ch: string; readonly dk: string }>
  readonly having: D | undefined
  readonly order: ReadonlyArray<OrderKey>
  readonly limit: { readonly n: number; readonly offset: number | undefined; readonly form: number } | undefined
  /** `SELECT *` (the items are the source's columns). */
  readonly star: boolean
}

interface Written {
  readonly ch: string
  readonly dk: string
  /** Whether its ORDER BY orders it totally (a one-row answer is ordered too). */
  readonly ordered: boolean
  /** Output columns, by name. */
  readonly cols: ReadonlyArray<readonly [string, Col]>
}

/** The state of one query being generated: its aliases, CTEs. */
class Query {
  private readonly used = new Set<string>()
  /** SELECTs made so far: names each one's unnested column apart. */
  selects = 0
  readonly ctes: Array<
    { readonly name: string; readonly ch: string; readonly dk: string; readonly cols: Map<string, Col> }
  > = []
  constructor(readonly r: Rng, readonly family: Family, readonly times: ReadonlyArray<number>) {}

  /** A fresh alias: never a column's name, never another alias of the query. */
  alias(hint: string): string {
    let name = hint
    for (let n = 2; this.used.has(name) || COLUMN_NAMES.has(name); n++) name = `${hint}_${n}`
    this.used.add(name)
    return name
  }

  /** A public table of the family. */
  table(rollup?: boolean): Source {
    const r = this.r
    const tables = TABLES_OF[this.family].filter((t) => rollup === undefined || t.rollup === rollup)
    const table = rollup === undefined && r.chance(0.55) ? tables[0]! : r.pick(tables)
    const cols = this.family === "verifications"
      ? table.rollup ? verificationRollup : verificationRaw
      : table.rollup
      ? ratelimitRollup
      : ratelimitRaw
    const form = r.int(0, 5)
    if (form === 0) return { ch: `${table.name} AS t`, dk: table.name, cols, qualifier: "t" }
    if (form === 1) return { ch: `${table.name} v`, dk: table.name, cols, qualifier: "v" }
    return { ch: table.name, dk: table.name, cols, qualifier: form === 2 ? table.name : undefined }
  }
}

/** One SELECT being generated: its source, and the one array it joins, if any. */
class Sel {
  /** The array column joined, once an arrayJoin was generated (perhaps not kept). */
  arrayJoin: string | undefined
  /** DuckDB's name of the unnested column: apart from any other SELECT's. */
  readonly joined: string
  constructor(readonly q: Query, readonly src: Source | undefined) {
    this.joined = `__aj${q.selects++}`
  }

  get r(): Rng {
    return this.q.r
  }

  column(name: string): D {
    const c = this.src!.cols.get(name)!
    const qualifier = this.src!.qualifier
    const ch = qualifier !== undefined && this.r.chance(0.3) ? `${qualifier}.${name}` : name
    return mk(ch, `"${name}"`, c.ty)
  }

  names(...kinds: ReadonlyArray<Kind>): Array<string> {
    return [...this.src!.cols].filter(([, c]) => kinds.includes(c.kind)).map(([name]) => name)
  }

  /** Any column; `workspace_id` (one value) less often. */
  anyColumn(): string {
    return this.r.weighted(
      [...this.src!.cols.keys()].map((name) => [name, name === "workspace_id" ? 0.25 : 1] as const)
    )
  }

  /** A column of one of `kinds`, if the source has one. */
  some(...kinds: ReadonlyArray<Kind>): string | undefined {
    const names = this.names(...kinds)
    return names.length === 0 ? undefined : this.r.pick(names)
  }

  /** `arrayJoin(array)`: DuckDB reads the source unnested. */
  arrayJoinOf(name: string): D | undefined {
    if (this.arrayJoin !== undefined && this.arrayJoin !== name) return undefined
    this.arrayJoin = name
    const a = this.column(name)
    return mk(`${spell(this.r, "arrayJoin")}(${a.ch})`, `"${this.joined}"`, "String")
  }

  /** Whether DuckDB's text of the SELECT reads the unnested column. */
  joins(texts: ReadonlyArray<string>): boolean {
    return this.arrayJoin !== undefined && texts.some((t) => t.includes(`"${this.joined}"`))
  }

  /** DuckDB's FROM: the source, unnested when the SELECT joins an array. */
  fromDk(joins: boolean): string {
    if (!joins) return this.src!.dk
    return `(SELECT *, unnest("${this.arrayJoin}") AS "${this.joined}" FROM ${this.src!.dk}) AS "__src"`
  }
}

// ---------------------------------------------------------------------------------------------
// Expressions of a SELECT

interface Gen {
  readonly e: D
  readonly col: Col
  readonly hint: string
}

const g = (e: D, c: Col, hint: string): Gen => ({ e, col: c, hint })
const intCol = (steps: ReadonlyArray<number> = COUNT_STEPS) => col("Int", "int", { steps })
const floatCol = (steps: ReadonlyArray<number> = LATENCY_STEPS) => col("Float", "float", { steps })
const strCol = (domain: ReadonlyArray<string>, origin?: string) => col("String", "string", { domain, origin })

const HINTS: Readonly<Record<string, string>> = {
  key_space_id: "api",
  key_id: "kid",
  identity_id: "ident",
  external_id: "ext",
  outcome: "res",
  region: "reg",
  workspace_id: "ws",
  namespace_id: "ns",
  identifier: "who",
  override_id: "ovr",
  tags: "tg",
  time: "ts",
  spent_credits: "credits",
  latency: "lat",
  latency_avg: "lat_avg",
  count: "cnt",
  passed: "ok",
  total: "tot"
}
const hintOf = (name: string) => HINTS[name] ?? `${name}_x`

/** A time constant: a literal (on a boundary now and then), an event's time, or `now()` and INTERVALs. */
const timeConstant = (s: Sel): D => {
  const r = s.r
  const x = r.next()
  if (x < 0.3) {
    const t = r.int(START - 2 * DAY, NOW + DAY)
    const align = r.pick([1, 1, MINUTE, HOUR, DAY])
    return int(Math.floor(t / align) * align)
  }
  if (x < 0.4) return int(r.pick(s.q.times))
  if (x < 0.7) {
    const unit = r.weighted([["DAY", 5], ["HOUR", 3], ["WEEK", 1], ["MINUTE", 1]] as const)
    const n = unit === "DAY" ? r.int(0, 45) : unit === "HOUR" ? r.int(1, 300) : unit === "WEEK" ? r.int(1, 6) : 90
    return shift(r, NOW_D, "-", n, unit)
  }
  if (x < 0.8) return shift(r, bucket(r, NOW_D, r.pick(BUCKETS.slice(3))), "-", r.int(0, 30), "DAY")
  if (x < 0.87) return shift(r, TODAY_D, "-", r.int(1, 20), "DAY")
  if (x < 0.95) return shift(r, NOW_D, "-", r.int(1, 2), r.pick(["MONTH", "QUARTER"] as const))
  return shift(r, bucket(r, NOW_D, BUCKETS[10]), "-", 1, "MONTH")
}

/** A condition on a time value. */
const timeCondition = (s: Sel, t: D): D => {
  const r = s.r
  const a = timeConstant(s)
  switch (r.int(0, 9)) {
    case 0:
      return cmp(">=", t, a)
    case 1:
      return cmp(r.pick(["<", "<="] as const), t, a)
    case 2:
      return cmp(">", t, a)
    case 3:
      return mk(`(${a.ch} <= ${t.ch})`, `(${a.dk} <= ${t.dk})`, "Bool")
    case 4:
    case 5: {
      const b = timeConstant(s)
      return and(cmp(">=", t, a), cmp("<", t, b))
    }
    case 6:
      return between(t, a, timeConstant(s), r.chance(0.2))
    case 7:
      return cmp("=", t, int(r.pick(s.q.times)))
    case 8: {
      const which = r.pick(BUCKETS)
      const at = r.pick(s.q.times)
      return cmp("=", bucket(r, t, which), mk(`${which[0]}(${at}${which[1]})`, which[2](String(at)), "Int"))
    }
    default:
      return r.chance(0.5)
        ? between(toHour(t), int(r.int(0, 12)), int(r.int(8, 23)), false)
        : inList(toDayOfWeek(t), [int(6), int(7)], r.chance(0.3))
  }
}

/** A LIKE pattern matching (some of) `value`, with `\` escaping underscores now and then. */
const likePattern = (r: Rng, value: string): string => {
  const escape = (s: string) => (r.chance(0.4) ? s.replace(/_/g, "\\_") : s)
  switch (r.int(0, 5)) {
    case 0:
      return escape(value.slice(0, r.int(1, Math.max(1, value.length - 1)))) + "%"
    case 1:
      return "%" + escape(value.slice(r.int(1, Math.max(1, value.length - 1))))
    case 2: {
      if (value.length === 0) return "_%"
      const i = r.int(0, value.length - 1)
      return escape(value.slice(0, i)) + "_" + escape(value.slice(i + 1))
    }
    case 3:
      return "%" + escape(value.slice(1, Math.max(2, value.length - 1))) + "%"
    case 4:
      return escape(value)
    default:
      return r.pick(["%", "%\\_0%", "key%", "%_0_", "sk\\_%", "%:%", "user\\_0%", "ip:10.0.0._"])
  }
}

const swapCase = (r: Rng, s: string) => [...s].map((c) => (r.chance(0.5) ? c.toUpperCase() : c.toLowerCase())).join("")

/** A condition on one column of the source (or a subquery). */
const atom = (s: Sel, depth: number): D => {
  const r = s.r
  if (depth === 0 && r.chance(0.1)) {
    const sub = inSubquery(s)
    if (sub !== undefined) return sub
  }
  const name = s.anyColumn()
  const c = s.src!.cols.get(name)!
  const x = s.column(name)
  switch (c.kind) {
    case "time":
      return timeCondition(s, x)
    case "string": {
      const domain = c.domain.length > 0 ? c.domain : [""]
      const v = r.pick(domain)
      switch (r.int(0, 9)) {
        case 0:
        case 1:
          return cmp("=", x, str(v), r.chance(0.1) ? "==" : "=")
        case 2:
          return cmp("!=", x, str(v), r.chance(0.3) ? "<>" : "!=")
        case 3:
        case 4:
          return inList(x, r.some(domain, r.int(1, 4)).map(str), r.chance(0.25))
        case 5:
        case 6:
          return like(x, likePattern(r, v), r.chance(0.2), false)
        case 7:
          return /^[\x20-\x7e]*$/.test(v)
            ? like(x, swapCase(r, likePattern(r, v)), r.chance(0.2), true)
            : cmp("<", x, str(v))
        case 8:
          if (r.chance(0.5)) {
            return call(
              "startsWith",
              [x, str(v.slice(0, 4))],
              `starts_with(${x.dk}, ${dkString(v.slice(0, 4))})`,
              "Bool"
            )
          }
          return r.chance(0.5)
            ? mk(`notEmpty(${x.ch})`, `(${x.dk} <> '')`, "Bool")
            : mk(`empty(${x.ch})`, `(${x.dk} = '')`, "Bool")
        default:
          return cmp(r.pick([">", ">=", "<"] as const), x, str(v))
      }
    }
    case "tags": {
      const t = r.pick(c.domain)
      switch (r.int(0, 7)) {
        case 0:
        case 1:
          return mk(`has(${x.ch}, ${chString(t)})`, `list_contains(${x.dk}, ${dkString(t)})`, "Bool")
        case 2:
          return not(mk(`has(${x.ch}, ${chString(t)})`, `list_contains(${x.dk}, ${dkString(t)})`, "Bool"))
        case 3: {
          const items = r.some(c.domain, r.int(1, 3))
          const a = arr(items)
          return r.chance(0.5)
            ? mk(`hasAny(${x.ch}, ${a.ch})`, `list_has_any(${x.dk}, ${a.dk})`, "Bool")
            : mk(`hasAll(${x.ch}, ${a.ch})`, `list_has_all(${x.dk}, ${a.dk})`, "Bool")
        }
        case 4:
          return r.chance(0.5)
            ? mk(`empty(${x.ch})`, `(len(${x.dk}) = 0)`, "Bool")
            : mk(`notEmpty(${x.ch})`, `(len(${x.dk}) > 0)`, "Bool")
        case 5:
          return cmp(
            r.pick([">=", "=", "<"] as const),
            mk(`length(${x.ch})`, `CAST(len(${x.dk}) AS BIGINT)`, "Int"),
            int(r.int(0, 2))
          )
        case 6: {
          const j = s.arrayJoinOf(name)
          if (j !== undefined) return r.chance(0.5) ? cmp("=", j, str(t)) : like(j, likePattern(r, t), false, false)
          return cmp("=", x, arr([t]))
        }
        default:
          return cmp(r.pick(["=", "!="] as const), x, arr(r.pick([[], ["pro"], ["beta", "pro"], ["eu", "free"]])))
      }
    }
    case "int": {
      const step = r.pick(c.steps.length > 0 ? c.steps : COUNT_STEPS)
      switch (r.int(0, 7)) {
        case 0:
        case 1:
          return cmp(r.pick([">", ">=", "<", "<=", "=", "!="] as const), x, int(step))
        case 2:
          return between(x, int(step), int(step + r.pick([0, 1, 5, 20])), r.chance(0.25))
        case 3:
          return inList(x, r.some(c.steps.length > 0 ? c.steps : COUNT_STEPS, r.int(1, 3)).map(int), r.chance(0.25))
        case 4:
          return cmp("=", mod(x, int(2)), int(r.int(0, 1)))
        case 5:
          return cmp(">", arith("*", x, int(2)), int(step))
        case 6:
          return cmp("<=", arith("+", x, int(1)), float(step + 0.5))
        default:
          return r.chance(0.5) ? x : not(x)
      }
    }
    case "float": {
      const step = r.pick(c.steps.length > 0 ? c.steps : LATENCY_STEPS)
      switch (r.int(0, 5)) {
        case 0:
        case 1:
          return cmp(r.pick(["<", ">", "<=", ">="] as const), x, float(step))
        case 2:
          return between(x, float(step), float(step * r.pick([2, 4, 10])), r.chance(0.2))
        case 3:
          return cmp(">", arith("*", x, int(1000)), int(Math.round(step * 1000)))
        case 4:
          return cmp("<", div(x, int(2)), float(step))
        default:
          return cmp("=", mk(`floor(${x.ch})`, `floor(${x.dk})`, "Float"), int(Math.floor(step)))
      }
    }
    case "passed":
      switch (r.int(0, 4)) {
        case 0:
          return cmp("=", x, int(1))
        case 1:
          return cmp("=", x, int(0))
        case 2:
          return x
        case 3:
          return not(x)
        default:
          return cmp("!=", x, int(0))
      }
  }
}

/** A WHERE condition: one to three atoms, joined by AND and OR, negated now and then. */
const rowCondition = (s: Sel, depth = 0): D => {
  const r = s.r
  const x = r.next()
  if (x < 0.4) return atom(s, depth)
  if (x < 0.7) return and(atom(s, depth), atom(s, depth))
  if (x < 0.82) return or(atom(s, depth), atom(s, depth))
  if (x < 0.9) return and(or(atom(s, depth), atom(s, depth)), atom(s, depth))
  if (x < 0.95) return not(atom(s, depth))
  return and(atom(s, depth), atom(s, depth), atom(s, depth))
}

/** `x IN (SELECT …)` on a column holding a public one, over a table of the family (or a CTE). */
const inSubquery = (s: Sel): D | undefined => {
  const q = s.q
  const r = s.r
  const candidates = [...s.src!.cols].filter(([, c]) =>
    c.kind === "string" && c.origin !== undefined && c.origin !== "workspace_id"
  )
  if (candidates.length === 0) return undefined
  const [name, c] = r.pick(candidates)
  const origin = c.origin!
  const x = s.column(name)
  const negated = r.chance(0.3)
  const wrap = (sub: Written) =>
    mk(
      `(${x.ch} ${negated ? "NOT " : ""}IN (${sub.ch}))`,
      `(${x.dk} ${negated ? "NOT " : ""}IN (${sub.dk}))`,
      "Bool"
    )
  // A CTE holding the column, now and then.
  const cte = q.ctes.find((t) => [...t.cols.values()].some((v) => v.origin === origin))
  if (cte !== undefined && r.chance(0.6)) {
    const [cteColumn] = [...cte.cols].find(([, v]) => v.origin === origin)!
    return wrap({
      ch: `SELECT ${cteColumn} FROM ${cte.name}`,
      dk: `SELECT "${cteColumn}" FROM "${cte.name}"`,
      ordered: false,
      cols: []
    })
  }
  const table = q.table()
  if (!table.cols.has(origin)) return undefined
  const inner = new Sel(q, table)
  const v = inner.column(origin)
  const where = r.chance(0.85) ? rowCondition(inner, 1) : undefined
  const alias = q.alias(hintOf(origin))
  let select: Select
  switch (r.int(0, 3)) {
    case 0:
      select = plain(inner, [{ alias, e: v, col: c, aggregate: false }], where, false)
      break
    case 1:
      select = plain(inner, [{ alias, e: v, col: c, aggregate: false }], where, true)
      break
    case 2: {
      const n = numericAggregate(inner)
      select = {
        ...plain(inner, [{ alias, e: v, col: c, aggregate: false }], where, false),
        groupBy: [{ ch: alias, dk: v.dk }],
        having: cmp(">", n.e, int(r.pick(n.col.steps.length > 0 ? n.col.steps : COUNT_STEPS)))
      }
      break
    }
    default: {
      const n = aggregate(inner, [])
      select = {
        ...plain(inner, [{ alias, e: v, col: c, aggregate: false }], where, false),
        groupBy: [{ ch: alias, dk: v.dk }],
        order: [
          { ch: n.e.ch, dk: val(n.e).dk, descending: r.chance(0.7) },
          { ch: alias, dk: `"${alias}"`, descending: r.chance(0.5) }
        ],
        limit: { n: r.int(1, 6), offset: r.chance(0.2) ? r.int(1, 3) : undefined, form: r.int(0, 2) }
      }
    }
  }
  return wrap(write(select))
}

/** An aggregate whose value is a number. */
const numericAggregate = (s: Sel): Gen => {
  for (;;) {
    const a = aggregate(s, [])
    if (numeric(a.e.ty)) return a
  }
}

const plain = (sel: Sel, items: ReadonlyArray<Item>, where: D | undefined, distinct: boolean): Select => ({
  sel,
  distinct,
  items,
  where,
  groupBy: [],
  having: undefined,
  order: [],
  limit: undefined,
  star: false
})

/** A group key (or a DISTINCT column): a column, a bucket of it, a CASE over it, … */
const dimension = (s: Sel): Gen => {
  const r = s.r
  const names = [...s.src!.cols.keys()]
  const name = r.weighted(names.map((n) => {
    const kind = s.src!.cols.get(n)!.kind
    return [
      n,
      n === "workspace_id" ? 0.3 : kind === "time" ? 4 : kind === "string" ? 2 : kind === "tags" ? 2 : 1
    ] as const
  }))
  const c = s.src!.cols.get(name)!
  const x = s.column(name)
  const hint = hintOf(name)
  switch (c.kind) {
    case "time": {
      const y = r.next()
      if (y < 0.1) return g(x, c, hint)
      if (y < 0.2) return g(toHour(x), intCol([0, 6, 9, 12, 18, 23]), "hr")
      if (y < 0.27) return g(toDayOfWeek(x), intCol([1, 3, 5, 6, 7]), "dow")
      return g(bucket(r, x), col("Int", "time", { origin: undefined }), "bucket")
    }
    case "string": {
      const y = r.next()
      if (y < 0.7) return g(x, c, hint)
      if (y < 0.76) {
        return g(mk(`lower(${x.ch})`, `lower(${x.dk})`, "String"), strCol(c.domain.map((v) => v.toLowerCase())), hint)
      }
      if (y < 0.82) {
        return g(
          ifThen(cmp("=", x, str("")), str("(none)"), x, "String"),
          strCol(["(none)", ...c.domain]),
          hint
        )
      }
      if (y < 0.88) {
        const other = s.some("string") ?? name
        const o = s.column(other)
        return r.chance(0.5)
          ? g(call("concat", [x, str(":"), o], `concat(${x.dk}, ':', ${o.dk})`, "String"), strCol([]), "pair")
          : g(mk(`(${x.ch} || '/' || ${o.ch})`, `(${x.dk} || '/' || ${o.dk})`, "String"), strCol([]), "pair")
      }
      if (y < 0.94) {
        const v = r.pick(c.domain.length > 0 ? c.domain : ["k"]).slice(0, 4)
        return g(
          call("startsWith", [x, str(v)], `starts_with(${x.dk}, ${dkString(v)})`, "Bool"),
          intCol([0, 1]),
          "starts"
        )
      }
      return g(mk(`length(${x.ch})`, `CAST(strlen(${x.dk}) AS BIGINT)`, "Int"), intCol([0, 4, 6, 8, 10]), "len")
    }
    case "tags": {
      const y = r.next()
      if (y < 0.55) {
        const j = s.arrayJoinOf(name)
        if (j !== undefined) return g(j, strCol(c.domain), "tag")
      }
      if (y < 0.75) return g(x, c, hint)
      if (y < 0.88) {
        return g(mk(`length(${x.ch})`, `CAST(len(${x.dk}) AS BIGINT)`, "Int"), intCol([0, 1, 2, 3]), "ntags")
      }
      const t = r.pick(c.domain)
      return g(
        mk(`has(${x.ch}, ${chString(t)})`, `list_contains(${x.dk}, ${dkString(t)})`, "Bool"),
        intCol([0, 1]),
        "has"
      )
    }
    case "int": {
      const y = r.next()
      const step = r.pick(c.steps.length > 0 ? c.steps : COUNT_STEPS)
      if (y < 0.4) return g(x, c, hint)
      if (y < 0.6) return g(intDiv(x, int(r.pick([2, 5, 10]))), intCol(c.steps), "band")
      if (y < 0.75) return g(cmp(">", x, int(step)), intCol([0, 1]), "above")
      if (y < 0.85) return g(mod(x, int(3)), intCol([0, 1, 2]), "mod3")
      return g(
        caseWhen([[cmp("=", x, int(0)), str("none")], [cmp("<", x, int(5)), str("low")]], str("high"), "String"),
        strCol(["none", "low", "high"]),
        "level"
      )
    }
    case "float": {
      const y = r.next()
      const [a, b] = r.some(c.steps, 2).sort((u, v) => u - v)
      if (y < 0.45) {
        return g(
          caseWhen([[cmp("<", x, float(a!)), str("fast")], [cmp("<", x, float(b!)), str("ok")]], str("slow"), "String"),
          strCol(["fast", "ok", "slow"]),
          "speed"
        )
      }
      if (y < 0.6) {
        return g(
          mk(
            `multiIf(${x.ch} < ${float(a!).ch}, 'fast', ${x.ch} < ${float(b!).ch}, 'ok', 'slow')`,
            `CASE WHEN ${x.dk} < ${float(a!).dk} THEN 'fast' WHEN ${x.dk} < ${float(b!).dk} THEN 'ok' ELSE 'slow' END`,
            "String"
          ),
          strCol(["fast", "ok", "slow"]),
          "speed"
        )
      }
      if (y < 0.8) {
        return g(
          mk(`floor(${x.ch} / 10)`, `floor(${x.dk} / 10)`, "Float"),
          floatCol([0.0, 1.0, 2.0, 5.0]),
          "decile"
        )
      }
      if (y < 0.9) {
        return g(mk(`toInt64(${x.ch})`, `CAST(trunc(${x.dk}) AS BIGINT)`, "Int"), intCol([0, 1, 5, 20]), "whole")
      }
      return g(cmp(">", x, float(a!)), intCol([0, 1]), "slow")
    }
    case "passed":
      return r.chance(0.5)
        ? g(x, col("Int", "passed"), hint)
        : g(
          ifThen(cmp("=", x, int(1)), str("passed"), str("blocked"), "String"),
          strCol(["passed", "blocked"]),
          "verdict"
        )
  }
}

/** An aggregate: a count, a sum, an extreme, a distinct count, conditional ones, and arithmetic over them. */
const aggregate = (s: Sel, items: ReadonlyArray<Item>): Gen => {
  const r = s.r
  const rowCond = () => (r.chance(0.7) ? atom(s, 1) : rowCondition(s, 1))
  const y = r.next()
  if (y < 0.12) {
    return r.chance(0.5)
      ? g(mk(`${spell(r, "count")}()`, "count(*)", "Int"), intCol(), "n")
      : g(mk("count(*)", "count(*)", "Int"), intCol(), "n")
  }
  if (y < 0.2) {
    const c = rowCond()
    return g(mk(`${spell(r, "countIf")}(${c.ch})`, `count(*) FILTER (WHERE ${cond(c).dk})`, "Int"), intCol(), "hits")
  }
  if (y < 0.24) {
    const c = rowCond()
    return r.chance(0.5)
      ? g(
        mk(`count(CASE WHEN ${c.ch} THEN 1 END)`, `count(CASE WHEN ${cond(c).dk} THEN 1 END)`, "Int"),
        intCol(),
        "hits"
      )
      : g(
        mk(`sum(if(${c.ch}, 1, 0))`, `coalesce(sum(CASE WHEN ${cond(c).dk} THEN 1 ELSE 0 END), 0)`, "Int"),
        intCol(),
        "hits"
      )
  }
  if (y < 0.28 && items.some((i) => i.aggregate)) {
    // Arithmetic over aggregates: a ratio, a difference.
    const c = rowCond()
    return r.chance(0.6)
      ? g(
        mk(
          `(countIf(${c.ch}) / count())`,
          `(CAST(count(*) FILTER (WHERE ${cond(c).dk}) AS DOUBLE) / count(*))`,
          "Float"
        ),
        floatCol([0.1, 0.25, 0.5, 0.75, 0.9]),
        "share"
      )
      : g(mk("(count() * 2 + 1)", "(count(*) * 2 + 1)", "Int"), intCol(), "odd")
  }
  const name = s.anyColumn()
  const c = s.src!.cols.get(name)!
  const x = s.column(name)
  const hint = hintOf(name)
  const empty = c.ty === "String" ? "''" : c.ty === "Array" ? "CAST([] AS VARCHAR[])" : "0"
  const extreme = (fn: "min" | "max", conditional: boolean): D => {
    if (!conditional) return mk(`${spell(r, fn)}(${x.ch})`, `coalesce(${fn}(${val(x).dk}), ${empty})`, x.ty)
    const k = rowCond()
    return mk(
      `${fn}If(${x.ch}, ${k.ch})`,
      `coalesce(${fn}(${val(x).dk}) FILTER (WHERE ${cond(k).dk}), ${empty})`,
      x.ty
    )
  }
  switch (c.kind) {
    case "string": {
      switch (r.int(0, 5)) {
        case 0:
          return g(mk(`${spell(r, "uniq")}(${x.ch})`, `count(DISTINCT ${x.dk})`, "Int"), intCol(), `${hint}s`)
        case 1:
          return g(mk(`uniqExact(${x.ch})`, `count(DISTINCT ${x.dk})`, "Int"), intCol(), `${hint}s`)
        case 2:
          return g(mk(`count(DISTINCT ${x.ch})`, `count(DISTINCT ${x.dk})`, "Int"), intCol(), `${hint}s`)
        case 3: {
          const k = rowCond()
          return g(
            mk(`uniqIf(${x.ch}, ${k.ch})`, `count(DISTINCT ${x.dk}) FILTER (WHERE ${cond(k).dk})`, "Int"),
            intCol(),
            `${hint}s`
          )
        }
        case 4:
          return g(extreme(r.pick(["min", "max"] as const), false), c, `${hint}_edge`)
        default:
          return g(extreme(r.pick(["min", "max"] as const), true), c, `${hint}_edge`)
      }
    }
    case "tags": {
      switch (r.int(0, 4)) {
        case 0:
          return g(mk(`count(DISTINCT ${x.ch})`, `count(DISTINCT ${x.dk})`, "Int"), intCol(), "tagsets")
        case 1:
          return g(extreme(r.pick(["min", "max"] as const), false), c, "tg_edge")
        case 2:
          return g(
            mk(`sum(length(${x.ch}))`, `coalesce(sum(len(${x.dk})), 0)`, "Int"),
            intCol(),
            "ntags"
          )
        default: {
          const t = r.pick(c.domain)
          return g(
            mk(
              `sum(has(${x.ch}, ${chString(t)}))`,
              `coalesce(sum(CAST(list_contains(${x.dk}, ${dkString(t)}) AS BIGINT)), 0)`,
              "Int"
            ),
            intCol(),
            "tagged"
          )
        }
      }
    }
    case "time": {
      switch (r.int(0, 4)) {
        case 0:
        case 1:
          return g(extreme(r.pick(["min", "max"] as const), false), col("Int", "time"), r.pick(["first", "last"]))
        case 2:
          return g(extreme(r.pick(["min", "max"] as const), true), col("Int", "time"), "edge")
        case 3:
          return g(
            mk(`(max(${x.ch}) - min(${x.ch}))`, `(coalesce(max(${x.dk}), 0) - coalesce(min(${x.dk}), 0))`, "Int"),
            intCol([0, HOUR, DAY, 7 * DAY]),
            "span"
          )
        default: {
          const b = bucket(r, x)
          return g(mk(`uniq(${b.ch})`, `count(DISTINCT ${b.dk})`, "Int"), intCol(), "buckets")
        }
      }
    }
    case "int":
    case "passed": {
      const steps = c.kind === "passed" ? [0, 1, 5, 20, 100] : c.steps.map((v) => v * 3)
      switch (r.int(0, 9)) {
        case 0:
        case 1:
          return g(mk(`${spell(r, "sum")}(${x.ch})`, `coalesce(sum(${x.dk}), 0)`, "Int"), intCol(steps), `${hint}_sum`)
        case 2: {
          const k = rowCond()
          return g(
            mk(
              `${spell(r, "sumIf")}(${x.ch}, ${k.ch})`,
              `coalesce(sum(${x.dk}) FILTER (WHERE ${cond(k).dk}), 0)`,
              "Int"
            ),
            intCol(steps),
            `${hint}_sum`
          )
        }
        case 3:
          return g(mk(`avg(${x.ch})`, `avg(${x.dk})`, "Float"), floatCol([0.25, 0.5, 1.0, 2.5, 10.0]), `${hint}_avg`)
        case 4: {
          const k = rowCond()
          return g(
            mk(`avgIf(${x.ch}, ${k.ch})`, `avg(${x.dk}) FILTER (WHERE ${cond(k).dk})`, "Float"),
            floatCol([0.25, 0.5, 1.0, 2.5]),
            `${hint}_avg`
          )
        }
        case 5:
          return g(extreme(r.pick(["min", "max"] as const), r.chance(0.3)), intCol(c.steps), `${hint}_edge`)
        case 6:
          return g(
            mk(`sum(${x.ch} * 2 + 1)`, `coalesce(sum(${x.dk} * 2 + 1), 0)`, "Int"),
            intCol(steps),
            `${hint}_odd`
          )
        case 7:
          return g(
            mk(
              `intDiv(sum(${x.ch}), 3)`,
              `CAST(trunc(CAST(coalesce(sum(${x.dk}), 0) AS DOUBLE) / 3) AS BIGINT)`,
              "Int"
            ),
            intCol(steps),
            `${hint}_third`
          )
        case 8: {
          const t = r.pick(c.steps.length > 0 ? c.steps : [0])
          return g(
            mk(`countIf(${x.ch} > ${t})`, `count(*) FILTER (WHERE ${x.dk} > ${t})`, "Int"),
            intCol(),
            `${hint}_over`
          )
        }
        default:
          return g(
            mk(`(sum(${x.ch}) / count())`, `(CAST(coalesce(sum(${x.dk}), 0) AS DOUBLE) / count(*))`, "Float"),
            floatCol([0.25, 0.5, 1.0, 2.5, 10.0]),
            `${hint}_mean`
          )
      }
    }
    case "float": {
      switch (r.int(0, 6)) {
        case 0:
        case 1:
          return g(mk(`${spell(r, "avg")}(${x.ch})`, `avg(${x.dk})`, "Float"), floatCol(c.steps), `${hint}_avg`)
        case 2: {
          const k = rowCond()
          return g(
            mk(`avgIf(${x.ch}, ${k.ch})`, `avg(${x.dk}) FILTER (WHERE ${cond(k).dk})`, "Float"),
            floatCol(c.steps),
            `${hint}_avg`
          )
        }
        case 3:
          return g(extreme(r.pick(["min", "max"] as const), r.chance(0.3)), floatCol(c.steps), `${hint}_edge`)
        case 4:
          return g(
            mk(`sum(${x.ch})`, `coalesce(sum(${x.dk}), 0)`, "Float"),
            floatCol(c.steps.map((v) => v * 20)),
            `${hint}_sum`
          )
        case 5: {
          // A rollup's weighted mean: the raw table's mean latency, from its buckets.
          const weight = s.src!.cols.get("count")?.kind === "int"
            ? "count"
            : s.src!.cols.get("total")
            ? "total"
            : undefined
          if (weight !== undefined && name === "latency_avg") {
            const w = s.column(weight)
            return g(
              mk(
                `(sum(${w.ch} * ${x.ch}) / sum(${w.ch}))`,
                `(coalesce(sum(${w.dk} * ${x.dk}), 0) / coalesce(sum(${w.dk}), 0))`,
                "Float"
              ),
              floatCol(c.steps),
              "lat_mean"
            )
          }
          return g(
            mk(`(sum(${x.ch}) / count())`, `(coalesce(sum(${x.dk}), 0) / count(*))`, "Float"),
            floatCol(c.steps),
            `${hint}_mean`
          )
        }
        default:
          return g(
            mk(`(max(${x.ch}) - min(${x.ch}))`, `(coalesce(max(${x.dk}), 0) - coalesce(min(${x.dk}), 0))`, "Float"),
            floatCol(c.steps),
            `${hint}_spread`
          )
      }
    }
  }
}

/** A value of one row: a column, or a scalar function of it. */
const rowValue = (s: Sel): Gen => {
  const r = s.r
  const name = s.anyColumn()
  const c = s.src!.cols.get(name)!
  const x = s.column(name)
  const hint = hintOf(name)
  if (r.chance(0.35)) return g(x, c, hint)
  switch (c.kind) {
    case "time": {
      switch (r.int(0, 6)) {
        case 0:
          return g(bucket(r, x), col("Int", "time"), "bucket")
        case 1:
          return g(
            shift(
              r,
              x,
              r.pick(["+", "-"] as const),
              r.int(1, 14),
              r.pick(["MONTH", "QUARTER", "YEAR", "WEEK", "DAY"] as const)
            ),
            col("Int", "time"),
            "moved"
          )
        case 2:
          return g(mk(`toUnixTimestamp(${x.ch})`, `(${x.dk} // 1000)`, "Int"), intCol(), "unix")
        case 3:
          return g(arith("-", x, bucket(r, x, BUCKETS[4])), intCol([0, HOUR, 12 * HOUR]), "into_day")
        case 4:
          return g(toHour(x), intCol([0, 12]), "hr")
        case 5:
          return g(toDayOfWeek(x), intCol([1, 7]), "dow")
        default:
          return g(intDiv(x, int(1000)), intCol(), "secs")
      }
    }
    case "string": {
      switch (r.int(0, 5)) {
        case 0:
          return g(mk(`upper(${x.ch})`, `upper(${x.dk})`, "String"), strCol([]), `${hint}_up`)
        case 1: {
          const o = s.column(s.some("string") ?? name)
          return g(call("concat", [x, str("-"), o], `concat(${x.dk}, '-', ${o.dk})`, "String"), strCol([]), "joined")
        }
        case 2:
          return g(mk(`length(${x.ch})`, `CAST(strlen(${x.dk}) AS BIGINT)`, "Int"), intCol(), "len")
        case 3:
          return g(ifThen(cmp("=", x, str("")), str("-"), x, "String"), strCol([]), hint)
        case 4:
          return g(
            caseWhen(
              [[like(x, likePattern(r, r.pick(c.domain.length > 0 ? c.domain : ["a"])), false, false), str("match")]],
              undefined,
              "String"
            ),
            strCol(["match"]),
            "matched"
          )
        default: {
          // A CASE without ELSE is NULL where no WHEN holds.
          const v = r.pick(c.domain.length > 0 ? c.domain : [""])
          const k = caseWhen([[cmp("=", x, str(v)), int(1)]], undefined, "Int")
          return r.chance(0.5)
            ? g(mk(`(${k.ch} IS NOT NULL)`, `(${k.dk} IS NOT NULL)`, "Bool"), intCol([0, 1]), "present")
            : g(mk(`(${k.ch} IS NULL)`, `(${k.dk} IS NULL)`, "Bool"), intCol([0, 1]), "missing")
        }
      }
    }
    case "tags": {
      switch (r.int(0, 2)) {
        case 0:
          return g(mk(`length(${x.ch})`, `CAST(len(${x.dk}) AS BIGINT)`, "Int"), intCol([0, 1, 2]), "ntags")
        case 1: {
          const t = r.pick(c.domain)
          return g(
            mk(`has(${x.ch}, ${chString(t)})`, `list_contains(${x.dk}, ${dkString(t)})`, "Bool"),
            intCol([0, 1]),
            "has"
          )
        }
        default: {
          const j = s.arrayJoinOf(name)
          return j === undefined ? g(x, c, hint) : g(j, strCol(c.domain), "tag")
        }
      }
    }
    case "int":
    case "passed": {
      switch (r.int(0, 9)) {
        case 0:
          return g(arith("+", x, int(1)), intCol(c.steps), `${hint}_1`)
        case 1:
          return g(arith("*", x, int(3)), intCol(c.steps), `${hint}_3`)
        case 2:
          return g(neg(x), intCol([-5, -1, 0]), `${hint}_neg`)
        case 3:
          return g(div(x, int(4)), floatCol([0.25, 1.0]), `${hint}_q`)
        case 4:
          return g(intDiv(x, int(3)), intCol(c.steps), `${hint}_i3`)
        case 5:
          return g(mod(x, int(4)), intCol([0, 1, 2, 3]), `${hint}_m4`)
        case 6:
          return r.chance(0.5)
            ? g(call("greatest", [x, int(2)], `greatest(${x.dk}, 2)`, "Int"), intCol(c.steps), `${hint}_g`)
            : g(call("least", [x, int(5)], `least(${x.dk}, 5)`, "Int"), intCol(c.steps), `${hint}_l`)
        case 7:
          return g(call("toString", [x], `CAST(${x.dk} AS VARCHAR)`, "String"), strCol([]), `${hint}_s`)
        case 8:
          return g(call("toFloat64", [x], `CAST(${x.dk} AS DOUBLE)`, "Float"), floatCol(), `${hint}_f`)
        default:
          return g(
            caseWhen([[cmp(">", x, int(0)), str("some")]], undefined, "String"),
            strCol(["some"]),
            `${hint}_some`
          )
      }
    }
    case "float": {
      switch (r.int(0, 6)) {
        case 0:
          return g(arith("*", x, int(1000)), floatCol(), "micros")
        case 1:
          return g(mk(`floor(${x.ch})`, `floor(${x.dk})`, "Float"), floatCol(), "floor")
        case 2:
          return g(mk(`ceil(${x.ch})`, `ceil(${x.dk})`, "Float"), floatCol(), "ceil")
        case 3:
          return g(mk(`toInt64(${x.ch})`, `CAST(trunc(${x.dk}) AS BIGINT)`, "Int"), intCol(), "whole")
        case 4:
          return g(arith("+", x, float(0.5)), floatCol(c.steps), `${hint}_p`)
        case 5:
          return g(mk(`abs(${x.ch} - 10.0)`, `abs(${x.dk} - CAST(10.0 AS DOUBLE))`, "Float"), floatCol(), "dist")
        default:
          return g(
            call("greatest", [x, float(1.5)], `greatest(${x.dk}, CAST(1.5 AS DOUBLE))`, "Float"),
            floatCol(),
            "atleast"
          )
      }
    }
  }
}

const order = (r: Rng, items: ReadonlyArray<Item>, groupKeys: boolean): Array<OrderKey> =>
  r.shuffle(items).map((item) => {
    const position = items.indexOf(item) + 1
    const x = r.next()
    const ch = x < 0.6 ? item.alias : x < 0.85 || (!groupKeys && item.aggregate) ? String(position) : item.e.ch
    return { ch, dk: `"${item.alias}"`, descending: r.chance(0.4) }
  })

const limitOf = (r: Rng, max: number): Select["limit"] => ({
  n: r.int(0, max),
  offset: r.chance(0.35) ? r.int(0, 10) : undefined,
  form: r.int(0, 2)
})

/** A grouped SELECT (or an aggregate over all rows). */
const grouped = (
  q: Query,
  src: Source,
  options: { readonly minDims?: number; readonly order?: "full" | "none" | "maybe"; readonly limit?: boolean } = {}
): Select => {
  const r = q.r
  const s = new Sel(q, src)
  const dims: Array<Gen> = []
  const nd = r.int(options.minDims ?? 0, 3)
  for (let i = 0; i < nd * 2 && dims.length < nd; i++) {
    const d = dimension(s)
    if (!dims.some((o) => o.e.ch === d.e.ch || o.e.dk === d.e.dk)) dims.push(d)
  }
  const items: Array<Item> = dims.map((d) => ({ alias: q.alias(d.hint), e: d.e, col: d.col, aggregate: false }))
  // Now and then a key left out of the answer.
  const hidden = dims.length > 0 && r.chance(0.08) ? items.pop() : undefined
  const keys = [...items, ...(hidden ? [hidden] : [])]
  const na = r.int(1, 3)
  for (let i = 0; i < na * 2 && items.length < dims.length + na; i++) {
    const a = aggregate(s, items)
    if (!items.some((o) => o.e.ch === a.e.ch)) {
      items.push({ alias: q.alias(a.hint), e: a.e, col: a.col, aggregate: true })
    }
  }
  // Now and then a function of a key after grouping.
  const key = items.find((i) => !i.aggregate && i.e.ty === "String")
  if (key !== undefined && r.chance(0.1)) {
    items.push({
      alias: q.alias("shout"),
      e: mk(`upper(${key.e.ch})`, `upper(${key.e.dk})`, "String"),
      col: strCol([]),
      aggregate: false
    })
  }
  const where = r.chance(0.7) ? whereOf(s, items) : undefined
  const shuffled = r.chance(0.3) ? r.shuffle(items) : items
  const groupBy = keys.map((k) => {
    const x = r.next()
    const position = shuffled.indexOf(k) + 1
    const ch = k === hidden || x < 0.35 ? k.e.ch : x < 0.8 ? k.alias : String(position)
    return { ch, dk: val(k.e).dk }
  })
  const having = r.chance(0.3) ? havingOf(s, items) : undefined
  const orderMode = options.order ?? "maybe"
  let orderKeys: Array<OrderKey> = []
  if (orderMode === "full" || (orderMode === "maybe" && r.chance(0.85))) {
    orderKeys = order(r, shuffled, true)
    if (r.chance(0.2)) {
      const a = aggregate(s, items)
      orderKeys.unshift({ ch: a.e.ch, dk: val(a.e).dk, descending: r.chance(0.7) })
    }
  }
  const limit = orderKeys.length > 0 && (options.limit ?? r.chance(0.4)) ? limitOf(r, 12) : undefined
  return {
    sel: s,
    distinct: false,
    items: shuffled,
    where,
    groupBy,
    having,
    order: orderKeys,
    limit,
    star: false
  }
}

/** A WHERE: a condition, or now and then one on an alias of the SELECT list (keymeter reads it as its expression). */
const whereOf = (s: Sel, items: ReadonlyArray<Item>): D => {
  const r = s.r
  const aliased = items.filter((i) => !i.aggregate && (i.col.kind === "time" || i.col.kind === "string"))
  if (aliased.length > 0 && r.chance(0.15)) {
    const item = r.pick(aliased)
    const ref = mk(item.alias, item.e.dk, item.e.ty)
    const c = item.col.kind === "time"
      ? timeCondition(s, ref)
      : item.col.domain.length > 0
      ? inList(ref, r.some(item.col.domain, 3).map(str), r.chance(0.3))
      : cmp("!=", ref, str(""))
    return r.chance(0.5) ? and(c, atom(s, 0)) : c
  }
  return rowCondition(s)
}

/** A HAVING: an aggregate (of the list, by its alias, or another) against a threshold. */
const havingOf = (s: Sel, items: ReadonlyArray<Item>): D => {
  const r = s.r
  const one = (): D => {
    const aggregates = items.filter((i) => i.aggregate && numeric(i.e.ty) && i.col.steps.length > 0)
    if (aggregates.length > 0 && r.chance(0.6)) {
      const item = r.pick(aggregates)
      const ref = r.chance(0.6) ? mk(item.alias, val(item.e).dk, item.e.ty) : item.e
      return cmp(r.pick([">", ">=", "<", "<=", "!="] as const), ref, literal(r.pick(item.col.steps), item.e.ty))
    }
    const keys = items.filter((i) => !i.aggregate && i.col.kind === "string" && i.col.domain.length > 0)
    if (keys.length > 0 && r.chance(0.25)) {
      const key = r.pick(keys)
      return inList(mk(key.alias, key.e.dk, key.e.ty), r.some(key.col.domain, 3).map(str), r.chance(0.3))
    }
    const a = aggregate(s, items)
    if (!numeric(a.e.ty)) return cmp("!=", a.e, a.e.ty === "String" ? str("") : arr([]))
    return cmp(
      r.pick([">", ">=", "<"] as const),
      a.e,
      literal(r.pick(a.col.steps.length > 0 ? a.col.steps : [1]), a.e.ty)
    )
  }
  const x = r.next()
  return x < 0.75 ? one() : x < 0.9 ? and(one(), one()) : or(one(), one())
}

/** A SELECT of row values (no aggregate), ordered and most often limited. */
const projection = (q: Query, src: Source, distinct = false): Select => {
  const r = q.r
  const s = new Sel(q, src)
  const items: Array<Item> = []
  const n = r.int(1, distinct ? 3 : 5)
  for (let i = 0; i < n * 2 && items.length < n; i++) {
    const v = distinct ? dimension(s) : rowValue(s)
    if (!items.some((o) => o.e.ch === v.e.ch)) {
      items.push({ alias: q.alias(v.hint), e: v.e, col: v.col, aggregate: false })
    }
  }
  const where = r.chance(distinct ? 0.6 : 0.85) ? whereOf(s, items) : undefined
  return {
    sel: s,
    distinct,
    items,
    where,
    groupBy: [],
    having: undefined,
    order: order(r, items, false),
    limit: r.chance(distinct ? 0.3 : 0.85) ? limitOf(r, 40) : undefined,
    star: false
  }
}

/** `SELECT * FROM table [WHERE …] ORDER BY <every column> LIMIT n`. */
const star = (q: Query, src: Source): Select => {
  const r = q.r
  const s = new Sel(q, { ...src, qualifier: undefined })
  const items = [...src.cols].map(([name, c]): Item => ({ alias: name, e: s.column(name), col: c, aggregate: false }))
  const where = r.chance(0.8) ? rowCondition(s, 1) : undefined
  const keys = r.shuffle(items).map((item): OrderKey => ({
    ch: item.alias,
    dk: `"${item.alias}"`,
    descending: r.chance(0.3)
  }))
  return {
    sel: s,
    distinct: false,
    items,
    where,
    groupBy: [],
    having: undefined,
    order: keys,
    limit: limitOf(r, 25),
    star: true
  }
}

/** The texts of a SELECT. */
const write = (select: Select): Written => {
  const { sel } = select
  const chItem = (item: Item) => {
    const x = sel.r.next()
    return x < 0.85 ? `${item.e.ch} AS ${item.alias}` : `${item.e.ch} ${item.alias}`
  }
  const ch: Array<string> = []
  const dk: Array<string> = []
  const distinct = select.distinct ? "DISTINCT " : ""
  const joins = sel.joins([
    ...select.items.map((item) => item.e.dk),
    ...(select.where ? [select.where.dk] : []),
    ...select.groupBy.map((k) => k.dk),
    ...(select.having ? [select.having.dk] : []),
    ...select.order.map((k) => k.dk)
  ])
  const items = select.star
    ? joins ? `* EXCLUDE ("${sel.joined}")` : "*"
    : select.items.map((item) => `${val(item.e).dk} AS "${item.alias}"`).join(", ")
  ch.push(`SELECT ${distinct}${select.star ? "*" : select.items.map(chItem).join(", ")}`)
  dk.push(`SELECT ${distinct}${items}`)
  if (sel.src !== undefined) {
    ch.push(`FROM ${sel.src.ch}`)
    dk.push(`FROM ${sel.fromDk(joins)}`)
  }
  if (select.where !== undefined) {
    ch.push(`WHERE ${select.where.ch}`)
    dk.push(`WHERE ${cond(select.where).dk}`)
  }
  if (select.groupBy.length > 0) {
    ch.push(`GROUP BY ${select.groupBy.map((k) => k.ch).join(", ")}`)
    dk.push(`GROUP BY ${select.groupBy.map((k) => k.dk).join(", ")}`)
  }
  if (select.having !== undefined) {
    ch.push(`HAVING ${select.having.ch}`)
    dk.push(`HAVING ${cond(select.having).dk}`)
  }
  if (select.order.length > 0) {
    ch.push(
      `ORDER BY ${
        select.order.map((k) => `${k.ch}${k.descending ? " DESC" : sel.r.chance(0.2) ? " ASC" : ""}`).join(", ")
      }`
    )
    dk.push(`ORDER BY ${select.order.map((k) => `${k.dk} ${k.descending ? "DESC" : "ASC"} NULLS LAST`).join(", ")}`)
  }
  if (select.limit !== undefined) {
    const { form, n, offset } = select.limit
    if (offset === undefined) ch.push(`LIMIT ${n}`)
    else ch.push(form === 0 ? `LIMIT ${offset}, ${n}` : `LIMIT ${n} OFFSET ${offset}`)
    dk.push(`LIMIT ${n}${offset === undefined ? "" : ` OFFSET ${offset}`}`)
  }
  return {
    ch: ch.join(" "),
    dk: dk.join(" "),
    ordered: select.order.length > 0 || sel.src === undefined,
    cols: select.items.map((item) => [item.alias, item.col] as const)
  }
}

/** A source reading a query's answer: a subquery in FROM, or a CTE. */
const derived = (q: Query, inner: Written, asCte: boolean): Source => {
  const r = q.r
  const cols = new Map(inner.cols)
  if (asCte) {
    const name = q.alias(r.pick(["per", "base", "agg", "recent", "top", "stats"]))
    q.ctes.push({ name, ch: inner.ch, dk: inner.dk, cols })
    const form = r.int(0, 2)
    return form === 0
      ? { ch: `${name} AS c`, dk: `"${name}"`, cols, qualifier: "c" }
      : { ch: name, dk: `"${name}"`, cols, qualifier: form === 1 ? name : undefined }
  }
  const form = r.int(0, 2)
  const alias = q.alias("sq")
  return form === 0
    ? { ch: `(${inner.ch}) AS ${alias}`, dk: `(${inner.dk}) AS "${alias}"`, cols, qualifier: alias }
    : form === 1
    ? { ch: `(${inner.ch}) ${alias}`, dk: `(${inner.dk}) AS "${alias}"`, cols, qualifier: undefined }
    : { ch: `(${inner.ch})`, dk: `(${inner.dk}) AS "${alias}"`, cols, qualifier: undefined }
}

/** WITH …, then the body. */
const withCtes = (q: Query, body: Written): Written => {
  if (q.ctes.length === 0) return body
  return {
    ch: `WITH ${q.ctes.map((c) => `${c.name} AS (${c.ch})`).join(", ")} ${body.ch}`,
    dk: `WITH ${q.ctes.map((c) => `"${c.name}" AS (${c.dk})`).join(", ")} ${body.dk}`,
    ordered: body.ordered,
    cols: body.cols
  }
}

type SetOp = "UNION ALL" | "UNION DISTINCT" | "EXCEPT" | "EXCEPT DISTINCT"

/** A set operation: DuckDB's EXCEPT is a distinct one; keymeter's keeps the left side's duplicates (an anti-join). */
const setOperation = (r: Rng, op: SetOp, left: Written, right: Written, parenthesizeLeft: boolean): Written => {
  const names = left.cols.map(([name]) => name)
  let dk: string
  if (op === "UNION ALL") dk = `(${left.dk}) UNION ALL (${right.dk})`
  else if (op === "UNION DISTINCT") dk = `(${left.dk}) UNION (${right.dk})`
  else if (op === "EXCEPT DISTINCT") dk = `(${left.dk}) EXCEPT (${right.dk})`
  else {
    const same = names.map((n) => `"l"."${n}" IS NOT DISTINCT FROM "r"."${n}"`).join(" AND ")
    dk = `SELECT * FROM (${left.dk}) AS "l" WHERE NOT EXISTS (SELECT 1 FROM (${right.dk}) AS "r"(${
      names.map((n) => `"${n}"`).join(", ")
    }) WHERE ${same})`
  }
  const chOp = op === "EXCEPT" && r.chance(0.3) ? "EXCEPT ALL" : op
  // The right side bare, or in parentheses (rarely after a bare EXCEPT: see the test's notes).
  const bare = chOp === "EXCEPT" ? r.chance(0.9) : r.chance(0.5)
  return {
    ch: `${parenthesizeLeft ? `(${left.ch})` : left.ch} ${chOp} ${bare ? right.ch : `(${right.ch})`}`,
    dk: `SELECT * FROM (${dk}) AS "so"`,
    ordered: false,
    cols: left.cols
  }
}

/** Both sides of a set operation: the same shape of columns, different filters (or tables). */
const setSides = (q: Query): { readonly left: () => Written; readonly right: () => Written } => {
  const r = q.r
  const shape = r.int(0, 3)
  const grain = r.pick(["hour", "day"])
  const string = q.family === "verifications"
    ? r.pick(["key_id", "identity_id", "key_space_id", "outcome"])
    : r.pick(["identifier", "namespace_id"])
  const side = (first: boolean) => (): Written => {
    const src = q.table(shape === 2 ? !first : undefined)
    const s = new Sel(q, src)
    const where = r.chance(0.85) ? rowCondition(s, 1) : undefined
    const alias = (hint: string) => (first ? q.alias(hint) : r.chance(0.5) ? q.alias(hint) : hint)
    const items: Array<Item> = []
    if (shape === 0 || !src.cols.has(string)) {
      // One column, duplicates and all.
      const name = src.cols.has(string) ? string : "time"
      items.push({ alias: alias(hintOf(name)), e: s.column(name), col: src.cols.get(name)!, aggregate: false })
      return write({ ...plain(s, items, where, r.chance(0.3)) })
    }
    if (shape === 1) {
      // A count per key.
      const k = s.column(string)
      items.push({ alias: alias(hintOf(string)), e: k, col: src.cols.get(string)!, aggregate: false })
      const n = src.cols.has("count")
        ? mk("sum(count)", `coalesce(sum("count"), 0)`, "Int")
        : src.cols.has("total")
        ? mk("sum(total)", `coalesce(sum("total"), 0)`, "Int")
        : mk("count()", "count(*)", "Int")
      items.push({ alias: alias("n"), e: n, col: intCol(), aggregate: true })
      return write({ ...plain(s, items, where, false), groupBy: [{ ch: items[0]!.alias, dk: k.dk }] })
    }
    // A key and its hour (or day), from the raw table on one side and a rollup on the other.
    const t = s.column("time")
    const b = src.dk.includes(`_per_${grain}_`) ? t : bucket(r, t, grain === "hour" ? BUCKETS[3] : BUCKETS[4])
    items.push({ alias: alias(hintOf(string)), e: s.column(string), col: src.cols.get(string)!, aggregate: false })
    items.push({ alias: alias("bucket"), e: b, col: col("Int", "time"), aggregate: false })
    return write({ ...plain(s, items, where, r.chance(0.5)) })
  }
  return { left: side(true), right: side(false) }
}

const SET_OPS: ReadonlyArray<SetOp> = ["UNION ALL", "UNION DISTINCT", "EXCEPT", "EXCEPT DISTINCT"]

/** A set operation (two or three sides) read by an outer SELECT that orders it. */
const setQuery = (q: Query): Written => {
  const r = q.r
  const sides = setSides(q)
  let body = setOperation(r, r.pick(SET_OPS), sides.left(), sides.right(), false)
  if (r.chance(0.25)) body = setOperation(r, r.pick(SET_OPS), body, sides.right(), true)
  const src = derived(q, body, r.chance(0.3))
  if (r.chance(0.5)) {
    const s = new Sel(q, { ...src, qualifier: undefined })
    const items = body.cols.map(([name, c]): Item => ({ alias: name, e: s.column(name), col: c, aggregate: false }))
    return write({
      sel: s,
      distinct: false,
      items,
      where: undefined,
      groupBy: [],
      having: undefined,
      order: order(r, items, false).map((k) => ({ ...k, ch: k.dk.slice(1, -1) })),
      limit: r.chance(0.3) ? limitOf(r, 30) : undefined,
      star: true
    })
  }
  return write(grouped(q, src, { minDims: 1, order: "full" }))
}

/** A constant SELECT (no FROM): time functions, INTERVALs, arithmetic on edge values. */
const constants = (q: Query): Written => {
  const r = q.r
  const s = new Sel(q, undefined)
  const instants = [
    0,
    Date.UTC(2024, 1, 29, 12, 34, 56, 789),
    Date.UTC(2025, 11, 31, 23, 59, 59, 999),
    Date.UTC(2026, 0, 1),
    Date.UTC(2026, 2, 31, 8),
    Date.UTC(2026, 0, 31, 23, 0, 0, 1),
    Date.UTC(2025, 7, 31),
    Date.UTC(2026, 0, 4, 10), // a Sunday
    Date.UTC(2026, 0, 3, 23, 59), // a Saturday
    Date.UTC(2000, 2, 1),
    r.int(0, 4_102_444_800_000)
  ]
  const items: Array<Item> = []
  const n = r.int(2, 6)
  for (let i = 0; i < n; i++) {
    const t = r.chance(0.2) ? NOW_D : int(r.pick(instants))
    const y = r.next()
    let v: Gen
    if (y < 0.35) v = g(bucket(r, t), col("Int", "time"), "b")
    else if (y < 0.6) {
      const unit = r.pick(["SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR"] as const)
      v = g(shift(r, t, r.pick(["+", "-"] as const), r.int(-3, 25), unit), col("Int", "time"), "m")
    } else if (y < 0.68) v = g(r.chance(0.5) ? toHour(t) : toDayOfWeek(t), intCol(), "h")
    else if (y < 0.8) {
      const a = int(r.int(-50, 50))
      const b = int(r.pick([-7, -3, -2, 2, 3, 7]))
      v = r.pick([g(intDiv(a, b), intCol(), "q"), g(div(a, b), floatCol(), "f"), g(mod(a, b), intCol(), "r")])
    } else if (y < 0.88) {
      const a = r.pick(["Z", "a", "café", "ab", "", "é", "key_b"])
      const b = r.pick(["Z", "a", "cafe", "abc", "key_a"])
      v = r.pick([
        g(cmp("<", str(a), str(b)), intCol(), "lt"),
        g(mk(`length(${chString(a)})`, `CAST(strlen(${dkString(a)}) AS BIGINT)`, "Int"), intCol(), "len"),
        g(call("concat", [str(a), str(b)], `concat(${dkString(a)}, ${dkString(b)})`, "String"), strCol([]), "cat"),
        g(like(str(a), likePattern(r, b), false, false), intCol(), "like")
      ])
    } else if (y < 0.94) {
      v = g(
        caseWhen([[cmp(">", int(r.int(0, 3)), int(1)), str("yes")]], r.chance(0.5) ? str("no") : undefined, "String"),
        strCol([]),
        "c"
      )
    } else v = g(TODAY_D, intCol(), "today")
    items.push({ alias: q.alias(v.hint), e: v.e, col: v.col, aggregate: false })
  }
  return write(plain(s, items, undefined, false))
}

type Template = "grouped" | "rollup" | "projection" | "distinct" | "star" | "derived" | "cte" | "set" | "constants"

const TEMPLATES: ReadonlyArray<readonly [Template, number]> = [
  ["grouped", 34],
  ["rollup", 12],
  ["projection", 11],
  ["distinct", 6],
  ["star", 3],
  ["derived", 10],
  ["cte", 10],
  ["set", 10],
  ["constants", 4]
]

const generate = (q: Query, template: Template): Written => {
  const r = q.r
  switch (template) {
    case "grouped":
      return write(grouped(q, q.table(false)))
    case "rollup":
      return write(grouped(q, q.table(true)))
    case "projection":
      return write(projection(q, q.table()))
    case "distinct":
      return write(projection(q, q.table(), true))
    case "star":
      return write(star(q, q.table()))
    case "derived": {
      const inner = write(grouped(q, q.table(), { minDims: 1, order: r.chance(0.3) ? "full" : "none" }))
      const src = derived(q, inner, false)
      const x = r.next()
      return write(x < 0.6 ? grouped(q, src) : projection(q, src, x < 0.75))
    }
    case "cte": {
      const first = write(grouped(q, q.table(), { minDims: 1, order: r.chance(0.3) ? "full" : "none" }))
      let src = derived(q, first, true)
      if (r.chance(0.35)) src = derived(q, write(grouped(q, src, { minDims: 1, order: "none" })), true)
      const x = r.next()
      // The body reads the last CTE, or a public table filtered by one (IN (SELECT … FROM cte)).
      const body = x < 0.3 ? grouped(q, q.table()) : x < 0.8 ? grouped(q, src) : projection(q, src)
      return withCtes(q, write(body))
    }
    case "set":
      return withCtes(q, setQuery(q))
    case "constants":
      return constants(q)
  }
}

/** A query's shape: its text with every literal a placeholder. */
export const shapeOf = (text: string): string =>
  text.replace(/'(?:[^'\\]|\\.)*'/g, "?").replace(/\b\d+(?:\.\d+)?\b/g, "#").replace(/\s+/g, " ")

/**
 * Queries written by hand, kept whatever the seed: each showed keymeter answering otherwise than
 * DuckDB when this test was written (see its notes), in the smallest form found.
 */
export const PINNED: ReadonlyArray<GeneratedQuery> = [
  {
    // Arrays order element by element, in min/max as in ORDER BY: ["beta", "pro"] < ["beta program"].
    family: "verifications",
    text: "SELECT key_space_id AS api, max(tags) AS highest, min(tags) AS lowest FROM key_verifications_v1 " +
      "WHERE has(tags, 'beta program') OR has(tags, 'pro') GROUP BY api ORDER BY api",
    duck: "SELECT key_space_id AS api, max(tags) AS highest, min(tags) AS lowest FROM key_verifications_v1 " +
      "WHERE list_contains(tags, 'beta program') OR list_contains(tags, 'pro') GROUP BY key_space_id ORDER BY api",
    ordered: true,
    template: "pinned"
  },
  {
    // A sum of a dimension's function counts the rollup's rows: the rollup must keep all of them.
    family: "verifications",
    text: "SELECT outcome AS res, sum(length(key_id)) AS chars, sum(has(tags, 'beta')) AS beta " +
      "FROM key_verifications_per_hour_v1 GROUP BY res ORDER BY res",
    duck: "SELECT outcome AS res, coalesce(sum(strlen(key_id)), 0) AS chars, " +
      "coalesce(sum(CAST(list_contains(tags, 'beta') AS BIGINT)), 0) AS beta " +
      "FROM key_verifications_per_hour_v1 GROUP BY outcome ORDER BY res",
    ordered: true,
    template: "pinned"
  },
  {
    family: "verifications",
    text:
      "SELECT sum(if(outcome = 'VALID', 1, 0)) AS valid_rows, sum(count) AS events FROM key_verifications_per_day_v1",
    duck: "SELECT coalesce(sum(CASE WHEN outcome = 'VALID' THEN 1 ELSE 0 END), 0) AS valid_rows, " +
      "coalesce(sum(\"count\"), 0) AS events FROM key_verifications_per_day_v1",
    ordered: true,
    template: "pinned"
  },
  {
    family: "ratelimits",
    text:
      "SELECT namespace_id AS ns, sum(length(identifier)) AS chars FROM ratelimits_per_day_v1 GROUP BY ns ORDER BY ns",
    duck: "SELECT namespace_id AS ns, coalesce(sum(strlen(identifier)), 0) AS chars FROM ratelimits_per_day_v1 " +
      "GROUP BY namespace_id ORDER BY ns",
    ordered: true,
    template: "pinned"
  },
  {
    // A CTE named `top`, read as `top.kid`: not ClickHouse's `SELECT TOP n`.
    family: "verifications",
    text: "WITH top AS (SELECT key_id AS kid, count() AS n FROM key_verifications_v1 GROUP BY kid " +
      "ORDER BY n DESC, kid LIMIT 5) SELECT top.kid AS k, top.n AS m FROM top ORDER BY k",
    duck: "WITH \"top\" AS (SELECT key_id AS kid, count(*) AS n FROM key_verifications_v1 GROUP BY key_id " +
      "ORDER BY n DESC, kid LIMIT 5) SELECT \"top\".kid AS k, \"top\".n AS m FROM \"top\" ORDER BY k",
    ordered: true,
    template: "pinned"
  },
  // The first groups by a counter of one api or namespace: counts may answer these with the
  // store's top groups and their ties (`CountShape.top`); ties at the limit are likely here.
  {
    family: "verifications",
    text: "SELECT key_id, count() AS n, countIf(outcome = 'VALID') AS ok FROM key_verifications_v1 " +
      "WHERE key_space_id = 'api_a' GROUP BY key_id ORDER BY n DESC, key_id LIMIT 3",
    duck: "SELECT key_id, count(*) AS n, count(*) FILTER (WHERE outcome = 'VALID') AS ok FROM key_verifications_v1 " +
      "WHERE key_space_id = 'api_a' GROUP BY key_id ORDER BY n DESC, key_id LIMIT 3",
    ordered: true,
    template: "pinned"
  },
  {
    family: "verifications",
    text: "SELECT key_id AS k, count() AS n FROM key_verifications_v1 WHERE key_space_id = 'api_b' " +
      "GROUP BY k ORDER BY countIf(outcome = 'VALID'), k DESC LIMIT 2 OFFSET 1",
    duck: "SELECT key_id AS k, count(*) AS n FROM key_verifications_v1 WHERE key_space_id = 'api_b' " +
      "GROUP BY key_id ORDER BY count(*) FILTER (WHERE outcome = 'VALID'), k DESC LIMIT 2 OFFSET 1",
    ordered: true,
    template: "pinned"
  },
  {
    family: "verifications",
    text: "SELECT identity_id, external_id, count() AS n FROM key_verifications_v1 " +
      "WHERE key_space_id = 'api_a' AND identity_id != '' GROUP BY identity_id, external_id " +
      "ORDER BY n DESC, identity_id LIMIT 2",
    duck: "SELECT identity_id, external_id, count(*) AS n FROM key_verifications_v1 " +
      "WHERE key_space_id = 'api_a' AND identity_id != '' GROUP BY identity_id, external_id " +
      "ORDER BY n DESC, identity_id LIMIT 2",
    ordered: true,
    template: "pinned"
  },
  {
    family: "verifications",
    text: "SELECT key_id, identity_id, external_id, countIf(outcome = 'RATE_LIMITED') AS limited " +
      "FROM key_verifications_v1 WHERE key_space_id = 'api_c' AND identity_id != '' " +
      "GROUP BY key_id, identity_id, external_id ORDER BY limited DESC, key_id, identity_id LIMIT 4",
    duck: "SELECT key_id, identity_id, external_id, count(*) FILTER (WHERE outcome = 'RATE_LIMITED') AS limited " +
      "FROM key_verifications_v1 WHERE key_space_id = 'api_c' AND identity_id != '' " +
      "GROUP BY key_id, identity_id, external_id ORDER BY limited DESC, key_id, identity_id LIMIT 4",
    ordered: true,
    template: "pinned"
  },
  {
    family: "ratelimits",
    text: "SELECT identifier, count() AS n, sum(passed) AS ok FROM ratelimits_v1 WHERE namespace_id = 'ns_api' " +
      "GROUP BY identifier ORDER BY n, identifier LIMIT 3",
    duck: "SELECT identifier, count(*) AS n, coalesce(sum(passed), 0) AS ok FROM ratelimits_v1 " +
      "WHERE namespace_id = 'ns_api' GROUP BY identifier ORDER BY n, identifier LIMIT 3",
    ordered: true,
    template: "pinned"
  },
  {
    // EXCEPT's right side in parentheses (as UNION's may be), the left side's duplicates kept.
    family: "verifications",
    text: "SELECT kid, count() AS n FROM (SELECT key_id AS kid FROM key_verifications_v1 WHERE outcome = 'VALID' " +
      "EXCEPT (SELECT key_id FROM key_verifications_v1 WHERE spent_credits >= 5)) GROUP BY kid ORDER BY kid",
    duck: "SELECT kid, count(*) AS n FROM (SELECT * FROM (SELECT key_id AS kid FROM key_verifications_v1 " +
      "WHERE outcome = 'VALID') AS l WHERE NOT EXISTS (SELECT 1 FROM (SELECT key_id FROM key_verifications_v1 " +
      "WHERE spent_credits >= 5) AS r(kid) WHERE l.kid IS NOT DISTINCT FROM r.kid)) AS sq GROUP BY kid ORDER BY kid",
    ordered: true,
    template: "pinned"
  }
]

/** `count` distinct queries (by keymeter's text), from `seed`, after the pinned ones. */
export const generateQueries = (seed: number, count: number, corpus: Corpus): Array<GeneratedQuery> => {
  const r = new Rng(seed)
  const times = {
    verifications: corpus.verifications.filter((v) => v.workspaceId === WORKSPACE).map((v) => v.time),
    ratelimits: corpus.decisions.filter((d) => d.workspaceId === WORKSPACE).map((d) => d.time)
  }
  const out: Array<GeneratedQuery> = [...PINNED]
  const seen = new Set(PINNED.map((q) => q.text))
  for (let attempt = 0; out.length < count && attempt < count * 3; attempt++) {
    const family: Family = r.chance(0.72) ? "verifications" : "ratelimits"
    const template = r.weighted(TEMPLATES)
    const q = new Query(r, family, times[family])
    const written = generate(q, template)
    if (seen.has(written.ch)) continue
    seen.add(written.ch)
    out.push({ family, text: written.ch, duck: written.dk, ordered: written.ordered, template })
  }
  return out
}
