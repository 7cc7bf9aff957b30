/**
 * SQL analytics' reads of a store's counts in place of its events: for each api (namespace) in
 * scope, one read while the loop is free and the shape costs a few rows a day, else parts sized
 * to a step's time (from the store's hour totals, whole days where they can be), verifications and
 * limits served between them. Groups wider than an hour are added up across parts.
 */
import type { AggregationQuery, AggregationResult } from "@keymeter/core/Aggregation"
import { aggregationQuery, expandTags, OUTCOMES } from "@keymeter/core/Aggregation"
import type { QueryTooLarge, StorageError } from "@keymeter/core/Errors"
import * as Time from "@keymeter/core/Time"
import type * as Effect from "effect/Effect"
import { narrowWithin } from "../SqlEngine.js"
import type { Counts } from "../SqlQuery.js"
import type { CountShape, Pause, ScanHint, Weighted } from "./Context.js"
import { TooManyRows } from "./Context.js"
import { Dictionaries, MergedCounts, withNoIdentity } from "./Counts.js"
import { isFree, stepMs } from "./Lane.js"

/** What the reads of one query share. */
export interface Reads {
  readonly workspaceId: string
  /** Api (namespace) ids the caller may read; undefined: all of the workspace's. */
  readonly within: ReadonlyArray<string> | undefined
  /** Most events one part counts. */
  readonly maxPart: number
  /** A store's answer, at once where it answers without waiting; a scope over its row budget rejects. */
  readonly countsRead: <A>(effect: Effect.Effect<A, StorageError | QueryTooLarge>) => Promise<A>
}

/**
 * The count source of `store` for the executor (`Sources.counts`), or undefined without counts:
 * it reads a SELECT's shape, hands `take` batches of columns, and answers undefined where the
 * store cannot count the shape (the SELECT then reads events).
 */
