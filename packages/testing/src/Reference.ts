/**
 * A deliberately naive answer to getVerifications over raw events, written from docs/behaviour.md §3
 * without any of the production code: the oracle of the property tests. And the naive raw scan
 * (`scan`): the events of a scope, each as one row, as stores keep them.
 */
import type { Datapoint } from "@keymeter/core/Datapoint"
import type { VerificationColumns } from "@keymeter/core/EventScan"
import { Outcomes } from "@keymeter/core/Verification"

export interface RawEvent {
  readonly time: number
  readonly workspaceId: string
  readonly apiId: string
  readonly keyId: string
  readonly identity?: { readonly id: string; readonly externalId: string } | undefined
  readonly outcome: string
  readonly tags: ReadonlyArray<string>
  readonly spentCredits?: number | undefined
  readonly latency?: number | undefined
  readonly region?: string | undefined
}

/** What a raw scan may read (as core's `ScanScope`). */
export interface RawScope {
  readonly workspaceId: string
  readonly within: ReadonlyArray<string> | undefined
  readonly from: number
  readonly to: number
}

/** One event as a raw scan returns it. */
export interface ScanRow {
  readonly time: number
  readonly apiId: string
  readonly keyId: string
  readonly identityId: string
  readonly externalId: string
  readonly outcome: string
  /** Sorted, each once. */
  readonly tags: ReadonlyArray<string>
  readonly spentCredits: number
  /** Milliseconds, to the microsecond (rounded to the nearest). */
  readonly latency: number
  readonly region: string
}

/**
 * Each row of a scan's batches as a tuple, in the batches' order: [time, api, key, identity id,
 * external id, outcome, tags, credits, latency, region].
 */
export const columnRows = (batches: ReadonlyArray<VerificationColumns>): Array<Array<unknown>> =>
  batches.flatMap((b) =>
    Array.from({ length: b.length }, (_, i) => [
      b.time[i],
      b.apiId.values[b.apiId.codes[i]!],
      b.keyId.values[b.keyId.codes[i]!],
      b.identityId.values[b.identityId.codes[i]!],
      b.externalId.values[b.externalId.codes[i]!],
      Outcomes[b.outcome[i]!],
      b.tags.values[b.tags.codes[i]!],
      b.spentCredits[i],
      b.latency[i],
      b.region.values[b.region.codes[i]!]
    ])
  )

/** The events of the scope, one row each, sorted by their JSON text (a multiset's canonical order). */
export const scan = (events: ReadonlyArray<RawEvent>, scope: RawScope): Array<ScanRow> =>
  canonical(
    events.filter((e) =>
      e.workspaceId === scope.workspaceId &&
      (scope.within === undefined || scope.within.includes(e.apiId)) &&
      e.time >= scope.from && e.time < scope.to
    ).map((e) => ({
      time: e.time,
      apiId: e.apiId,
      keyId: e.keyId,
      identityId: e.identity?.id ?? "",
      externalId: e.identity?.externalId ?? "",
      outcome: e.outcome,
      tags: [...new Set(e.tags)].sort(),
      spentCredits: e.spentCredits ?? 0,
      latency: Math.round((e.latency ?? 0) * 1000) / 1000,
      region: e.region ?? ""
    }))
  )

/** `rows` sorted by their JSON text: two multisets of rows are equal when their canonical lists are. */
export const canonical = (rows: ReadonlyArray<ScanRow>): Array<ScanRow> =>
  rows.map((row) => [JSON.stringify(row), row] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, row]) => row)

export interface RawQuery {
  readonly workspaceId: string
  readonly apiId: string
  readonly keyId?: ReadonlyArray<string>
  readonly tag?: ReadonlyArray<string>
  readonly externalId?: string
  readonly start?: number | null
  readonly end: number
  readonly groupBy?: ReadonlyArray<string>
  readonly orderBy?: string
  readonly order?: "asc" | "desc"
  readonly limit?: number
}

// The outcome names are the contract's; the oracle's independence is in how it counts them.
const OUTCOMES = Outcomes

