/**
 * Time rules of the analytics queries: every time is a UTC unix-milliseconds integer, windows are
 * truncated to the hour, and day/month buckets are UTC calendar units built from hour buckets.
 */

/** One hour in milliseconds. */
export const HOUR = 3_600_000

/** One day in milliseconds. */
export const DAY = 86_400_000

/** Largest time a JavaScript `Date` can represent (year 275760); later bounds are refused. */
export const MAX_TIME = 8_640_000_000_000_000

/** The time units a query can group by. */
export type TimeUnit = "hour" | "day" | "month"

/** Start of the UTC hour holding `time`. Floors, so it is also right for times before 1970. */
export const truncateToHour = (time: number): number => Math.floor(time / HOUR) * HOUR

/** Start of the UTC day holding `time`. */
export const truncateToDay = (time: number): number => Math.floor(time / DAY) * DAY

/** Start of the UTC month holding `time`. */
export const truncateToMonth = (time: number): number => {
  const date = new Date(time)
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1)
}

/** Start of the bucket of `unit` holding `time`. */
export const bucketStart = (unit: TimeUnit, time: number): number =>
  unit === "hour" ? truncateToHour(time) : unit === "day" ? truncateToDay(time) : truncateToMonth(time)

/** Start of the bucket following the bucket that starts at `start`. */
export const nextBucket = (unit: TimeUnit, start: number): number => {
  if (unit === "hour") return start + HOUR
  if (unit === "day") return start + DAY
  const date = new Date(start)
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1)
}

/** Number of buckets of `unit` from the bucket holding `from` to the bucket holding `to`, both included. */
export const bucketCount = (unit: TimeUnit, from: number, to: number): number => {
  if (to < from) return 0
  if (unit === "hour") return (truncateToHour(to) - truncateToHour(from)) / HOUR + 1
  if (unit === "day") return (truncateToDay(to) - truncateToDay(from)) / DAY + 1
  const a = new Date(from)
  const b = new Date(to)
  return (b.getUTCFullYear() - a.getUTCFullYear()) * 12 + (b.getUTCMonth() - a.getUTCMonth()) + 1
}

/** The day numbers (unix days) of the first days of the months that [from, to] (ms) touches. */
export const monthStartDays = (from: number, to: number): Array<number> => {
  const starts: Array<number> = []
  for (let t = truncateToMonth(from); t <= to; t = nextBucket("month", t)) starts.push(t / DAY)
  return starts
}

/** A range of hour numbers or day numbers (unix ms / HOUR, / DAY), both ends included. */
export interface Span {
  readonly from: number
  readonly to: number
}

/**
 * Hours [from, to] (hour numbers) as the whole UTC days they cover, only days up to `lastDay` when
 * given, and the hours before and after those days. Without a whole day, every hour is `before`.
 * Rollups answer the days from day rows and the rest from hour rows, so hour semantics stay exact.
 */
export const splitDays = (
  from: number,
  to: number,
  lastDay = Infinity
): { readonly before?: Span; readonly days?: Span; readonly after?: Span } => {
  const first = Math.ceil(from / 24)
  const last = Math.min(Math.floor((to + 1) / 24) - 1, lastDay)
  if (first > last) return { before: { from, to } }
  return {
    ...(from < first * 24 ? { before: { from, to: first * 24 - 1 } } : {}),
    days: { from: first, to: last },
    ...((last + 1) * 24 <= to ? { after: { from: (last + 1) * 24, to } } : {})
  }
}
