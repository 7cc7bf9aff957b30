/**
 * A seeded mix of varied queries, as a user's dashboards would ask them (issue 15's "first
 * sight"): a random api of the ten; an unaligned window of 1 hour to 90 days ending anywhere in
 * the data; every grouping the contract allows (at most one time unit, `tag` or `tags`, with or
 * without key and identity); key filters of popular and rare keys; tag filters; and top-N
 * ordering. Each query is meant to be run once on a process that has not seen it (first sight),
 * then again (repeat).
 */
import type { RatelimitQueryInput } from "@keymeter/core/RatelimitQuery"
import type { VerificationQueryInput } from "@keymeter/core/VerificationQuery"
import { apiId, APIS, END, externalId, KEYS_API0, KEYS_OTHER, mulberry32, START, TAGS } from "./Dataset.js"
import type { Catalog } from "./Decisions.js"
import { NAMESPACES } from "./Decisions.js"

const HOUR = 3_600_000

/** The `count` queries of the mix seeded `seed`; the same arguments give the same mix. */
export const make = (count: number, seed: number): Array<VerificationQueryInput> => {
  const random = mulberry32(seed)
  const int = (n: number) => Math.floor(random() * n)
  const chance = (p: number) => random() < p
  const pick = <A>(values: ReadonlyArray<A>): A => values[int(values.length)]!
  const out: Array<VerificationQueryInput> = []
  for (let i = 0; i < count; i++) {
    const a = int(APIS)
    const keys = a === 0 ? KEYS_API0 : KEYS_OTHER
    // Windows from an hour to 90 days, log-uniform, unaligned, inside the data's 90 days.
    const length = Math.min(END - START, Math.round(HOUR * Math.exp(random() * Math.log(90 * 24))))
    const start = START + Math.floor(random() * (END - START - length + 1))
    const unit = pick([undefined, undefined, "hour", "day", "month"] as const)
    const groupBy: Array<string> = []
    if (unit !== undefined) groupBy.push(unit)
    if (chance(0.35)) groupBy.push("key")
    if (chance(0.15)) groupBy.push("identity")
    const tagGroup = pick([undefined, undefined, undefined, "tag", "tags"] as const)
    if (tagGroup !== undefined) groupBy.push(tagGroup)
    const query: Record<string, unknown> = { apiId: apiId(a), start, end: start + length - 1 }
    if (groupBy.length > 0) query.groupBy = groupBy
    // Key filters: a popular key (low numbers are the frequent ones), a rare one, or a few.
    if (chance(0.25)) {
      query.keyId = Array.from(
        { length: 1 + int(3) },
        () => `key_${a}_${chance(0.5) ? int(10) : int(keys)}`
      )
    }
    if (chance(0.15)) query.tag = [pick(TAGS)]
    if (chance(0.05)) query.externalId = externalId(int(2000))
    // Top N: the dashboards' "top keys / identities / tags".
    if (groupBy.some((g) => g === "key" || g === "identity" || g === "tag" || g === "tags") && chance(0.6)) {
      query.orderBy = pick(["total", "valid", "rateLimited", "usageExceeded"])
      query.order = "desc"
      query.limit = pick([5, 10, 20, 100])
    }
    out.push(query as unknown as VerificationQueryInput)
  }
  return out
}

/** The groupings a rate-limit query may have: no time unit or one, with or without identifier and override. */
const RATELIMIT_SHAPES: ReadonlyArray<ReadonlyArray<string>> = [undefined, "hour", "day", "month"].flatMap((unit) =>
  [false, true].flatMap((identifier) =>
    [false, true].map((override) => [
      ...(unit === undefined ? [] : [unit]),
      ...(identifier ? ["identifier"] : []),
      ...(override ? ["override"] : [])
    ])
  )
)

