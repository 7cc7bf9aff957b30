/**
 * The public tables SQL analytics read: for verifications `key_verifications_v1` and its rollups
 * by minute, hour, day and month; for rate-limit decisions `ratelimits_v1` and its rollups. Each
 * is the caller's rows only (see `SqlQuery`). Times are unix milliseconds everywhere; a rollup's
 * `time` is the start of its bucket (UTC; weeks start on Sunday). A rollup table is, exactly, the
 * raw table grouped as its {@link PublicTable.view} says.
 */
import type { Outcome } from "@keymeter/core/Verification"
import { Outcomes } from "@keymeter/core/Verification"

/** Types of values. Booleans are Int (1 or 0), as in ClickHouse. */
export type Type = "Int" | "Float" | "String" | "Array(String)"

export interface PublicColumn {
  readonly name: string
  readonly type: Type
  readonly doc: string
}

/** Which events a table holds: a route reads one family only. */
export type Family = "verifications" | "ratelimits"

/** How finely a table's rows are bucketed. */
export type Grain = "event" | "minute" | "hour" | "day" | "month"

export interface PublicTable {
  readonly name: string
  readonly family: Family
  readonly grain: Grain
  readonly columns: ReadonlyArray<PublicColumn>
  /** For a rollup: the SELECT over the family's raw table that it is. */
  readonly view: string | undefined
  /** For a rollup: the columns it groups by (`time` its bucket), and its measures. */
  readonly dimensions: ReadonlyArray<string>
  readonly measures: ReadonlyArray<string>
  /**
   * For a rollup: its view grouped by some of its dimensions only, with some of its measures only
   * (default all). Summing a measure over such rows gives what summing it over the full rollup's
   * rows gives, per group of those dimensions.
   */
  readonly viewBy:
    | ((dimensions: ReadonlyArray<string>, measures?: ReadonlyArray<string> | undefined) => string)
    | undefined
}

/** An outcome as the tables spell it: `VALID`, `RATE_LIMITED`, … */
export const outcomeName = (outcome: Outcome): string => outcome.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()

/** Outcome names by code (position in `Verification.Outcomes`). */
export const OUTCOME_NAMES: ReadonlyArray<string> = Outcomes.map(outcomeName)

const column = (name: string, type: Type, doc: string): PublicColumn => ({ name, type, doc })

const VERIFICATION_DIMENSIONS = [
  column("workspace_id", "String", "the caller's workspace"),
  column("key_space_id", "String", "the api's id"),
  column("key_id", "String", "the key verified"),
  column("identity_id", "String", "the key's identity, '' when it has none"),
  column("external_id", "String", "the identity's external id, '' when none"),
  column("outcome", "String", `${OUTCOME_NAMES.join(", ")}`),
  column("tags", "Array(String)", "the verification's tags, sorted and unique")
]

const RAW_VERIFICATIONS: PublicTable = {
  name: "key_verifications_v1",
  family: "verifications",
  grain: "event",
  columns: [
    column("time", "Int", "unix ms of the verification"),
    ...VERIFICATION_DIMENSIONS,
    column("spent_credits", "Int", "credits the verification spent (0 when none)"),
    column("latency", "Float", "milliseconds the verification took"),
    column("region", "String", "where it was verified, '' when not recorded")
  ],
  view: undefined,
  dimensions: [],
  measures: [],
  viewBy: undefined
}

const RAW_RATELIMITS: PublicTable = {
  name: "ratelimits_v1",
  family: "ratelimits",
  grain: "event",
  columns: [
    column("time", "Int", "unix ms of the decision"),
    column("workspace_id", "String", "the caller's workspace"),
    column("namespace_id", "String", "the namespace's id"),
    column("identifier", "String", "who was limited"),
    column("passed", "Int", "1 when the request passed, 0 when it was blocked"),
    column("latency", "Float", "milliseconds the decision took"),
    column("override_id", "String", "the override that decided, '' when none")
  ],
  view: undefined,
  dimensions: [],
  measures: [],
  viewBy: undefined
}

