/**
 * The rows of an analytics answer.
 */
import * as Schema from "effect/Schema"
import { Identity } from "./Verification.js"

const Count = Schema.Number.pipe(Schema.int(), Schema.nonNegative())

/** One time slice, or one slice per group when grouping. Every counter is always present. */
export const Datapoint = Schema.Struct({
  time: Schema.optional(Schema.Number.annotations({ description: "bucket start, unix ms; only with a time unit" })),
  keyId: Schema.optional(Schema.String.annotations({ description: "only with groupBy=key" })),
  identity: Schema.optional(Identity.annotations({ description: "only with groupBy=identity" })),
  tag: Schema.optional(Schema.String.annotations({ description: "only with groupBy=tag" })),
  tags: Schema.optional(Schema.Array(Schema.String).annotations({ description: "only with groupBy=tags; sorted" })),
  total: Count,
  valid: Count,
  notFound: Count,
  forbidden: Count,
  usageExceeded: Count,
  rateLimited: Count,
  unauthorized: Count,
  disabled: Count,
  insufficientPermissions: Count,
  expired: Count
}).annotations({ identifier: "Datapoint" })

/** One row of an analytics answer. */
export interface Datapoint extends Schema.Schema.Type<typeof Datapoint> {}