/**
 * The `count` getRatelimits queries of the mix seeded `seed`, over the decision data set's
 * catalog: a namespace (the big one a third of the time, else any of the ten), by id or by name;
 * an unaligned window of 1 hour to 90 days; each of the 16 groupings in turn (at most one time
 * unit, identifier, override); identifier filters of popular and rare identifiers (now and then
 * one never seen); overrideId filters (mostly an override deciding in the namespace); every
 * orderBy, either order, and top N.
 */
export const ratelimits = (count: number, seed: number, catalog: Catalog): Array<RatelimitQueryInput> => {
  const random = mulberry32(seed * 31 + 7)
  const int = (n: number) => Math.floor(random() * n)
  const chance = (p: number) => random() < p
  const pick = <A>(values: ReadonlyArray<A>): A => values[int(values.length)]!
  const out: Array<RatelimitQueryInput> = []
  for (let i = 0; i < count; i++) {
    const n = chance(1 / 3) ? 0 : int(NAMESPACES.length)
    const ns = NAMESPACES[n]!
    const length = Math.min(END - START, Math.round(HOUR * Math.exp(random() * Math.log(90 * 24))))
    const start = START + Math.floor(random() * (END - START - length + 1))
    const query: Record<string, unknown> = chance(0.5) ? { namespaceId: ns.id } : { namespaceName: ns.name }
    query.start = start
    query.end = start + length - 1
    const groupBy = RATELIMIT_SHAPES[i % RATELIMIT_SHAPES.length]!
    if (groupBy.length > 0) query.groupBy = groupBy
    if (chance(0.3)) {
      query.identifier = Array.from({ length: 1 + int(3) }, () =>
        chance(0.05)
          ? `never_seen_${int(1000)}`
          : catalog.identifiers[n]![chance(0.5) ? int(Math.min(10, ns.identifiers)) : int(ns.identifiers)]!)
    }
    if (chance(0.15)) {
      const deciding = catalog.overrides.filter((o) => o.namespaces.includes(n))
      query.overrideId = (deciding.length > 0 && chance(0.8) ? pick(deciding) : pick(catalog.overrides)).id
    }
    const unit = groupBy.find((g) => g === "hour" || g === "day" || g === "month")
    if (groupBy.length > 0 && chance(0.6)) {
      query.orderBy = pick(unit === undefined ? ["total", "passed", "blocked"] : ["time", "total", "passed", "blocked"])
      query.order = chance(0.7) ? "desc" : "asc"
      if (chance(0.7)) query.limit = pick([1, 5, 10, 20, 100])
    } else if (groupBy.length > 0 && chance(0.2)) {
      query.order = "desc"
    } else if (chance(0.1)) {
      query.limit = pick([1, 10])
    }
    out.push(query as unknown as RatelimitQueryInput)
  }
  return out
}

const span = (ms: number) => {
  const hours = Math.round(ms / HOUR)
  return hours >= 48 ? `${Math.round(hours / 24)} d` : `${hours} h`
}

/** The grouping of a rate-limit query, as a label (`total` when none). */
export const shapeOf = (query: RatelimitQueryInput): string =>
  query.groupBy === undefined || query.groupBy.length === 0 ? "total" : query.groupBy.join("+")

/** A rate-limit query in a line, for the report. */
export const describe = (query: RatelimitQueryInput): string => {
  const ns = NAMESPACES.find((n) => n.id === query.namespaceId || n.name === query.namespaceName)!
  const parts = [`${ns.name} (${ns.identifiers.toLocaleString("en")} ids)`, span(query.end! - query.start! + 1)]
  parts.push(shapeOf(query))
  if (query.identifier !== undefined) parts.push(`identifier in [${query.identifier.join(" ")}]`)
  if (query.overrideId !== undefined) parts.push(`overrideId=${query.overrideId}`)
  if (query.orderBy !== undefined) parts.push(`orderBy ${query.orderBy}`)
  if (query.order !== undefined) parts.push(query.order)
  if (query.limit !== undefined) parts.push(`limit ${query.limit}`)
  return parts.join(", ")
}