const HOUR = 3600000
const hourOf = (t: number) => Math.floor(t / HOUR) * HOUR
const dayOf = (t: number) => {
  const d = new Date(t)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate())
}
const monthOf = (t: number) => {
  const d = new Date(t)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
}
const bucketOf = (unit: string, t: number) => unit === "hour" ? hourOf(t) : unit === "day" ? dayOf(t) : monthOf(t)
const next = (unit: string, t: number) => {
  const d = new Date(t)
  if (unit === "hour") return t + HOUR
  if (unit === "day") return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)
}

const emptyPoint = (): Record<string, number> => {
  const point: Record<string, number> = { total: 0 }
  for (const o of OUTCOMES) point[o] = 0
  return point
}

export const answer = (events: ReadonlyArray<RawEvent>, q: RawQuery): Array<Datapoint> => {
  const groupBy = q.groupBy ?? []
  const unit = groupBy.find((g) => g === "hour" || g === "day" || g === "month")
  const byKey = groupBy.includes("key")
  const byIdentity = groupBy.includes("identity")
  const byTag = groupBy.includes("tag")
  const byTags = groupBy.includes("tags")
  const from = q.start === undefined || q.start === null ? -Infinity : hourOf(q.start)
  const to = hourOf(q.end)

  const matching = events.filter((e) =>
    e.workspaceId === q.workspaceId &&
    e.apiId === q.apiId &&
    (q.keyId === undefined || q.keyId.length === 0 || q.keyId.includes(e.keyId)) &&
    (q.tag ?? []).every((t) => e.tags.includes(t)) &&
    (q.externalId === undefined || e.identity?.externalId === q.externalId) &&
    hourOf(e.time) >= from && hourOf(e.time) <= to
  )

  if (unit === undefined && !byKey && !byIdentity && !byTag && !byTags) {
    const point = emptyPoint()
    for (const e of matching) {
      point[e.outcome]!++
      point.total!++
    }
    return [point as unknown as Datapoint]
  }

  const groups = new Map<string, Record<string, unknown>>()
  for (const e of matching) {
    if (byIdentity && e.identity === undefined) continue
    const sorted = [...new Set(e.tags)].sort()
    const tagChoices: Array<string | undefined> = byTag ? sorted : [undefined]
    for (const tag of tagChoices) {
      const dims: Record<string, unknown> = {}
      if (unit !== undefined) dims.time = bucketOf(unit, e.time)
      if (byKey) dims.keyId = e.keyId
      if (byIdentity) dims.identity = { id: e.identity!.id, externalId: e.identity!.externalId }
      if (byTag) dims.tag = tag
      if (byTags) dims.tags = sorted
      const id = JSON.stringify(dims)
      let point = groups.get(id)
      if (point === undefined) groups.set(id, point = { ...dims, ...emptyPoint() })
      ;(point as any)[e.outcome]++
      ;(point as any).total++
    }
  }

  let points = [...groups.values()]
  if (unit !== undefined && !byKey && !byIdentity && !byTag && !byTags) {
    const times = points.map((p) => p.time as number)
    const first = q.start !== undefined && q.start !== null
      ? bucketOf(unit, hourOf(q.start))
      : times.length > 0
      ? Math.min(...times)
      : undefined
    const filled: Array<Record<string, unknown>> = []
    if (first !== undefined) {
      for (let t = first; t <= bucketOf(unit, to); t = next(unit, t)) {
        filled.push(groups.get(JSON.stringify({ time: t })) ?? { time: t, ...emptyPoint() })
      }
    }
    points = filled
  }

  const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)
  const byDefault = (a: any, b: any) =>
    (unit !== undefined ? a.time - b.time : 0) ||
    (byKey ? cmp(a.keyId, b.keyId) : 0) ||
    (byIdentity ? cmp(a.identity.id, b.identity.id) || cmp(a.identity.externalId, b.identity.externalId) : 0) ||
    (byTag ? cmp(a.tag, b.tag) : 0) ||
    (byTags ? cmp(a.tags.join(","), b.tags.join(",")) : 0)
  const dir = q.order === "desc" ? -1 : 1
  points.sort((a: any, b: any) =>
    q.orderBy === undefined ? dir * byDefault(a, b) : dir * (a[q.orderBy] - b[q.orderBy]) || byDefault(a, b)
  )
  if (q.limit !== undefined) points = points.slice(0, q.limit)
  return points as unknown as Array<Datapoint>
}