const BUCKETS: ReadonlyArray<readonly [Exclude<Grain, "event">, string]> = [
  ["minute", "toStartOfMinute"],
  ["hour", "toStartOfHour"],
  ["day", "toStartOfDay"],
  ["month", "toStartOfMonth"]
]

/** A rollup of `raw`: its bucketed time and dimensions, and its measures as `expression AS name`. */
const rollup = (
  family: Family,
  name: string,
  grain: Exclude<Grain, "event">,
  bucket: string,
  raw: string,
  columns: ReadonlyArray<PublicColumn>,
  measures: ReadonlyArray<readonly [name: string, expression: string]>
): PublicTable => {
  const dimensions = columns.map((c) => c.name).filter((c) => !measures.some(([m]) => m === c))
  const viewBy = (kept: ReadonlyArray<string>, keptMeasures?: ReadonlyArray<string> | undefined) => {
    const dims = dimensions.filter((d) => kept.includes(d))
    const chosen = measures.filter(([m]) => keptMeasures === undefined || keptMeasures.includes(m))
    // A view of no column at all would be no SELECT: it keeps its measures then.
    const ms = dims.length + chosen.length === 0 ? measures : chosen
    const select = [
      ...dims.map((d) => d === "time" ? `${bucket}(time) AS time` : d),
      ...ms.map(([m, expression]) => `${expression} AS ${m}`)
    ]
    return `SELECT ${select.join(", ")} FROM ${raw}${dims.length > 0 ? ` GROUP BY ${dims.join(", ")}` : ""}`
  }
  return {
    name,
    family,
    grain,
    columns,
    view: viewBy(dimensions),
    dimensions,
    measures: measures.map(([m]) => m),
    viewBy
  }
}

const verificationRollup = ([grain, bucket]: readonly [Exclude<Grain, "event">, string]): PublicTable =>
  rollup(
    "verifications",
    `key_verifications_per_${grain}_v1`,
    grain,
    bucket,
    "key_verifications_v1",
    [
      column("time", "Int", `unix ms of the ${grain}'s start`),
      ...VERIFICATION_DIMENSIONS,
      column("count", "Int", "verifications"),
      column("spent_credits", "Int", "credits they spent"),
      column("latency_avg", "Float", "their mean latency, ms")
    ],
    [["count", "count()"], ["spent_credits", "sum(spent_credits)"], ["latency_avg", "avg(latency)"]]
  )

const ratelimitRollup = ([grain, bucket]: readonly [Exclude<Grain, "event">, string]): PublicTable =>
  rollup(
    "ratelimits",
    `ratelimits_per_${grain}_v1`,
    grain,
    bucket,
    "ratelimits_v1",
    [
      column("time", "Int", `unix ms of the ${grain}'s start`),
      column("workspace_id", "String", "the caller's workspace"),
      column("namespace_id", "String", "the namespace's id"),
      column("identifier", "String", "who was limited"),
      column("passed", "Int", "decisions that passed"),
      column("total", "Int", "decisions"),
      column("latency_avg", "Float", "their mean latency, ms")
    ],
    [["passed", "sum(passed)"], ["total", "count()"], ["latency_avg", "avg(latency)"]]
  )

/** Every public table, by name. */
export const TABLES: ReadonlyMap<string, PublicTable> = new Map(
  [RAW_VERIFICATIONS, ...BUCKETS.map(verificationRollup), RAW_RATELIMITS, ...BUCKETS.map(ratelimitRollup)].map(
    (table) => [table.name, table]
  )
)

/** The tables of one family, raw first. */
export const tablesOf = (family: Family): ReadonlyArray<PublicTable> =>
  [...TABLES.values()].filter((table) => table.family === family)

/** The raw table of a family. */
export const rawTableOf = (family: Family): PublicTable =>
  family === "verifications" ? RAW_VERIFICATIONS : RAW_RATELIMITS
