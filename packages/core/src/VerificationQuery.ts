/**
 * The analytics query: what a caller may ask (`VerificationQueryInput`) and the normalised form
 * the services and storage adapters work with (`VerificationQuery`).
 */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { ValidationError } from "./Errors.js"
import * as Time from "./Time.js"
import { boundedString, expected } from "./Validation.js"
import { MAX_ID_LENGTH, MAX_TAG_LENGTH, MAX_TAGS, Outcomes } from "./Verification.js"

/** Dimensions and time units a query may group by. */
export const GroupByValues = ["key", "identity", "tags", "tag", "month", "day", "hour"] as const

/** One groupBy value. */
export type GroupBy = typeof GroupByValues[number]

/** Fields a query may order by. */
export const OrderByValues = ["time", ...Outcomes, "total"] as const

/** One orderBy value. */
export type OrderBy = typeof OrderByValues[number]

/** Most key ids one query may filter on. */
export const MAX_KEY_IDS = 1000

const quoteList = (values: ReadonlyArray<string>) => values.join(", ")

/** Schema of one groupBy value. */
export const GroupBySchema = expected(Schema.Literal(...GroupByValues), `must be one of ${quoteList(GroupByValues)}`)

/** Schema of the orderBy value. */
export const OrderBySchema = expected(Schema.Literal(...OrderByValues), `must be one of ${quoteList(OrderByValues)}`)

/** Schema of the order value. */
export const OrderSchema = expected(Schema.Literal("asc", "desc"), "must be asc or desc")

const IdField = (what: string) => boundedString(what, 1, MAX_ID_LENGTH)

/** Schema of `start` and `end`: unix ms, or null for no bound. */
export const TimeBound = expected(
  Schema.NullOr(Schema.Number.pipe(Schema.int(), Schema.between(0, Time.MAX_TIME))),
  `must be an integer of unix milliseconds from 0 to ${Time.MAX_TIME}, or null`
)

/** Schema of `start`: the window's first hour. */
export const Start = TimeBound.annotations({
  description: "Unix ms; truncated to its UTC hour; inclusive. Default: no bound."
})

/** Schema of `end`: the window's last hour. */
export const End = TimeBound.annotations({
  description: "Unix ms; truncated to its UTC hour, that whole hour included. Default: now."
})

/** Schema of `limit`. */
export const Limit = expected(
  Schema.Number.pipe(Schema.int(), Schema.between(1, Number.MAX_SAFE_INTEGER)),
  "must be an integer >= 1"
).annotations({ description: "Maximum datapoints, integer >= 1, applied after ordering." })

/** What a caller may ask of `getVerifications`. Arrays are OR (`keyId`) and AND (`tag`) filters. */
export const VerificationQueryInput = Schema.Struct({
  apiId: IdField("an api id").annotations({
    description: "Only verifications of this api (of the caller's workspace)."
  }),
  externalId: Schema.optional(
    IdField("an external id").annotations({ description: "Only verifications whose identity has this external id." })
  ),
  keyId: Schema.optional(
    Schema.Array(IdField("a key id")).pipe(
      Schema.maxItems(MAX_KEY_IDS, { message: () => `must hold at most ${MAX_KEY_IDS} key ids` })
    ).annotations({ description: `Only these keys (OR), at most ${MAX_KEY_IDS}.` })
  ),
  tag: Schema.optional(
    Schema.Array(
      boundedString("a tag", 1, MAX_TAG_LENGTH)
    ).pipe(Schema.maxItems(MAX_TAGS, { message: () => `must hold at most ${MAX_TAGS} tags` })).annotations({
      description: `Only events carrying all these tags (AND), at most ${MAX_TAGS}.`
    })
  ),
  start: Schema.optional(Start),
  end: Schema.optional(End),
  groupBy: Schema.optional(
    Schema.Array(GroupBySchema).annotations({
      description: `Any of ${quoteList(GroupByValues)}. At most one time unit; not tag with tags.`
    })
  ),
  limit: Schema.optional(Limit),
  orderBy: Schema.optional(OrderBySchema.annotations({ description: `One of ${quoteList(OrderByValues)}.` })),
  order: Schema.optional(
    OrderSchema.annotations({ description: "asc (default) or desc; without orderBy it reverses the default ordering." })
  )
}).annotations({ identifier: "VerificationQueryInput" })

/** A query as a caller writes it. */
export type VerificationQueryInput = Schema.Schema.Type<typeof VerificationQueryInput>

/** A validated query: bounds truncated to the hour, filters de-duplicated, groupBy split by kind. */
export interface VerificationQuery {
  readonly apiId: string
  /** Events of any of these keys; empty: every key. */
  readonly keyIds: ReadonlyArray<string>
  /** Events whose tag set holds all of these (sorted, unique); empty: no tag filter. */
  readonly tags: ReadonlyArray<string>
  readonly externalId: string | undefined
  /** First hour bucket included (hour start), or no lower bound. */
  readonly start: number | undefined
  /** Last hour bucket included (hour start). */
  readonly end: number
  readonly timeUnit: Time.TimeUnit | undefined
  readonly groupByKey: boolean
  readonly groupByIdentity: boolean
  readonly groupByTag: "tag" | "tags" | undefined
  readonly orderBy: OrderBy | undefined
  readonly order: "asc" | "desc"
  readonly limit: number | undefined
}

const unique = <A>(values: ReadonlyArray<A>): Array<A> => Array.from(new Set(values))

const iso = (time: number) => new Date(time).toISOString()

/** Applies the cross-field rules and the hour truncation; `now` is the default end. */
export const normalize = (
  input: VerificationQueryInput,
  now: number
): Either.Either<VerificationQuery, ValidationError> => {
  const fail = (message: string) => Either.left(new ValidationError({ message }))
  const groupBy = unique(input.groupBy ?? [])
  const timeUnits = groupBy.filter((g): g is Time.TimeUnit => g === "hour" || g === "day" || g === "month")
  if (timeUnits.length > 1) {
    return fail(`groupBy: at most one of hour, day, month may be given, got ${timeUnits.join(", ")}`)
  }
  if (groupBy.includes("tag") && groupBy.includes("tags")) {
    return fail("groupBy: tag and tags cannot be combined; tag gives one row per tag, tags one per tag set")
  }
  const timeUnit = timeUnits[0]
  if (input.orderBy === "time" && timeUnit === undefined) {
    return fail("orderBy: time needs a time unit in groupBy (hour, day or month)")
  }
  const start = input.start === undefined || input.start === null ? undefined : Time.truncateToHour(input.start)
  const end = Time.truncateToHour(input.end === undefined || input.end === null ? now : input.end)
  if (start !== undefined && start > end) {
    return fail(
      `start: must not be after end once both are truncated to the hour, got start ${iso(start)} and end ${iso(end)}`
    )
  }
  return Either.right({
    apiId: input.apiId,
    keyIds: unique(input.keyId ?? []),
    tags: unique(input.tag ?? []).sort(),
    externalId: input.externalId,
    start,
    end,
    timeUnit,
    groupByKey: groupBy.includes("key"),
    groupByIdentity: groupBy.includes("identity"),
    groupByTag: groupBy.includes("tags") ? "tags" : groupBy.includes("tag") ? "tag" : undefined,
    orderBy: input.orderBy,
    order: input.order ?? "asc",
    limit: input.limit
  })
}

/** True when the answer is one series of time buckets, every bucket present (zero fill). */
export const isZeroFilled = (query: VerificationQuery): boolean =>
  query.timeUnit !== undefined && !query.groupByKey && !query.groupByIdentity && query.groupByTag === undefined
