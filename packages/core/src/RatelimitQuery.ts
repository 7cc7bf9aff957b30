/**
 * The rate-limit analytics query (`getRatelimits`): what a caller may ask, and its mapping onto the
 * verification query the stores answer (see `RatelimitEvent`'s projection), so that windows,
 * groupings, ordering, zero fill and limits follow `getVerifications`' rules to the letter.
 */
import * as Schema from "effect/Schema"
import type { Datapoint } from "./Datapoint.js"
import { MAX_IDENTIFIER_LENGTH } from "./Override.js"
import { boundedString, expected } from "./Validation.js"
import type { GroupBy, OrderBy, VerificationQueryInput } from "./VerificationQuery.js"
import { End, Limit, MAX_KEY_IDS, OrderSchema, Start } from "./VerificationQuery.js"

/** Dimensions and time units a query may group by. */
export const GroupByValues = ["identifier", "override", "month", "day", "hour"] as const

/** One groupBy value. */
export type RatelimitGroupBy = typeof GroupByValues[number]

/** Fields a query may order by. */
export const OrderByValues = ["time", "total", "passed", "blocked"] as const

/** One orderBy value. */
export type RatelimitOrderBy = typeof OrderByValues[number]

/** Most identifiers one query may filter on. */
export const MAX_IDENTIFIERS = MAX_KEY_IDS

const list = (values: ReadonlyArray<string>) => values.join(", ")

/** What a caller may ask of `getRatelimits`. `identifier` is an OR filter. */
export const RatelimitQueryInput = Schema.Struct({
  namespaceId: Schema.optional(
    boundedString("a namespace id", 1, 255).annotations({
      description: "The namespace, by id (of the caller's workspace). Give it or namespaceName."
    })
  ),
  namespaceName: Schema.optional(
    boundedString("a namespace name", 1, 255).annotations({ description: "The namespace, by name." })
  ),
  identifier: Schema.optional(
    Schema.Array(boundedString("an identifier", 1, MAX_IDENTIFIER_LENGTH)).pipe(
      Schema.maxItems(MAX_IDENTIFIERS, { message: () => `must hold at most ${MAX_IDENTIFIERS} identifiers` })
    ).annotations({ description: `Only these identifiers (OR), at most ${MAX_IDENTIFIERS}.` })
  ),
  overrideId: Schema.optional(
    boundedString("an override id", 1, 255).annotations({ description: "Only decisions this override made." })
  ),
  start: Schema.optional(Start),
  end: Schema.optional(End),
  groupBy: Schema.optional(
    Schema.Array(
      expected(Schema.Literal(...GroupByValues), `must be one of ${list(GroupByValues)}`)
    ).annotations({
      description: `Any of ${list(GroupByValues)}; at most one time unit. override counts only the decisions ` +
        "an override made."
    })
  ),
  limit: Schema.optional(Limit),
  orderBy: Schema.optional(
    expected(Schema.Literal(...OrderByValues), `must be one of ${list(OrderByValues)}`).annotations({
      description: `One of ${list(OrderByValues)}.`
    })
  ),
  order: Schema.optional(
    OrderSchema.annotations({ description: "asc (default) or desc; without orderBy it reverses the default ordering." })
  )
}).annotations({ identifier: "RatelimitQueryInput" })

/** A query as a caller writes it. */
export type RatelimitQueryInput = Schema.Schema.Type<typeof RatelimitQueryInput>

/** One row of a `getRatelimits` answer. */
export const RatelimitDatapoint = Schema.Struct({
  time: Schema.optional(Schema.Number.annotations({ description: "bucket start, unix ms; only with a time unit" })),
  identifier: Schema.optional(Schema.String.annotations({ description: "only with groupBy=identifier" })),
  overrideId: Schema.optional(Schema.String.annotations({ description: "only with groupBy=override" })),
  total: Schema.Number,
  passed: Schema.Number,
  blocked: Schema.Number
}).annotations({ identifier: "RatelimitDatapoint" })

/** One row of a `getRatelimits` answer. */
export interface RatelimitDatapoint extends Schema.Schema.Type<typeof RatelimitDatapoint> {}

const GROUP_BY: Record<RatelimitGroupBy, GroupBy> = {
  identifier: "key",
  override: "identity",
  month: "month",
  day: "day",
  hour: "hour"
}

const ORDER_BY: Record<RatelimitOrderBy, OrderBy> = {
  time: "time",
  total: "total",
  passed: "valid",
  blocked: "rateLimited"
}

/** The verification query of a rate-limit query of the namespace `namespaceId` (see the projection). */
export const toVerificationQuery = (input: RatelimitQueryInput, namespaceId: string): VerificationQueryInput => ({
  apiId: namespaceId,
  keyId: input.identifier,
  externalId: input.overrideId,
  start: input.start,
  end: input.end,
  groupBy: input.groupBy?.map((g) => GROUP_BY[g]),
  limit: input.limit,
  orderBy: input.orderBy === undefined ? undefined : ORDER_BY[input.orderBy],
  order: input.order
})

/** A verification datapoint of the projection as the rate-limit datapoint it stands for. */
export const fromDatapoint = (point: Datapoint): RatelimitDatapoint => {
  // Fields in the order the schema lists them, as JSON then shows them.
  const out: { -readonly [K in keyof RatelimitDatapoint]: RatelimitDatapoint[K] } = {} as RatelimitDatapoint
  if (point.time !== undefined) out.time = point.time
  if (point.keyId !== undefined) out.identifier = point.keyId
  if (point.identity !== undefined) out.overrideId = point.identity.id
  out.total = point.valid + point.rateLimited
  out.passed = point.valid
  out.blocked = point.rateLimited
  return out
}
