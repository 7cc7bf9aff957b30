/**
 * What the engine's path tests share: random histories of events (arrival order, batches, late
 * rows), queries as a caller writes them, the naive reference of `@keymeter/testing` as the oracle
 * (the engine's rows go through core's shared answer rules first, as in `Analytics`), the route a
 * query should take through `Aggregate`, and a trace of the path that did answer it (spies on the
 * exports of the path modules, which `Aggregate` calls through their module namespaces).
 */
import { expect, vi } from "@effect/vitest"
import * as Aggregation from "@keymeter/core/Aggregation"
import type { AggregationQuery, AggregationResult } from "@keymeter/core/Aggregation"
import type { Datapoint } from "@keymeter/core/Datapoint"
import type { TimeUnit } from "@keymeter/core/Time"
import * as Verification from "@keymeter/core/Verification"
import type { Verification as Event } from "@keymeter/core/Verification"
import type { GroupBy, OrderBy } from "@keymeter/core/VerificationQuery"
import * as VerificationQuery from "@keymeter/core/VerificationQuery"
import * as Reference from "@keymeter/testing/Reference"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import { Engine } from "../src/Engine.js"
import { DayIndex } from "../src/internal/DayIndex.js"
import * as KeyIndex from "../src/internal/KeyIndex.js"
import { Partition } from "../src/internal/Partition.js"
import * as Compile from "../src/internal/query/Compile.js"
import * as DayAggregates from "../src/internal/query/DayAggregates.js"
import * as KeyRows from "../src/internal/query/KeyRows.js"
import * as Scan from "../src/internal/query/Scan.js"
import * as Series from "../src/internal/query/Series.js"
import * as TopN from "../src/internal/query/TopN.js"

export const HOUR = 3_600_000
export const WS = "ws"
export const API = "api"
/** Saturday 27 January 2024, 00:00 UTC: ten days of data cross a month's end. */
export const BASE = Date.UTC(2024, 0, 27)
/** Hours of the small histories. */
export const SPAN = 240
/** Enough for any answer of these tests: the cap never decides them unless a test says so. */
export const MAX_ROWS = 1_000_000

export const KEYS = ["k0", "k1", "k2", "k3", "k4", "k5"] as const
export const TAGS = ["a", "b", "c", "d"] as const
/** The same identity id with two external ids (kept apart), and one external id on two identities. */
export const IDENTITIES = [
  { id: "i1", externalId: "x1" },
  { id: "i1", externalId: "x2" },
  { id: "i2", externalId: "x1" },
  { id: "i3", externalId: "x3" }
] as const

/** A query as a caller writes it (see `VerificationQueryInput`), always with an end. */
export interface Input {
  readonly apiId: string
  readonly keyId?: ReadonlyArray<string>
  readonly tag?: ReadonlyArray<string>
  readonly externalId?: string
  readonly start?: number
  readonly end: number
  readonly groupBy?: ReadonlyArray<GroupBy>
  readonly orderBy?: OrderBy
  readonly order?: "asc" | "desc"
  readonly limit?: number
}

// ---------------------------------------------------------------------------------------------
// Events and histories

export const outcomeArb: FastCheck.Arbitrary<Verification.Outcome> = FastCheck.oneof(
  { arbitrary: FastCheck.constant("valid" as const), weight: 3 },
  { arbitrary: FastCheck.constantFrom(...Verification.Outcomes), weight: 2 }
)

/** An event of the first `span` hours from BASE, mostly of (WS, API), a few of other partitions. */
export const eventArb = (span = SPAN): FastCheck.Arbitrary<Event> =>
  FastCheck.record({
    hour: FastCheck.integer({ min: 0, max: span - 1 }),
    offset: FastCheck.integer({ min: 0, max: HOUR - 1 }),
    place: FastCheck.oneof(
      { arbitrary: FastCheck.constant([WS, API] as const), weight: 12 },
      { arbitrary: FastCheck.constantFrom([WS, "api_2"] as const, ["ws_2", API] as const), weight: 1 }
    ),
    keyId: FastCheck.constantFrom(...KEYS),
    identity: FastCheck.option(FastCheck.constantFrom(...IDENTITIES), { nil: undefined, freq: 3 }),
    tags: FastCheck.shuffledSubarray([...TAGS], { maxLength: 3 }),
    outcome: outcomeArb
  }).map(({ hour, identity, keyId, offset, outcome, place, tags }) =>
    Verification.make({
      time: BASE + hour * HOUR + offset,
      workspaceId: place[0],
      apiId: place[1],
      keyId,
      identity,
      outcome,
      tags
    })
  )

