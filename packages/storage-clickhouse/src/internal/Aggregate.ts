/**
 * `aggregate` of both stores: the planner's SELECT over a family of rollups, its answer's Native
 * blocks read straight into an `AggregationResult` (the planner's columns have fixed types: the
 * bucket a UInt32, ids Strings, tag sets Array(String), counters UInt64).
 */
import type { AggregationQuery, AggregationResult } from "@keymeter/core/Aggregation"
import { orTooLarge, OUTCOMES } from "@keymeter/core/Aggregation"
import type { QueryTooLarge, StorageError } from "@keymeter/core/Errors"
import { StorageError as StorageFailure } from "@keymeter/core/Errors"
import type { Identity } from "@keymeter/core/Verification"
import * as Effect from "effect/Effect"
import type { Family } from "../Migrations.js"
import type { Connection } from "./Connection.js"
import type { ArrayColumn, Block, Column, Numbers, TupleColumn } from "./NativeReader.js"
import * as Planner from "./Planner.js"

/** Answers queries from the rollups of `family`. */
export const make = (db: Connection, family: Family) =>
(
  query: AggregationQuery
): Effect.Effect<AggregationResult, StorageError | QueryTooLarge> =>
  Effect.gen(function*() {
    const plan = Planner.plan(query, family)
    if (plan === undefined) return { size: 0, counts: new Float64Array(0) }
    const answer = yield* db.queryBlocks(plan.text)
    const result = yield* Effect.try({
      try: () => read(answer, plan, query.maxRows),
      catch: (cause) => new StorageFailure({ message: "ClickHouse: an answer keymeter could not read", cause })
    })
    return yield* orTooLarge(query, result)
  })

/** The rows of an answer to `plan`, or undefined when they are more than `maxRows`. */
const read = (blocks: ReadonlyArray<Block>, plan: Planner.Plan, maxRows: number): AggregationResult | undefined => {
  if (plan.top) {
    // One row: how many groups the whole answer holds, the limit-th value, the rows reaching it.
    const [block] = blocks
    if (blocks.length !== 1 || block!.rows !== 1 || block!.columns.length !== 3) {
      throw new Error("ClickHouse Native: a top N's answer is one row of three columns")
    }
    const groups = numbers(block!.columns[0]!)[0]!
    if (groups > maxRows) return undefined
    const top = block!.columns[2]!
    if (!isArray(top) || !isTuple(top.values)) {
      throw new Error("ClickHouse Native: a top N's rows are an array of tuples")
    }
    const rows = new Columns(plan, top.ends[0]!)
    rows.add(top.values.elements, top.ends[0]!)
    return rows.result(groups)
  }
  let total = 0
  for (const block of blocks) total += block.rows
  if (total > maxRows) return undefined
  const rows = new Columns(plan, total)
  for (const block of blocks) rows.add(block.columns, block.rows)
  return rows.result(undefined)
}

const isArray = (column: Column): column is ArrayColumn => "_tag" in column && column._tag === "Array"
const isTuple = (column: Column): column is TupleColumn => "_tag" in column && column._tag === "Tuple"

/** `column` as numbers, or a throw: the planner's buckets and counters are integers. */
const numbers = (column: Column | undefined): Numbers => {
  if (column instanceof Float64Array) return column
  throw new Error("ClickHouse Native: a column of numbers expected")
}

/** `column` as strings, or a throw: the planner's ids are Strings. */
const strings = (column: Column | undefined): Array<string> => {
  if (Array.isArray(column)) return column
  throw new Error("ClickHouse Native: a column of strings expected")
}

/** Rows of blocks gathered into columns; a row whose counters are all zero is left out. */
class Columns {
  size = 0
  private readonly counts: Float64Array<ArrayBuffer>
  private readonly time: Float64Array<ArrayBuffer> | undefined
  private readonly keyId: Array<string> | undefined
  private readonly identity: Array<Identity> | undefined
  private readonly tag: Array<string> | undefined
  private readonly tags: Array<ReadonlyArray<string>> | undefined

  /** Columns for at most `rows` rows. */
  constructor(private readonly plan: Planner.Plan, rows: number) {
    const byTag = plan.dimensions.includes("tags")
    this.counts = new Float64Array(rows * OUTCOMES)
    this.time = plan.bucketed ? new Float64Array(rows) : undefined
    this.keyId = plan.dimensions.includes("key") ? [] : undefined
    this.identity = plan.dimensions.includes("identity") ? [] : undefined
    this.tag = byTag && plan.perTag ? [] : undefined
    this.tags = byTag && !plan.perTag ? [] : undefined
  }

  /**
   * The first `rows` rows of `columns`: [bucket?, key?, identity id and external id?, tag or tag
   * set?, c0 .. c8], as the plan selects them (a top N's tuples have its ordered value after).
   */
  add(columns: ReadonlyArray<Column>, rows: number): void {
    let c = 0
    const bucket = this.time !== undefined ? numbers(columns[c++]) : undefined
    const keyId = this.keyId !== undefined ? strings(columns[c++]) : undefined
    const identityId = this.identity !== undefined ? strings(columns[c++]) : undefined
    const externalId = this.identity !== undefined ? strings(columns[c++]) : undefined
    const tag = this.tag !== undefined ? strings(columns[c++]) : undefined
    const tagSets = this.tags !== undefined ? columns[c++] : undefined
    if (tagSets !== undefined && !(isArray(tagSets) && Array.isArray(tagSets.values))) {
      throw new Error("ClickHouse Native: tag sets are arrays of strings")
    }
    if (columns.length < c + OUTCOMES) throw new Error("ClickHouse Native: fewer columns than the plan selects")
    const counters = Array.from({ length: OUTCOMES }, (_, o) => numbers(columns[c + o]))
    const counts = this.counts
    for (let r = 0; r < rows; r++) {
      const at = this.size * OUTCOMES
      let any = false
      for (let o = 0; o < OUTCOMES; o++) {
        const value = counters[o]![r]!
        counts[at + o] = value
        if (value !== 0) any = true
      }
      // An ungrouped sum over nothing is one row of zeros: no event, no row.
      if (!any) continue
      if (bucket !== undefined) this.time![this.size] = this.plan.bucketTime(bucket[r]!)
      this.size++
      if (keyId !== undefined) this.keyId!.push(keyId[r]!)
      if (identityId !== undefined) this.identity!.push({ id: identityId[r]!, externalId: externalId![r]! })
      if (tag !== undefined) this.tag!.push(tag[r]!)
      if (tagSets !== undefined) {
        const { ends, values } = tagSets as ArrayColumn
        this.tags!.push((values as Array<string>).slice(r === 0 ? 0 : ends[r - 1]!, ends[r]!))
      }
    }
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