export const countSource = <A extends { readonly length: number }>(
  reads: Reads,
  store: Counts | undefined,
  toColumns: (
    id: string,
    result: AggregationResult,
    from: number,
    dictionaries: Dictionaries,
    together: boolean
  ) => A & Weighted
) =>
  store === undefined ? undefined : async (
    hint: ScanHint,
    shape: CountShape,
    maxRows: number,
    pause: Pause,
    take: (batch: A & Weighted) => Promise<void>
  ): Promise<"read" | undefined> => {
    if (shape.credits === true && store.sumsCredits !== true) return undefined
    // Every api of the workspace: those with events are the store's to know, not the catalog's.
    const ids = narrowWithin(reads.within, hint.within) ??
      (store.within === undefined ? undefined : await reads.countsRead(store.within(reads.workspaceId)))
    if (ids === undefined || hint.from < (await reads.countsRead(store.from))) return undefined
    let rows = 0
    const apis = new Set(ids)
    for (const id of apis) {
      const dictionaries = new Dictionaries()
      const columns = (id: string, result: AggregationResult, from: number) =>
        toColumns(id, result, from, dictionaries, shape.outcomes === "together")
      const ask = (
        from: number,
        to: number,
        grouped: boolean,
        groupByIdentity: boolean,
        top?: CountShape["top"]
      ): AggregationQuery =>
        aggregationQuery(
          {
            apiId: id,
            keyIds: [],
            tags: [],
            externalId: undefined,
            start: from <= 0 ? undefined : from,
            end: Time.truncateToHour(Math.min(to, Time.MAX_TIME + 1) - 1),
            timeUnit: grouped ? shape.timeUnit : "hour",
            groupByKey: grouped && shape.key,
            groupByIdentity,
            groupByTag: grouped ? shape.tags : undefined,
            orderBy: top?.orderBy,
            order: top?.order ?? "asc",
            limit: top?.limit
          },
          reads.workspaceId,
          grouped ? Math.max(1, maxRows - rows) : Number.MAX_SAFE_INTEGER,
          grouped && shape.credits === true ? true : undefined
        )
      const read = async (from: number, to: number, groupByIdentity: boolean, top?: CountShape["top"]) => {
        const asked = ask(from, to, true, groupByIdentity, top)
        const result = await reads.countsRead(store.aggregate(asked))
        // Adapters may answer by tag set what was asked by tag.
        return shape.tags === "tag" && result.tags !== undefined ? expandTags(asked, result) : result
      }
      // By identity, events without one are read too, unless the SELECT keeps none of them.
      const identified = shape.identity && shape.identified === true
      // While the loop is free, a read whose cost is a few rows a day is made whole, as
      // getVerifications makes it: no hour totals to size parts by, no parts to add up. So is a
      // SELECT of the first groups by a counter: the store's top groups and their ties.
      const free = await isFree()
      const top = free && apis.size === 1 ? shape.top : undefined
      if (top !== undefined || free && reads.maxPart === Infinity && fewRowsADay(shape)) {
        const batch = columns(id, await read(hint.from, hint.to, shape.identity, top), hint.from)
        rows += batch.length
        if (rows > maxRows) throw new TooManyRows()
        await take(batch)
        continue
      }
      const hours = hourBuckets(await reads.countsRead(store.aggregate(ask(hint.from, hint.to, false, false))))
      // Groups wider than an hour span parts: their counts are added up across parts, so the
      // executor reads each group once (parts of a 30-day top-N would each hold every key).
      const merged = shape.timeUnit === "hour" ? undefined : new MergedCounts()
      // By identity, events without one are found once, from the sums (see `withNoIdentity`).
      const mergedAll = merged !== undefined && shape.identity && !identified ? new MergedCounts() : undefined
      const before = rows
      // Parts sized from the last one's pace, so that each takes about a step (see `stepMs`).
      // Without hours to tell apart, parts are whole days where they can be: the stores count
      // a whole day from its day counts, at a cost of its groups rather than its events.
      const byDays = shape.timeUnit !== "hour"
      let partEvents = Math.min(reads.maxPart, FIRST_PART_EVENTS)
      let partDays = 1
      for (let at = 0, from = hint.from; from < hint.to;) {
        const midnight = Math.ceil(from / DAY_MS) * DAY_MS
        const days = byDays && midnight === from
          ? daysAt(hours, at, from, hint.to, partDays, partEvents, reads.maxPart)
          : undefined
        const [to, next, events, held] = days ??
          partAt(
            hours,
            at,
            from,
            byDays ? Math.min(hint.to, midnight === from ? from + DAY_MS : midnight) : hint.to,
            partEvents
          )
        const started = performance.now()
        let took: number
        if (merged === undefined) {
          const result = shape.identity && !identified
            ? withNoIdentity(await read(from, to, true), await read(from, to, false))
            : await read(from, to, shape.identity)
          const batch = columns(id, result, from)
          took = performance.now() - started
          rows += batch.length
          if (rows > maxRows) throw new TooManyRows()
          // The executor's visit pauses on its own: not the part's time.
          await take(batch)
        } else {
          merged.add(await read(from, to, shape.identity))
          if (mergedAll !== undefined) mergedAll.add(await read(from, to, false))
          took = performance.now() - started
          rows = before + merged.size
          if (rows > maxRows) throw new TooManyRows()
        }
        // Toward a step's time; growing by at most a factor, as a part's cost is not all in its
        // events (a part slowed by a collection is followed by a small one, which grows back).
        const factor = Math.min(GROWTH, stepMs() / Math.max(took, 0.1))
        if (days !== undefined) partDays = Math.max(1, Math.round(held * factor))
        partEvents = Math.min(reads.maxPart, Math.max(MIN_PART_EVENTS, Math.round(events * factor)))
        ;[at, from] = [next, to]
        // Verifications and limits are served between parts.
        await pause()
      }
      if (merged !== undefined) {
        const result = mergedAll === undefined
          ? merged.result()
          : withNoIdentity(merged.result(), mergedAll.result())
        const batch = columns(id, result, hint.from)
        rows = before + batch.length
        if (rows > maxRows) throw new TooManyRows()
        await take(batch)
      }
    }
    return "read"
  }