/**
 * Events and how they arrive: as generated (most rows late), in time order, or in time order with
 * every fifth held back to the end (late rows across the window); in `batches` parts, with a
 * late-merge threshold of 1 or 16 (merges rewrite the main run) or the default (late rows stay in
 * the late run).
 */
export interface History {
  readonly events: ReadonlyArray<Event>
  readonly arrival: "generated" | "sorted" | "lateTail"
  readonly batches: number
  readonly lateMerge: number | undefined
}

export const historyArb = (options: { readonly span?: number; readonly maxEvents?: number } = {}) =>
  FastCheck.record({
    events: FastCheck.array(eventArb(options.span), { minLength: 1, maxLength: options.maxEvents ?? 200, size: "max" }),
    arrival: FastCheck.constantFrom("generated" as const, "sorted" as const, "lateTail" as const),
    batches: FastCheck.integer({ min: 1, max: 3 }),
    lateMerge: FastCheck.constantFrom(undefined, 1, 16)
  })

/**
 * Histories whose keys each carry one identity (k1 none), but k5, whose events carry any: its
 * (bucket, key) totals are not its identities' groups, so queries of identities it has data in
 * are left to the scan.
 */
export const oneIdentityPerKeyArb = historyArb().map((history) => ({
  ...history,
  events: history.events.map((event) => {
    if (event.keyId === "k5") return event
    const k = Number(event.keyId.slice(1))
    return { ...event, identity: k === 1 ? undefined : IDENTITIES[k % IDENTITIES.length] }
  })
}))

const arrange = ({ arrival, events }: History): ReadonlyArray<Event> => {
  if (arrival === "generated") return events
  const sorted = [...events].sort((a, b) => a.time - b.time)
  if (arrival === "sorted") return sorted
  return [...sorted.filter((_, i) => i % 5 !== 0), ...sorted.filter((_, i) => i % 5 === 0).reverse()]
}

/**
 * Appends the history to a new engine in its parts (in batches of 23), calling `step` after each
 * part with the events appended so far: queries between parts find days and late runs computed by
 * earlier queries, then written again.
 */
export const replay = (history: History, step: (engine: Engine, arrived: ReadonlyArray<Event>) => void): void => {
  const engine = new Engine({ lateMergeThreshold: history.lateMerge })
  const ordered = arrange(history)
  const part = Math.ceil(ordered.length / history.batches)
  for (let at = 0; at < ordered.length; at += part) {
    const slice = ordered.slice(at, at + part)
    for (let b = 0; b < slice.length; b += 23) engine.append(slice.slice(b, b + 23))
    step(engine, ordered.slice(0, at + slice.length))
  }
}

