/**
 * Unkey v1's `keys.getVerifications` on the wire, the older per-key usage
 * (docs/unkey-v1-contract.md): its query, and day series of verifications summed into its answer.
 */
import * as KeyModel from "@keymeter/core/Key"
import * as Validation from "@keymeter/core/Validation"
import * as Schema from "effect/Schema"

/** Query of `keys.getVerifications`, Unkey v1's older per-key usage: one of keyId and ownerId. */
export const KeyUsageQuery = Schema.Struct({
  keyId: Schema.optional(KeyModel.KeyId),
  ownerId: Schema.optional(KeyModel.ExternalId),
  start: Schema.optional(KeyModel.Integer(0, Number.MAX_SAFE_INTEGER, "must be a time in unix milliseconds")),
  end: Schema.optional(KeyModel.Integer(0, Number.MAX_SAFE_INTEGER, "must be a time in unix milliseconds")),
  granularity: Schema.optional(Validation.expected(Schema.Literal("day"), "must be \"day\""))
}).pipe(
  Schema.filter((query) =>
    (query.keyId === undefined) !== (query.ownerId === undefined) ||
    { path: ["keyId"], message: "give keyId or ownerId, one of them" }
  )
).annotations({ identifier: "V1KeyUsageQuery" })

/** Answer of `keys.getVerifications`: a day's successes, rate-limited and usage-exceeded verifications. */
export const KeyUsage = Schema.Struct({
  verifications: Schema.Array(Schema.Struct({
    time: Schema.Number,
    success: Schema.Number,
    rateLimited: Schema.Number,
    usageExceeded: Schema.Number
  }))
}).annotations({ identifier: "V1KeyUsage" })

/** The days of several apis' day series (getVerifications' datapoints), summed by day, in order. */
export const toKeyUsage = (
  series: ReadonlyArray<ReadonlyArray<Record<string, unknown>>>
): typeof KeyUsage.Type => {
  const days = new Map<number, { time: number; success: number; rateLimited: number; usageExceeded: number }>()
  for (const points of series) {
    for (const point of points) {
      const time = point.time as number
      const day = days.get(time) ?? { time, success: 0, rateLimited: 0, usageExceeded: 0 }
      day.success += point.valid as number
      day.rateLimited += point.rateLimited as number
      day.usageExceeded += point.usageExceeded as number
      days.set(time, day)
    }
  }
  return { verifications: [...days.values()].sort((a, b) => a.time - b.time) }
}
