/**
 * What every query path shares about one query on one partition: the filters as masks over the
 * dictionaries, the window clamped to the hours holding data, and its time buckets.
 */
import type { AggregationQuery } from "@keymeter/core/Aggregation"
import * as Time from "@keymeter/core/Time"
import type { Partition } from "../Partition.js"
import type { Run } from "../Run.js"
import type { Dim } from "./Compile.js"

/** One time bucket of the answer as hours, both ends included. */
export interface Bucket {
  readonly time: number | undefined
  readonly fromHour: number
  readonly toHour: number
}

/** The buckets of the query's time unit over hours [lo, hi]; one without a time unit. */
export const bucketsOf = (query: AggregationQuery, lo: number, hi: number): Array<Bucket> => {
  const unit = query.timeUnit
  if (unit === undefined) return [{ time: undefined, fromHour: lo, toHour: hi }]
  const out: Array<Bucket> = []
  const HOUR = Time.HOUR
  for (let t = Time.bucketStart(unit, lo * HOUR); t <= hi * HOUR;) {
    const next = Time.nextBucket(unit, t)
    out.push({ time: t, fromHour: Math.max(lo, t / HOUR), toHour: Math.min(hi, next / HOUR - 1) })
    t = next
  }
  return out
}

/** Everything the paths share about one query on one partition. */
export interface QueryContext {
  readonly query: AggregationQuery
  readonly partition: Partition
  readonly runs: ReadonlyArray<Run>
  readonly late: Run
  readonly plan: ReadonlyArray<Bucket>
  readonly lo: number
  readonly hi: number
  readonly keyMask: Uint8Array | null
  readonly keyCodes: ReadonlyArray<number>
  readonly tagsetMask: Uint8Array | null
  readonly identityMask: Uint8Array | null
  readonly dims: ReadonlyArray<Dim>
}
