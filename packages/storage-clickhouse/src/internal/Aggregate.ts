/**
 * `aggregate` of both stores: the planner's SELECT over a family of rollups, its rows read into
 * an `AggregationResult`.
 */
import type { AggregationQuery, AggregationResult } from "@keymeter/core/Aggregation"
import { OUTCOMES, tooLarge } from "@keymeter/core/Aggregation"
import type { QueryTooLarge, StorageError } from "@keymeter/core/Errors"
import type { Identity } from "@keymeter/core/Verification"
import * as Effect from "effect/Effect"
import type { Family } from "../Migrations.js"
import type { Connection } from "./Connection.js"
import * as Planner from "./Planner.js"

/** Answers queries from the rollups of `family`. */
export const make = (db: Connection, family: Family) =>
(
  query: AggregationQuery
): Effect.Effect<AggregationResult, StorageError | QueryTooLarge> =>
  Effect.gen(function*() {
    const plan = Planner.plan(query, family)
    if (plan === undefined) return { size: 0, counts: new Float64Array(0) }
    let rows = yield* db.query(plan.text)
    let groups: number | undefined
    if (plan.top) {
      const [answer] = rows as [[number, number, Array<Array<unknown>>]]
      groups = Number(answer[0])
      if (groups > query.maxRows) return yield* tooLarge(query, query.maxRows)
      rows = answer[2]
    }
    if (rows.length > query.maxRows) return yield* tooLarge(query, query.maxRows)
    const offset = plan.bucketed ? 1 : 0
    const keyAt = plan.dimensions.includes("key") ? offset : -1
    const identityAt = plan.dimensions.includes("identity") ? offset + (keyAt >= 0 ? 1 : 0) : -1
    const tagsAt = plan.dimensions.includes("tags")
      ? offset + (keyAt >= 0 ? 1 : 0) + (identityAt >= 0 ? 2 : 0)
      : -1
    const width = offset + (keyAt >= 0 ? 1 : 0) + (identityAt >= 0 ? 2 : 0) + (tagsAt >= 0 ? 1 : 0)
    // An ungrouped sum over nothing is one row of zeros: no event, no row.
    const kept = rows.filter((r) => {
      for (let o = 0; o < OUTCOMES; o++) if ((r[width + o] as number) !== 0) return true
      return false
    })
    const counts = new Float64Array(kept.length * OUTCOMES)
    kept.forEach((r, i) => {
      for (let o = 0; o < OUTCOMES; o++) counts[i * OUTCOMES + o] = r[width + o] as number
    })
    return {
      ...(groups !== undefined ? { groups } : {}),
      size: kept.length,
      counts,
      time: plan.bucketed ? Float64Array.from(kept, (r) => plan.bucketTime(r[0] as number)) : undefined,
      keyId: keyAt >= 0 ? kept.map((r) => r[keyAt] as string) : undefined,
      identity: identityAt >= 0
        ? kept.map((r): Identity => ({ id: r[identityAt] as string, externalId: r[identityAt + 1] as string }))
        : undefined,
      tag: tagsAt >= 0 && plan.perTag ? kept.map((r) => r[tagsAt] as string) : undefined,
      tags: tagsAt >= 0 && !plan.perTag ? kept.map((r) => r[tagsAt] as Array<string>) : undefined
    }
  })
