/**
 * The `--sql` queries: what dashboards send to `/v2/analytics.getVerifications` and
 * `getRatelimits`, each written twice by hand: in keymeter's dialect (ClickHouse's, times in unix
 * ms) and in DuckDB's over the same public raw columns (`Duck.openSql`). `now()` is the data
 * set's end (2025-04-01Z), so "the last 30 days" are the data's last 30; the DuckDB texts carry
 * the same instants as literals. Every ORDER BY is total, so the answers compare row by row.
 *
 * Four of them (`G…`) are the SQL form of the bench's fixed getVerifications queries
 * (`Queries.references`), timed through both routes; `fromV1` turns the v1 answer into the SQL
 * answer's rows (the zero-filled buckets left out), so the two are checked against each other.
 */
import type { Datapoint } from "@keymeter/core/Datapoint"
import { Outcomes } from "@keymeter/core/Verification"
import type { VerificationQueryInput } from "@keymeter/core/VerificationQuery"
import { OUTCOME_NAMES } from "@keymeter/sql/Tables"
import { END } from "./Dataset.js"
import { NAMESPACES } from "./Decisions.js"
import { references } from "./Queries.js"

const DAY = 86_400_000

/** What `now()` reads in every query: the end of the data set's 90 days. */
export const NOW = END

/** Unix ms `days` before {@link NOW}. */
const ago = (days: number) => NOW - days * DAY

/** The start of the UTC month holding `t`. */
const monthOf = (t: number) => {
  const d = new Date(t)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
}

export interface SqlBenchQuery {
  readonly id: string
  readonly title: string
  readonly family: "verifications" | "ratelimits"
  /** keymeter's text (as sent to `/v2/analytics.get…`). */
  readonly keymeter: string
  /** DuckDB's text over `key_verifications_v1` / `ratelimits_v1` (`Duck.openSql`). */
  readonly duckdb: string
  /** The same question through v1's getVerifications, and its answer as the SQL answer's rows. */
  readonly v1?: {
    readonly query: VerificationQueryInput
    readonly fromV1: (points: ReadonlyArray<Datapoint>) => Array<Record<string, unknown>>
  }
}

/** `count() AS total` and a countIf per outcome, named as v1's datapoints name them. */
const outcomeCounts = Outcomes.map((outcome, k) => `countIf(outcome = '${OUTCOME_NAMES[k]}') AS ${outcome}`).join(
  ", "
)
const duckOutcomeCounts = Outcomes.map((outcome, k) =>
  `count(*) FILTER (WHERE outcome = '${OUTCOME_NAMES[k]}') AS "${outcome}"`
).join(", ")

/** A v1 datapoint's counters, in the SQL answer's column order. */
const counters = (p: Datapoint) => {
  const out: Record<string, unknown> = { total: p.total }
  for (const outcome of Outcomes) out[outcome] = p[outcome]
  return out
}

const reference = (id: string) => references.find((r) => r.id === id)!.query

