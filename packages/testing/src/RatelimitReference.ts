/**
 * A deliberately naive answer to getRatelimits over raw decisions, written from the README's
 * contract (getVerifications' rules, in rate-limit terms) without the production code or its
 * projection onto verifications: the oracle of the rate-limit property tests. With it, the rows a
 * scan for SQL analytics hands over, as a plain filter ({@link scan}).
 */
import type { RatelimitDatapoint } from "@keymeter/core/RatelimitQuery"

/** A decision as the tests draw it. */
export interface RawDecision {
  readonly time: number
  readonly workspaceId: string
  readonly namespaceId: string
  readonly identifier: string
  readonly passed: boolean
  readonly overrideId?: string | undefined
}

/** A query as the tests draw it, with the namespace by id. */
export interface RawRatelimitQuery {
  readonly workspaceId: string
  readonly namespaceId: string
  readonly identifier?: ReadonlyArray<string>
  readonly overrideId?: string
  readonly start?: number
  readonly end: number
  readonly groupBy?: ReadonlyArray<string>
  readonly orderBy?: string
  readonly order?: "asc" | "desc"
  readonly limit?: number
}

const HOUR = 3600000
const hourOf = (t: number) => t - (((t % HOUR) + HOUR) % HOUR)
const bucketOf = (unit: string, t: number) => {
  const d = new Date(t)
  if (unit === "hour") return hourOf(t)
  if (unit === "day") return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate())
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
}
const nextBucket = (unit: string, t: number) => {
  const d = new Date(t)
  if (unit === "hour") return t + HOUR
  if (unit === "day") return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)
}

interface Row {
  time?: number
  identifier?: string
  overrideId?: string
  total: number
  passed: number
  blocked: number
}

export const answer = (decisions: ReadonlyArray<RawDecision>, q: RawRatelimitQuery): Array<RatelimitDatapoint> => {
  const groupBy = q.groupBy ?? []
  const unit = groupBy.find((g) => g === "hour" || g === "day" || g === "month")
  const byIdentifier = groupBy.includes("identifier")
  const byOverride = groupBy.includes("override")
  const from = q.start === undefined ? -Infinity : hourOf(q.start)
  const to = hourOf(q.end)
  const count = (row: Row, d: RawDecision) => {
    row.total++
    if (d.passed) row.passed++
    else row.blocked++
  }
  const matching = decisions.filter((d) =>
    d.workspaceId === q.workspaceId && d.namespaceId === q.namespaceId &&
    (q.identifier === undefined || q.identifier.includes(d.identifier)) &&
    (q.overrideId === undefined || d.overrideId === q.overrideId) &&
    hourOf(d.time) >= from && hourOf(d.time) <= to
  )
  if (unit === undefined && !byIdentifier && !byOverride) {
    const row: Row = { total: 0, passed: 0, blocked: 0 }
    for (const d of matching) count(row, d)
    return [row]
  }
  const groups = new Map<string, Row>()
  for (const d of matching) {
    // Grouped by override, a decision no override made belongs to no group.
    if (byOverride && d.overrideId === undefined) continue
    const row: Row = { total: 0, passed: 0, blocked: 0 }
    const dims: Partial<Row> = {}
    if (unit !== undefined) dims.time = bucketOf(unit, d.time)
    if (byIdentifier) dims.identifier = d.identifier
    if (byOverride) dims.overrideId = d.overrideId!
    const id = JSON.stringify(dims)
    const found = groups.get(id) ?? { ...dims, ...row }
    groups.set(id, found)
    count(found, d)
  }
  let rows = [...groups.values()]
  if (unit !== undefined && !byIdentifier && !byOverride) {
    const first = q.start !== undefined
      ? bucketOf(unit, hourOf(q.start))
      : rows.length > 0
      ? Math.min(...rows.map((r) => r.time!))
      : undefined
    const filled: Array<Row> = []
    if (first !== undefined) {
      for (let t = first; t <= bucketOf(unit, to); t = nextBucket(unit, t)) {
        filled.push(groups.get(JSON.stringify({ time: t })) ?? { time: t, total: 0, passed: 0, blocked: 0 })
      }
    }
    rows = filled
  }
  const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)
  const byDefault = (a: Row, b: Row) =>
    (unit !== undefined ? a.time! - b.time! : 0) ||
    (byIdentifier ? cmp(a.identifier!, b.identifier!) : 0) ||
    (byOverride ? cmp(a.overrideId!, b.overrideId!) : 0)
  const dir = q.order === "desc" ? -1 : 1
  const orderBy = q.orderBy as "time" | "total" | "passed" | "blocked" | undefined
  rows.sort((a, b) =>
    orderBy === undefined ? dir * byDefault(a, b) : dir * (a[orderBy]! - b[orderBy]!) || byDefault(a, b)
  )
  return q.limit === undefined ? rows : rows.slice(0, q.limit)
}

/** A decision as scans hand it to SQL analytics: a raw decision with its latency. */
export interface ScanDecision extends RawDecision {
  /** Milliseconds, to the microsecond. */
  readonly latency: number
}

/** What a scan may read (`EventScan.ScanScope` without its row budget). */
export interface RawScanScope {
  readonly workspaceId: string
  readonly within: ReadonlyArray<string> | undefined
  readonly from: number
  readonly to: number
}

/** One decision as a scan hands it: time, namespace id, identifier, passed (1 or 0), latency, override id ("" for none). */
export type ScanRow = readonly [
  time: number,
  namespaceId: string,
  identifier: string,
  passed: number,
  latency: number,
  overrideId: string
]

/** Orders rows by every field, so that two multisets of rows compare as sorted lists. */
export const sortRows = (rows: ReadonlyArray<ScanRow>): Array<ScanRow> =>
  rows.map((row) => [JSON.stringify(row), row] as const).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map((
    [, row]
  ) => row)

/** The rows a scan of `scope` hands over: the decisions of its workspace and namespaces in [from, to), sorted. */
export const scan = (decisions: ReadonlyArray<ScanDecision>, scope: RawScanScope): Array<ScanRow> =>
  sortRows(
    decisions.filter((d) =>
      d.workspaceId === scope.workspaceId && (scope.within === undefined || scope.within.includes(d.namespaceId)) &&
      d.time >= scope.from && d.time < scope.to
    ).map((d): ScanRow => [d.time, d.namespaceId, d.identifier, d.passed ? 1 : 0, d.latency, d.overrideId ?? ""])
  )
