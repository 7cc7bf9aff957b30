/**
 * `aggregate` of both stores: the planner's SELECT over a family of rollups, its RowBinary answer
 * read straight into an `AggregationResult` (the planner's columns have fixed types: the bucket a
 * UInt32, ids Strings, tag sets Array(String), counters UInt64).
 */
import type { AggregationQuery, AggregationResult } from "@keymeter/core/Aggregation"
import { grown, orTooLarge, OUTCOMES } from "@keymeter/core/Aggregation"
import type { QueryTooLarge, StorageError } from "@keymeter/core/Errors"
import { StorageError as StorageFailure } from "@keymeter/core/Errors"
import type { Identity } from "@keymeter/core/Verification"
import * as Effect from "effect/Effect"
import type { Family } from "../Migrations.js"
import type { Connection } from "./Connection.js"
import * as Planner from "./Planner.js"
import { RowBinaryReader } from "./RowBinary.js"

/** Answers queries from the rollups of `family`. */
export const make = (db: Connection, family: Family) =>
(
  query: AggregationQuery
): Effect.Effect<AggregationResult, StorageError | QueryTooLarge> =>
  Effect.gen(function*() {
    const plan = Planner.plan(query, family)
    if (plan === undefined) return { size: 0, counts: new Float64Array(0) }
    const answer = yield* db.queryRowBinary(plan.text)
    const result = yield* Effect.try({
      try: () => read(answer, plan, query.maxRows),
      catch: (cause) => new StorageFailure({ message: "ClickHouse: an answer keymeter could not read", cause })
    })
    return yield* orTooLarge(query, result)
  })

/** The rows of an answer to `plan`, or undefined when they are more than `maxRows`. */
const read = (answer: Buffer, plan: Planner.Plan, maxRows: number): AggregationResult | undefined => {
  const reader = new RowBinaryReader(answer)
  const rows = new Columns(plan, answer.length)
  let groups: number | undefined
  if (plan.top) {
    // One row: how many groups the whole answer holds, the limit-th value, the rows reaching it.
    groups = reader.uint64()
    reader.uint64()
    if (groups > maxRows) return undefined
    for (let n = reader.length(); n > 0; n--) {
      rows.read(reader)
      reader.uint64()
    }
  } else {
    let read = 0
    while (!reader.done) {
      if (++read > maxRows) return undefined
      rows.read(reader)
    }
  }
  if (!reader.done) throw new Error("RowBinary: bytes after the last row")
  return rows.result(groups)
}

/** Rows read one after another into columns; a row whose counters are all zero is left out. */
class Columns {
  size = 0
  private counts: Float64Array<ArrayBuffer>
  private time: Float64Array<ArrayBuffer> | undefined
  private readonly keyId: Array<string> | undefined
  private readonly identity: Array<Identity> | undefined
  private readonly tag: Array<string> | undefined
  private readonly tags: Array<ReadonlyArray<string>> | undefined

  /** Columns are sized once for the most rows `bytes` of answer can hold (each id at least a byte). */
  constructor(private readonly plan: Planner.Plan, bytes: number) {
    const byTag = plan.dimensions.includes("tags")
    const smallest = (plan.bucketed ? 4 : 0) + plan.dimensions.length + (plan.dimensions.includes("identity") ? 1 : 0) +
      OUTCOMES * 8
    const rows = Math.max(1, Math.ceil(bytes / smallest))
    this.counts = new Float64Array(rows * OUTCOMES)
    this.time = plan.bucketed ? new Float64Array(rows) : undefined
    this.keyId = plan.dimensions.includes("key") ? [] : undefined
    this.identity = plan.dimensions.includes("identity") ? [] : undefined
    this.tag = byTag && plan.perTag ? [] : undefined
    this.tags = byTag && !plan.perTag ? [] : undefined
  }

  read(reader: RowBinaryReader): void {
    const bucket = this.plan.bucketed ? reader.uint32() : 0
    const keyId = this.keyId !== undefined ? reader.string() : ""
    const identityId = this.identity !== undefined ? reader.string() : ""
    const externalId = this.identity !== undefined ? reader.string() : ""
    const tag = this.tag !== undefined ? reader.string() : ""
    const tags = this.tags !== undefined ? reader.strings() : undefined
    const row = this.size
    if ((row + 1) * OUTCOMES > this.counts.length) {
      this.counts = grown(this.counts)
      if (this.time !== undefined) this.time = grown(this.time)
    }
    // An ungrouped sum over nothing is one row of zeros: no event, no row.
    if (!reader.uint64sInto(this.counts, row * OUTCOMES, OUTCOMES)) return
    this.size++
    if (this.time !== undefined) this.time[row] = this.plan.bucketTime(bucket)
    this.keyId?.push(keyId)
    this.identity?.push({ id: identityId, externalId })
    this.tag?.push(tag)
    this.tags?.push(tags!)
  }

  result(groups: number | undefined): AggregationResult {
    return {
      ...(groups !== undefined ? { groups } : {}),
      size: this.size,
      counts: this.counts.subarray(0, this.size * OUTCOMES),
      time: this.time?.subarray(0, this.size),
      keyId: this.keyId,
      identity: this.identity,
      tag: this.tag,
      tags: this.tags
    }
  }
}