/**
 * Events of a query's first part, before its pace is known: small, as the loop may be busy (the
 * next parts grow fast while they take little).
 */
const FIRST_PART_EVENTS = 8_192
/** Fewest events of a part, however slow the store. */
const MIN_PART_EVENTS = 2_048
/** Most a part grows over the last. */
const GROWTH = 16

/**
 * Whether a store counts the shape from a few rows a day (totals, outcomes, tag sets; not keys or
 * identities, of which a day may hold thousands, nor credits, summed from events): a read of any
 * range costs about as much as its days, not its events.
 */
const fewRowsADay = (shape: CountShape): boolean =>
  shape.timeUnit !== "hour" && !shape.key && !shape.identity && shape.credits !== true

/** A store's events per hour (`aggregate` by hour, which stores answer without reading events), in time order. */
const hourBuckets = (hours: AggregationResult): Array<{ readonly time: number; readonly events: number }> =>
  Array.from({ length: hours.size }, (_, row) => {
    let events = 0
    for (let o = 0; o < OUTCOMES; o++) events += hours.counts[row * OUTCOMES + o]!
    return { time: hours.time![row]!, events }
  }).sort((a, b) => a.time - b.time)

/** A part's end, the bucket the next part starts at, its events, and the days of it that hold events. */
type Part = readonly [to: number, next: number, events: number, days: number]

/**
 * The part that starts at `from` (at bucket `at`): about `partEvents` events, cut at an hour, the
 * last part ending at `end`. Its end, the bucket the next part starts at, and its events.
 */
const partAt = (
  hours: ReadonlyArray<{ readonly time: number; readonly events: number }>,
  at: number,
  from: number,
  end: number,
  partEvents: number
): Part => {
  let events = 0
  for (let b = at; b < hours.length; b++) {
    const bucket = hours[b]!
    if (bucket.time >= end || (events >= partEvents && bucket.time > from)) {
      return [bucket.time >= end ? end : bucket.time, b, events, 0]
    }
    events += bucket.events
  }
  return [end, hours.length, events, 0]
}

/**
 * The part of whole days that starts at `from` (a midnight, at bucket `at`), the last part ending
 * at `end`: days without events, then up to `days` days with events and about `events` events (at
 * least the first such day), never more than `maxEvents`: undefined when its first day with events
 * alone holds more (it is then cut by hours). Empty days cost a store nothing: they are not counted.
 */
const daysAt = (
  hours: ReadonlyArray<{ readonly time: number; readonly events: number }>,
  at: number,
  from: number,
  end: number,
  days: number,
  events: number,
  maxEvents: number
): Part | undefined => {
  let held = 0
  let total = 0
  let b = at
  let part: Part | undefined
  // Past the last bucket, the part runs to the end: nothing is left to count.
  if (b === hours.length) return [end, b, 0, 0]
  // From the midnight of the next day with events, if it is not this one.
  for (let dayEnd = Math.max(from, Math.floor(hours[b]!.time / DAY_MS) * DAY_MS) + DAY_MS;; dayEnd += DAY_MS) {
    if (dayEnd - DAY_MS >= end) return part
    let added = 0
    for (; b < hours.length && hours[b]!.time < Math.min(dayEnd, end); b++) added += hours[b]!.events
    if (total + added > maxEvents) return part
    if (held > 0 && (held >= days || total + added > events)) return part
    total += added
    held++
    part = [b === hours.length || dayEnd >= end ? end : dayEnd, b, total, held]
    if (b === hours.length || dayEnd >= end) return part
    // The next day with events: the part stops before it, or takes the days between.
    dayEnd = Math.max(dayEnd, Math.floor(hours[b]!.time / DAY_MS) * DAY_MS)
  }
}

const DAY_MS = 86_400_000