/** The queries; `size` sets the credits threshold of (c) so it keeps a few dozen identities. */
export const make = (size: number): ReadonlyArray<SqlBenchQuery> => {
  const threshold = Math.round(size / 1000)
  const busiest = NAMESPACES[0]!.id
  return [
    {
      id: "a",
      title: "outcomes per day, 30 d, one api",
      family: "verifications",
      keymeter: `SELECT toStartOfDay(time) AS day, outcome, count() AS total
FROM key_verifications_v1
WHERE key_space_id = 'api_0' AND time >= now() - INTERVAL 30 DAY
GROUP BY day, outcome
ORDER BY day, outcome`,
      duckdb: `SELECT time - time % 86400000 AS day, outcome, count(*) AS total
FROM key_verifications_v1
WHERE key_space_id = 'api_0' AND time >= ${ago(30)}
GROUP BY day, outcome
ORDER BY day, outcome`
    },
    {
      id: "b",
      title: "top 10 keys by valid, 7 d, one api",
      family: "verifications",
      keymeter: `SELECT key_id, countIf(outcome = 'VALID') AS valid, count() AS total
FROM key_verifications_v1
WHERE key_space_id = 'api_0' AND time >= now() - INTERVAL 7 DAY
GROUP BY key_id
ORDER BY valid DESC, key_id
LIMIT 10`,
      duckdb: `SELECT key_id, count(*) FILTER (WHERE outcome = 'VALID') AS valid, count(*) AS total
FROM key_verifications_v1
WHERE key_space_id = 'api_0' AND time >= ${ago(7)}
GROUP BY key_id
ORDER BY valid DESC, key_id
LIMIT 10`
    },
    {
      id: "c",
      title: `identities over ${threshold.toLocaleString("en")} credits, 30 d, all apis`,
      family: "verifications",
      keymeter: `SELECT identity_id, external_id, sum(spent_credits) AS credits, count() AS verifications
FROM key_verifications_v1
WHERE time >= now() - INTERVAL 30 DAY AND identity_id != ''
GROUP BY identity_id, external_id
HAVING credits > ${threshold}
ORDER BY credits DESC, identity_id`,
      duckdb: `SELECT identity_id, external_id, sum(spent_credits) AS credits, count(*) AS verifications
FROM key_verifications_v1
WHERE time >= ${ago(30)} AND identity_id != ''
GROUP BY identity_id, external_id
HAVING sum(spent_credits) > ${threshold}
ORDER BY credits DESC, identity_id`
    },
    {
      id: "d",
      title: "blocked identifiers per hour, 1 d, one namespace",
      family: "ratelimits",
      keymeter: `SELECT toStartOfHour(time) AS hour, uniq(identifier) AS identifiers, count() AS blocked
FROM ratelimits_v1
WHERE namespace_id = '${busiest}' AND passed = 0 AND time >= now() - INTERVAL 1 DAY
GROUP BY hour
ORDER BY hour`,
      duckdb: `SELECT time - time % 3600000 AS hour, count(DISTINCT identifier) AS identifiers, count(*) AS blocked
FROM ratelimits_v1
WHERE namespace_id = '${busiest}' AND passed = 0 AND time >= ${ago(1)}
GROUP BY hour
ORDER BY hour`
    },
    {
      id: "e",
      title: "total per month, 90 d, per-month rollup, one api",
      family: "verifications",
      keymeter: `SELECT time AS month_start, sum(count) AS total, sum(spent_credits) AS credits
FROM key_verifications_per_month_v1
WHERE key_space_id = 'api_0' AND time >= toStartOfMonth(now() - INTERVAL 90 DAY)
GROUP BY month_start
ORDER BY month_start`,
      duckdb: `SELECT epoch_ms(date_trunc('month', epoch_ms(time))) AS month_start, count(*) AS total,
  sum(spent_credits) AS credits
FROM key_verifications_v1
WHERE key_space_id = 'api_0' AND time >= ${monthOf(ago(90))}
GROUP BY month_start
ORDER BY month_start`
    },
    {
      id: "f",
      title: "tag per day (arrayJoin), 7 d, one api",
      family: "verifications",
      keymeter: `SELECT arrayJoin(tags) AS tag, toStartOfDay(time) AS day, count() AS total,
  countIf(outcome = 'VALID') AS valid
FROM key_verifications_v1
WHERE key_space_id = 'api_0' AND time >= now() - INTERVAL 7 DAY
GROUP BY tag, day
ORDER BY day, total DESC, tag`,
      duckdb: `SELECT tag, day, count(*) AS total, count(*) FILTER (WHERE outcome = 'VALID') AS valid
FROM (
  SELECT unnest(tags) AS tag, time - time % 86400000 AS day, outcome
  FROM key_verifications_v1
  WHERE key_space_id = 'api_0' AND time >= ${ago(7)}
)
GROUP BY tag, day
ORDER BY day, total DESC, tag`
    },
    {
      id: "h",
      title: "latency by region, 7 d, all apis",
      family: "verifications",
      keymeter: `SELECT region, count() AS total, avg(latency) AS latency_avg, max(latency) AS latency_max
FROM key_verifications_v1
WHERE time >= now() - INTERVAL 7 DAY
GROUP BY region
ORDER BY region`,
      duckdb: `SELECT region, count(*) AS total, avg(latency) AS latency_avg, max(latency) AS latency_max
FROM key_verifications_v1
WHERE time >= ${ago(7)}
GROUP BY region
ORDER BY region`
    },
    {
      id: "G1",
      title: "= Q1 day buckets, 30 d",
      family: "verifications",
      keymeter: `SELECT toStartOfDay(time) AS day, count() AS total, ${outcomeCounts}
FROM key_verifications_v1
WHERE key_space_id = 'api_0' AND time >= now() - INTERVAL 30 DAY
GROUP BY day
ORDER BY day`,
      duckdb: `SELECT time - time % 86400000 AS day, count(*) AS total, ${duckOutcomeCounts}
FROM key_verifications_v1
WHERE key_space_id = 'api_0' AND time >= ${ago(30)}
GROUP BY day
ORDER BY day`,
      v1: {
        query: reference("Q1"),
        fromV1: (points) => points.filter((p) => p.total > 0).map((p) => ({ day: p.time, ...counters(p) }))
      }
    },
    {
      id: "G3",
      title: "= Q3 top 10 keys, 30 d",
      family: "verifications",
      keymeter: `SELECT key_id, count() AS total, ${outcomeCounts}
FROM key_verifications_v1
WHERE key_space_id = 'api_0' AND time >= now() - INTERVAL 30 DAY
GROUP BY key_id
ORDER BY total DESC, key_id
LIMIT 10`,
      duckdb: `SELECT key_id, count(*) AS total, ${duckOutcomeCounts}
FROM key_verifications_v1
WHERE key_space_id = 'api_0' AND time >= ${ago(30)}
GROUP BY key_id
ORDER BY total DESC, key_id
LIMIT 10`,
      v1: {
        query: reference("Q3"),
        fromV1: (points) => points.map((p) => ({ key_id: p.keyId, ...counters(p) }))
      }
    },
    {
      id: "G4",
      title: "= Q4 per tag, 30 d",
      family: "verifications",
      keymeter: `SELECT arrayJoin(tags) AS tag, count() AS total, ${outcomeCounts}
FROM key_verifications_v1
WHERE key_space_id = 'api_0' AND time >= now() - INTERVAL 30 DAY
GROUP BY tag
ORDER BY tag`,
      duckdb: `SELECT tag, count(*) AS total, ${duckOutcomeCounts}
FROM (
  SELECT unnest(tags) AS tag, outcome
  FROM key_verifications_v1
  WHERE key_space_id = 'api_0' AND time >= ${ago(30)}
)
GROUP BY tag
ORDER BY tag`,
      v1: {
        query: reference("Q4"),
        fromV1: (points) => points.filter((p) => p.total > 0).map((p) => ({ tag: p.tag, ...counters(p) }))
      }
    },
    {
      id: "G7",
      title: "= Q7 top 10 identities, 30 d",
      family: "verifications",
      keymeter: `SELECT identity_id, external_id, count() AS total, ${outcomeCounts}
FROM key_verifications_v1
WHERE key_space_id = 'api_0' AND time >= now() - INTERVAL 30 DAY AND identity_id != ''
GROUP BY identity_id, external_id
ORDER BY total DESC, identity_id, external_id
LIMIT 10`,
      duckdb: `SELECT identity_id, external_id, count(*) AS total, ${duckOutcomeCounts}
FROM key_verifications_v1
WHERE key_space_id = 'api_0' AND time >= ${ago(30)} AND identity_id != ''
GROUP BY identity_id, external_id
ORDER BY total DESC, identity_id, external_id
LIMIT 10`,
      v1: {
        query: reference("Q7"),
        fromV1: (points) =>
          points.map((p) => ({ identity_id: p.identity!.id, external_id: p.identity!.externalId, ...counters(p) }))
      }
    }
  ]
}