/** A seeded generator of numbers in [0, 1) (mulberry32), for data sets too large for FastCheck. */
export const random = (seed: number) => () => {
  seed = (seed + 0x6D2B79F5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

/** Hours of the large history. */
export const BIG_SPAN = 1400
export const HEAVY_KEYS = Array.from({ length: 10 }, (_, i) => `h${i}`)
export const RARE_KEYS = Array.from({ length: 40 }, (_, i) => `r${i}`)

/**
 * About 140,000 events of (WS, API) over BIG_SPAN hours: two full chunks of 65,536 rows (with key
 * indexes) and part of a third. Ten heavy keys hold 85% of the rows, forty rare keys the rest.
 * `hours` holds what arrives at each hour: the events of every 50th hour arrive an hour late, all
 * together (a backlog, which a small late-merge threshold merges into the main run, rewriting its
 * tail and cutting a chunk once); with `trickle`, 3 in 100 other events arrive one to eight hours
 * late (late rows spread over the whole window, so many that they stay in the late run).
 */
export const bigHistory = (seed: number, options: { readonly trickle: boolean }): {
  readonly events: Array<Event>
  readonly hours: Array<Array<Event>>
} => {
  const next = random(seed)
  const pick = <A>(values: ReadonlyArray<A>) => values[Math.floor(next() * values.length)]!
  const events: Array<Event> = []
  const hours: Array<Array<Event>> = []
  const due = new Map<number, Array<Event>>()
  const later = (hour: number, event: Event) => {
    let list = due.get(hour)
    if (list === undefined) due.set(hour, list = [])
    list.push(event)
  }
  for (let h = 0; h < BIG_SPAN; h++) {
    const batch: Array<Event> = []
    const n = 90 + Math.floor(next() * 20)
    for (let i = 0; i < n; i++) {
      const event = Verification.make({
        time: BASE + h * HOUR + Math.floor(next() * HOUR),
        workspaceId: WS,
        apiId: API,
        keyId: next() < 0.85 ? pick(HEAVY_KEYS) : pick(RARE_KEYS),
        identity: next() < 0.6 ? pick(IDENTITIES) : undefined,
        outcome: next() < 0.6 ? "valid" : pick(Verification.Outcomes),
        tags: TAGS.filter(() => next() < 0.3)
      })
      events.push(event)
      if (h % 50 === 49) later(h + 1, event)
      else if (options.trickle && next() < 0.03) later(h + 1 + Math.floor(next() * 8), event)
      else batch.push(event)
    }
    hours.push([...batch, ...(due.get(h) ?? [])])
    due.delete(h)
  }
  hours.push([...due.values()].flat())
  return { events, hours }
}

/** An engine holding the large history, appended an hour at a time. */
export const bigEngine = (hours: ReadonlyArray<ReadonlyArray<Event>>, lateMergeThreshold?: number): Engine => {
  const engine = new Engine({ lateMergeThreshold })
  for (const batch of hours) engine.append(batch)
  return engine
}

// ---------------------------------------------------------------------------------------------
// Queries

/** `A` with the fields that may be undefined made optional instead. */
type Defined<A> =
  & { [K in keyof A as undefined extends A[K] ? never : K]: A[K] }
  & { [K in keyof A as undefined extends A[K] ? K : never]?: Exclude<A[K], undefined> }

/** Drops the fields that are undefined: queries are written without them. */
const defined = <A extends object>(fields: A): Defined<A> =>
  Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as Defined<A>

/** `arb` or undefined: undefined `absent` times in `absent + present`. */
export const maybe = <A>(arb: FastCheck.Arbitrary<A>, absent = 1, present = 1): FastCheck.Arbitrary<A | undefined> =>
  FastCheck.oneof({ arbitrary: FastCheck.constant(undefined), weight: absent }, { arbitrary: arb, weight: present })

export interface Window {
  readonly start: number | undefined
  readonly end: number
}

/** A window around the first `span` hours: from a few hours to all of them, sometimes open at the start. */
export const windowArb = (span = SPAN, minHours = 0): FastCheck.Arbitrary<Window> =>
  FastCheck.record({
    from: FastCheck.integer({ min: -30, max: span + 6 }),
    hours: FastCheck.integer({ min: minHours, max: span + 30 }),
    open: FastCheck.integer({ min: 0, max: 5 }).map((n) => n === 0),
    startOffset: FastCheck.integer({ min: 0, max: HOUR - 1 }),
    endOffset: FastCheck.integer({ min: 0, max: HOUR - 1 })
  }).map(({ endOffset, from, hours, open, startOffset }) => ({
    start: open ? undefined : BASE + from * HOUR + startOffset,
    end: BASE + (from + hours) * HOUR + endOffset
  }))

export const unitArb: FastCheck.Arbitrary<TimeUnit | undefined> = FastCheck.constantFrom(
  undefined,
  "hour",
  "day",
  "month"
)
export const counterArb: FastCheck.Arbitrary<Exclude<OrderBy, "time">> = FastCheck.constantFrom(
  "total",
  ...Verification.Outcomes
)
export const orderArb = FastCheck.constantFrom("asc" as const, "desc" as const)
/** Names stored, and now and then one that is not. */
const names = <A extends string>(stored: ReadonlyArray<A>, unknown: string) =>
  FastCheck.oneof(
    { arbitrary: FastCheck.constantFrom(...stored), weight: 8 },
    { arbitrary: FastCheck.constant(unknown), weight: 1 }
  )
export const keyFilterArb = FastCheck.uniqueArray(names(KEYS, "k_unknown"), { minLength: 1, maxLength: 3 })
export const tagFilterArb = FastCheck.uniqueArray(names(TAGS, "t_unknown"), { minLength: 1, maxLength: 2 })
export const externalIdArb = names(["x1", "x2", "x3"], "x_unknown")
/** Limits that are small (most answers have more groups), or any up to past the top-N bound. */
export const limitArb = FastCheck.oneof(FastCheck.integer({ min: 1, max: 4 }), FastCheck.integer({ min: 1, max: 1500 }))

export type Dim = "key" | "identity" | "tag" | "tags"

export interface Shape {
  readonly window: Window
  readonly apiId?: string | undefined
  readonly keyId?: ReadonlyArray<string> | undefined
  readonly tag?: ReadonlyArray<string> | undefined
  readonly externalId?: string | undefined
  readonly dims?: ReadonlyArray<Dim> | undefined
  readonly unit?: TimeUnit | undefined
  readonly orderBy?: OrderBy | undefined
  readonly order?: "asc" | "desc" | undefined
  readonly limit?: number | undefined
}

/** The query of a shape (orderBy time is dropped without a time unit, which it needs). */
export const build = (shape: Shape): Input =>
  defined({
    apiId: shape.apiId ?? API,
    keyId: shape.keyId,
    tag: shape.tag,
    externalId: shape.externalId,
    start: shape.window.start,
    end: shape.window.end,
    groupBy: [...(shape.dims ?? []), ...(shape.unit === undefined ? [] : [shape.unit])],
    orderBy: shape.orderBy === "time" && shape.unit === undefined ? undefined : shape.orderBy,
    order: shape.order,
    limit: shape.limit
  })

/** Any query: every combination of filters, dimensions, time unit, order and limit. */
export const queryArb = (span = SPAN): FastCheck.Arbitrary<Input> =>
  FastCheck.record({
    window: windowArb(span),
    apiId: FastCheck.oneof(
      { arbitrary: FastCheck.constant(API), weight: 20 },
      { arbitrary: FastCheck.constant("api_none"), weight: 1 }
    ),
    keyId: maybe(keyFilterArb, 2),
    tag: maybe(tagFilterArb, 3),
    externalId: maybe(externalIdArb, 3),
    dims: FastCheck.oneof(
      FastCheck.constant([]),
      FastCheck.constantFrom<ReadonlyArray<Dim>>(["key"], ["identity"], ["tag"], ["tags"]),
      FastCheck.tuple(
        FastCheck.subarray<Dim>(["key", "identity"]),
        FastCheck.constantFrom<Array<Dim>>([], ["tag"], ["tags"])
      )
        .map(([a, b]) => [...a, ...b])
    ),
    unit: maybe(unitArb),
    orderBy: maybe(FastCheck.oneof(counterArb, FastCheck.constant("time" as const)), 1, 2),
    order: maybe(orderArb),
    limit: maybe(limitArb, 1, 2)
  }).map(build)

// ---------------------------------------------------------------------------------------------
// Routes

export type Path = "empty" | "totalsSeries" | "postingSeries" | "dayIndex" | "topN" | "scan"

interface Facts {
  readonly keys: Set<string>
  readonly tagsets: Array<ReadonlyArray<string>>
  readonly tags: Set<string>
  readonly externalIds: Set<string>
  readonly identities: number
  /** Per key, the identities its events carried ("" for none). */
  readonly keyIdentities: Map<string, Set<string>>
  /** Per key, the hours it has events in. */
  readonly keyHours: Map<string, Set<number>>
  readonly firstHour: number
  readonly lastHour: number
}

const factsCache = new WeakMap<ReadonlyArray<Event>, Map<string, Facts | undefined>>()

/** What the partition of `apiId` holds, from the raw events (undefined: nothing). */
const factsOf = (events: ReadonlyArray<Event>, apiId: string): Facts | undefined => {
  let byApi = factsCache.get(events)
  if (byApi === undefined) factsCache.set(events, byApi = new Map())
  if (byApi.has(apiId)) return byApi.get(apiId)
  const keys = new Set<string>()
  const tagsets = new Map<string, ReadonlyArray<string>>()
  const tags = new Set<string>()
  const externalIds = new Set<string>()
  const identities = new Set<string>()
  const keyIdentities = new Map<string, Set<string>>()
  const keyHours = new Map<string, Set<number>>()
  let firstHour = Infinity
  let lastHour = -Infinity
  for (const e of events) {
    if (e.workspaceId !== WS || e.apiId !== apiId) continue
    const hour = Math.floor(e.time / HOUR)
    firstHour = Math.min(firstHour, hour)
    lastHour = Math.max(lastHour, hour)
    keys.add(e.keyId)
    const identity = e.identity === undefined ? "" : JSON.stringify([e.identity.id, e.identity.externalId])
    keyIdentities.set(e.keyId, (keyIdentities.get(e.keyId) ?? new Set()).add(identity))
    keyHours.set(e.keyId, (keyHours.get(e.keyId) ?? new Set()).add(hour))
    tagsets.set(e.tags.join(","), e.tags)
    for (const tag of e.tags) tags.add(tag)
    if (e.identity !== undefined) {
      externalIds.add(e.identity.externalId)
      identities.add(JSON.stringify([e.identity.id, e.identity.externalId]))
    }
  }
  const facts = keys.size === 0 ? undefined : {
    keys,
    tagsets: [...tagsets.values()],
    tags,
    externalIds,
    identities: identities.size,
    keyIdentities,
    keyHours,
    firstHour,
    lastHour
  }
  byApi.set(apiId, facts)
  return facts
}

/**
 * The path `Aggregate` documents for `input` over `events`, written from its module comment and
 * the dictionaries' limits: the engine's answer is checked against it.
 */
export const expectedPath = (events: ReadonlyArray<Event>, input: Input): Path => {
  const facts = factsOf(events, input.apiId)
  if (facts === undefined) return "empty"
  const keyIds = input.keyId ?? []
  const tags = input.tag ?? []
  // Filters naming nothing stored, or a window outside the data, answer nothing at once.
  if (keyIds.length > 0 && !keyIds.some((k) => facts.keys.has(k))) return "empty"
  if (tags.length > 0 && !facts.tagsets.some((set) => tags.every((t) => set.includes(t)))) return "empty"
  if (input.externalId !== undefined && !facts.externalIds.has(input.externalId)) return "empty"
  // Every key's events carried one identity: the external id names keys, a key filter.
  if (input.externalId !== undefined && [...facts.keyIdentities.values()].every((ids) => ids.size === 1)) {
    const named = [...facts.keyIdentities].filter(([, ids]) => {
      const [only] = [...ids]
      return only !== "" && JSON.parse(only!)[1] === input.externalId
    }).map(([key]) => key)
    const kept = keyIds.length === 0 ? named : named.filter((key) => keyIds.includes(key))
    if (kept.length === 0) return "empty"
    const { externalId: _, ...rest } = input
    return expectedPath(events, { ...rest, keyId: kept })
  }
  const from = input.start === undefined ? facts.firstHour : Math.max(Math.floor(input.start / HOUR), facts.firstHour)
  const to = Math.min(Math.floor(input.end / HOUR), facts.lastHour)
  if (from > to) return "empty"
  // Keys with events in the window (and the key filter) whose events carried more than one identity.
  const mixedKeys = [...facts.keyIdentities].some(([key, identities]) =>
    identities.size > 1 && (keyIds.length === 0 || keyIds.includes(key)) &&
    [...facts.keyHours.get(key)!].some((hour) => hour >= from && hour <= to)
  )
  return routeOf(input, { keys: facts.keys.size, identities: facts.identities, tags: facts.tags.size, mixedKeys })
}

/**
 * The path of a query that finds data, by its shape and the sizes of the partition's dictionaries
 * (distinct keys, identities and tags; the day index keeps dense arrays up to 65,536, 16,383 and
 * 4,096 of them), and whether a key with events in the window carried more than one identity.
 */
export const routeOf = (
  input: Input,
  sizes: {
    readonly keys: number
    readonly identities: number
    readonly tags: number
    readonly mixedKeys?: boolean
  } = {
    keys: 0,
    identities: 0,
    tags: 0
  }
): Exclude<Path, "empty"> => {
  const groupBy = input.groupBy ?? []
  const unit = groupBy.find((g) => g === "hour" || g === "day" || g === "month")
  const dims = groupBy.filter((g) => g === "key" || g === "identity" || g === "tag" || g === "tags")
  const keyFilter = (input.keyId ?? []).length > 0
  const otherFilter = (input.tag ?? []).length > 0 || input.externalId !== undefined
  if (dims.length === 0) return otherFilter ? "scan" : keyFilter ? "postingSeries" : "totalsSeries"
  const top = unit === undefined && input.limit !== undefined && input.limit <= 1000 &&
    input.orderBy !== undefined && input.orderBy !== "time"
  // Top keys (and their identities) by total per day or month bucket, from the day index.
  const bucketedTop = (unit === "day" || unit === "month") && input.limit !== undefined && input.limit <= 1000 &&
    input.orderBy === "total"
  if (
    bucketedTop && !otherFilter && dims.includes("key") && dims.every((d) => d === "key" || d === "identity") &&
    sizes.keys <= 65_536 && !(dims.includes("identity") && sizes.mixedKeys === true)
  ) return "dayIndex"
  if (dims.length === 1 && !otherFilter) {
    const dim = dims[0]
    if (dim === "key" && top && input.orderBy === "total" && sizes.keys <= 65_536) return "dayIndex"
    if (dim === "identity" && top && !keyFilter && sizes.identities + 1 <= 16_384) return "dayIndex"
    if (dim === "tag" && !keyFilter && sizes.tags <= (unit === "hour" ? 64 : 4096)) return "dayIndex"
  }
  if (dims.length === 1 && top && dims[0] !== "tag") return "topN"
  return "scan"
}

// ---------------------------------------------------------------------------------------------
// Traces

/** What answering one query did. */
export interface Trace {
  /** The path that answered (or threw `TooManyRows`); `empty` when none was called. */
  readonly path: Path
  /** The scan loops it compiled or reused, by shape. */
  readonly shapes: ReadonlyArray<Compile.Shape>
  /** Reads of a key's entries in a full chunk's key index. */
  readonly keyIndexReads: number
  /** Gathers of filtered keys' entries from key indexes (the scan's posting source). */
  readonly gathers: number
  /** Keys whose counters were read from the key indexes and the late run (`countKeyHours`). */
  readonly countedKeys: ReadonlyArray<number>
  /** Ranges of whole days read from the day index, and the days whose aggregates were (re)computed. */
  readonly dayRanges: ReadonlyArray<readonly [number, number]>
  readonly computedDays: ReadonlyArray<number>
}

/** Runs `f` with spies on the paths and their helpers, and says what it did. */
export const traced = <A>(f: () => A): { readonly value: A; readonly trace: Trace } => {
  const paths = {
    totalsSeries: vi.spyOn(Series, "totalsSeries"),
    postingSeries: vi.spyOn(Series, "postingSeries"),
    dayIndex: vi.spyOn(DayAggregates, "fromDayIndex"),
    topN: vi.spyOn(TopN, "topN"),
    scan: vi.spyOn(Scan, "scan")
  }
  const compile = vi.spyOn(Compile, "compile")
  const range = vi.spyOn(KeyIndex, "range")
  const gather = vi.spyOn(KeyRows, "gather")
  const countKey = vi.spyOn(KeyRows, "countKeysHours")
  const between = vi.spyOn(DayIndex.prototype, "between")
  const computeDay = vi.spyOn(Partition.prototype, "computeDay")
  try {
    const value = f()
    const answered = (Object.keys(paths) as Array<keyof typeof paths>).filter((name) =>
      paths[name].mock.results.some((r) => r.type === "throw" || r.value !== undefined)
    )
    expect(answered.length, `paths that answered: ${answered.join(", ")}`).toBeLessThanOrEqual(1)
    return {
      value,
      trace: {
        path: answered[0] ?? "empty",
        shapes: compile.mock.calls.map(([shape]) => shape),
        keyIndexReads: range.mock.calls.length,
        gathers: gather.mock.calls.length,
        countedKeys: countKey.mock.calls.flatMap(([, , keys]) => keys),
        dayRanges: between.mock.calls.map(([from, to]) => [from, to] as const),
        computedDays: computeDay.mock.calls.map(([day]) => day)
      }
    }
  } finally {
    for (const spy of [...Object.values(paths), compile, range, gather, countKey, between, computeDay]) {
      spy.mockRestore()
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The oracle

/** The query the engine receives for `input` (validated and normalised by core). */
export const toQuery = (input: Input, maxRows = MAX_ROWS): AggregationQuery => {
  const normalized = VerificationQuery.normalize(input, input.end)
  if (Either.isLeft(normalized)) throw new Error(`${JSON.stringify(input)}: ${normalized.left.message}`)
  return { ...normalized.right, workspaceId: WS, maxRows }
}

/**
 * The engine's answer as a caller gets it: its rows through core's shared rules (tag expansion,
 * zero fill, ordering, limit); `datapoints` undefined when the engine or the cap refuses.
 */
export const answer = (engine: Engine, input: Input, maxRows = MAX_ROWS): {
  readonly result: AggregationResult | undefined
  readonly datapoints: Array<Datapoint> | undefined
  readonly trace: Trace
} => {
  const query = toQuery(input, maxRows)
  const { trace, value: result } = traced(() => engine.aggregate(query))
  if (result === undefined) return { result, datapoints: undefined, trace }
  const rows = query.groupByTag === "tag" && result.tags !== undefined ? Aggregation.expandTags(query, result) : result
  const final = Aggregation.finalize(query, rows, maxRows)
  return { result, datapoints: Either.isRight(final) ? final.right : undefined, trace }
}

/** The reference's answer to `input` over the raw events. */
export const reference = (events: ReadonlyArray<Event>, input: Input): Array<Datapoint> =>
  Reference.answer(events, { ...input, workspaceId: WS })

/**
 * Checks the engine's answer to `input` against the reference over `events`, its `groups` (set by
 * the top-N paths, which return only the rows that can make the limit) against the size of the
 * reference's answer without limit, and the path that answered against {@link expectedPath}.
 */
export const check = (engine: Engine, events: ReadonlyArray<Event>, input: Input): Trace => {
  const { datapoints, result, trace } = answer(engine, input)
  const label = JSON.stringify(input)
  expect(datapoints, label).toEqual(reference(events, input))
  if (result?.groups !== undefined) {
    const { limit: _, ...unlimited } = input
    expect(result.groups, `groups of ${label}`).toBe(reference(events, unlimited).length)
  }
  expect(trace.path, `path of ${label}`).toBe(expectedPath(events, input))
  return trace
}

/** Counts of the paths taken, for asserting that a property exercised the path it targets. */
export const tally = () => {
  const counts = new Map<string, number>()
  return {
    add: (name: string) => counts.set(name, (counts.get(name) ?? 0) + 1),
    get: (name: string) => counts.get(name) ?? 0,
    names: () => [...counts.keys()].sort()
  }
}

/**
 * Checks (see {@link check}) 1 to `maxQueries` (default 5) random `queries` on each step of
 * random histories, giving `each` every input with its trace: the frame of the path properties.
 */
export const checkHistories = (
  queries: FastCheck.Arbitrary<Input>,
  options: { readonly seed: number; readonly numRuns: number; readonly maxQueries?: number },
  each: (input: Input, trace: Trace) => void
) =>
  FastCheck.assert(
    FastCheck.property(
      historyArb(),
      FastCheck.array(queries, { minLength: 1, maxLength: options.maxQueries ?? 5 }),
      (history, inputs) =>
        replay(history, (engine, arrived) => {
          for (const input of inputs) each(input, check(engine, arrived, input))
        })
    ),
    { seed: options.seed, numRuns: options.numRuns }
  )