/**
 * The heavy queries two clients send back to back while the hot path is measured: every event of
 * the busiest api grouped by key and hour (a top 100), and by tag and day (arrayJoin).
 */
export const HEAVY: ReadonlyArray<{ readonly id: string; readonly title: string; readonly text: string }> = [
  {
    id: "H1",
    title: "top 100 (key, hour) of the busiest api, all events",
    text: `SELECT key_id, toStartOfHour(time) AS hour, count() AS total, countIf(outcome = 'VALID') AS valid
FROM key_verifications_v1
WHERE key_space_id = 'api_0'
GROUP BY key_id, hour
ORDER BY total DESC, key_id, hour
LIMIT 100`
  },
  {
    id: "H2",
    title: "tag × day of the busiest api (arrayJoin), all events",
    text: `SELECT arrayJoin(tags) AS tag, toStartOfDay(time) AS day, count() AS total, sum(spent_credits) AS credits
FROM key_verifications_v1
WHERE key_space_id = 'api_0'
GROUP BY tag, day
ORDER BY day, tag`
  }
]

/** Row `k` of `rows`: numbers as numbers (bigint converted), arrays as arrays. */
export const normalize = (rows: ReadonlyArray<Record<string, unknown>>): Array<Record<string, unknown>> =>
  rows.map((row) => {
    const out: Record<string, unknown> = {}
    for (const [name, value] of Object.entries(row)) {
      out[name] = typeof value === "bigint" ? Number(value) : value
    }
    return out
  })

const sameValue = (a: unknown, b: unknown): boolean => {
  if (typeof a === "number" && typeof b === "number") {
    if (a === b) return true
    // Float aggregates (avg of latencies) may differ in the last bits with the summing order.
    return Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b))
  }
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => sameValue(x, b[i]))
  return a === b
}

/** Where two answers differ (columns, row count, first differing row), or undefined when equal. */
export const difference = (
  got: ReadonlyArray<Record<string, unknown>>,
  want: ReadonlyArray<Record<string, unknown>>
): string | undefined => {
  if (got.length !== want.length) {
    return `${got.length} rows, want ${want.length} (first: ${JSON.stringify(got[0])} want ${JSON.stringify(want[0])})`
  }
  for (let i = 0; i < got.length; i++) {
    const g = got[i]!
    const w = want[i]!
    const names = Object.keys(w)
    if (Object.keys(g).join(",") !== names.join(",")) {
      return `columns ${Object.keys(g).join(",")}, want ${names.join(",")}`
    }
    if (!names.every((name) => sameValue(g[name], w[name]))) {
      return `row ${i}: ${JSON.stringify(g)} want ${JSON.stringify(w)}`
    }
  }
  return undefined
}
