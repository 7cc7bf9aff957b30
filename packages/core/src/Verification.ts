/**
 * Verification events: the outcome of one API-key verification, as recorded.
 */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { ValidationError } from "./Errors.js"
import { boundedString, describeValue as describe, expected, isWellFormed, NOT_WELL_FORMED } from "./Validation.js"

/** The nine outcomes of a verification, in the order the datapoint counters use. */
export const Outcomes = [
  "valid",
  "notFound",
  "forbidden",
  "usageExceeded",
  "rateLimited",
  "unauthorized",
  "disabled",
  "insufficientPermissions",
  "expired"
] as const

/** One outcome of a verification. */
export type Outcome = typeof Outcomes[number]

/** Schema of an outcome name. */
export const Outcome = Schema.Literal(...Outcomes)

/**
 * Position of each outcome in {@link Outcomes}: adapters store an outcome as this code. A Map, as
 * it is read once per event at ingest: a keyed property load with a variable key is megamorphic.
 */
export const OutcomeIndex: ReadonlyMap<string, number> = new Map(Outcomes.map((outcome, index) => [outcome, index]))

/** Most tags one verification may carry. */
export const MAX_TAGS = 10

/** Longest tag, in UTF-16 code units. */
export const MAX_TAG_LENGTH = 128

/** Longest key id, identity id, external id or api id. */
export const MAX_ID_LENGTH = 255

/** Most verifications one record call accepts. */
export const MAX_BATCH = 10_000

/** How far ahead of the server's clock a verification's time may be. */
export const MAX_CLOCK_SKEW = 60_000

/** Most credits one verification may record as spent (stores keep them as 32-bit unsigned integers). */
export const MAX_SPENT_CREDITS = 4_294_967_295

/** Longest latency one verification may record, in ms (an hour). */
export const MAX_LATENCY = 3_600_000

/** Longest region name, in UTF-16 code units. */
export const MAX_REGION_LENGTH = 64

/** Schema of a key, identity, external or api id. */
export const Id = boundedString("an id", 1, MAX_ID_LENGTH)

/** Why a key id may not hold a comma: queries list key ids joined with commas. */
const KEY_ID_COMMA = "must not contain a comma (queries list key ids joined with commas)"

/** Schema of a key id: an id without a comma. */
export const KeyId = Id.pipe(Schema.filter((id) => !id.includes(",") || KEY_ID_COMMA))

/** Schema of one tag. */
export const Tag = boundedString("a tag", 1, MAX_TAG_LENGTH)

/** The identity a key belongs to. */
export const Identity = Schema.Struct({
  id: Id,
  externalId: Id
}).annotations({ identifier: "Identity" })

/** An identity. */
export interface Identity extends Schema.Schema.Type<typeof Identity> {}

/** A unix-milliseconds timestamp accepted on input. */
export const Timestamp = Schema.Number.pipe(Schema.int(), Schema.between(0, Number.MAX_SAFE_INTEGER))

/** One verification as a caller submits it (documentation schema; {@link decodeBatch} enforces it). */
export const VerificationInput = Schema.Struct({
  apiId: Id,
  keyId: KeyId,
  outcome: Outcome,
  time: Schema.optional(Timestamp.annotations({ description: "unix ms; defaults to now; at most 60 s ahead" })),
  identity: Schema.optional(Identity),
  tags: Schema.optional(Schema.Array(Tag).pipe(Schema.maxItems(MAX_TAGS))),
  spentCredits: Schema.optional(
    expected(
      Schema.Number.pipe(Schema.int(), Schema.between(0, MAX_SPENT_CREDITS)),
      `must be an integer from 0 to ${MAX_SPENT_CREDITS}`
    ).annotations({ description: "credits the verification deducted; defaults to 0" })
  ),
  latency: Schema.optional(
    expected(
      Schema.Number.pipe(Schema.finite(), Schema.between(0, MAX_LATENCY)),
      `must be a number of milliseconds from 0 to ${MAX_LATENCY}`
    ).annotations({ description: "how long the verification took, in ms (kept to the microsecond); defaults to 0" })
  ),
  region: Schema.optional(
    boundedString("a region", 0, MAX_REGION_LENGTH).annotations({
      description: "where the verification ran; defaults to \"\" (unknown)"
    })
  )
}).annotations({ identifier: "VerificationInput" })

/** A verification as submitted. */
export type VerificationInput = Schema.Schema.Encoded<typeof VerificationInput>

/** Body of a record call. */
export const RecordVerificationsInput = Schema.Struct({
  verifications: Schema.Array(VerificationInput).pipe(Schema.minItems(1), Schema.maxItems(MAX_BATCH))
}).annotations({ identifier: "RecordVerificationsInput" })

/**
 * A verification as stored: time set, tags de-duplicated and sorted. {@link make} and
 * {@link decodeBatch} always set `spentCredits`, `latency` and `region`; they are optional in the
 * type only so that events made elsewhere (a rate-limit decision's projection) need not carry them.
 * Stores read an absent one as its default (0, 0, "").
 */
export interface Verification {
  readonly time: number
  readonly workspaceId: string
  readonly apiId: string
  readonly keyId: string
  readonly identity: Identity | undefined
  readonly outcome: Outcome
  readonly tags: ReadonlyArray<string>
  /** Credits the verification deducted: an integer from 0 (none) to {@link MAX_SPENT_CREDITS}. */
  readonly spentCredits?: number | undefined
  /** How long the verification took, in ms to the microsecond (>= 0). */
  readonly latency?: number | undefined
  /** Where it ran; "" when unknown. */
  readonly region?: string | undefined
}

/**
 * A verification in stored form: without an identity or tags unless given; tags normalized; no
 * credits spent, no latency and no region unless given.
 */
export const make = (
  fields: Omit<Verification, "identity" | "tags" | "spentCredits" | "latency" | "region"> & {
    readonly identity?: Identity | undefined
    readonly tags?: ReadonlyArray<string> | undefined
    readonly spentCredits?: number | undefined
    readonly latency?: number | undefined
    readonly region?: string | undefined
  }
): Verification => ({
  time: fields.time,
  workspaceId: fields.workspaceId,
  apiId: fields.apiId,
  keyId: fields.keyId,
  identity: fields.identity,
  outcome: fields.outcome,
  tags: normalizeTags(fields.tags ?? []),
  spentCredits: fields.spentCredits ?? 0,
  latency: fields.latency ?? 0,
  region: fields.region ?? ""
})

/**
 * De-duplicates and sorts tags (by code unit), so `[b, a, b]` and `[a, b]` are one tag set. Tags
 * already sorted and unique are returned as they are.
 */
export const normalizeTags = (tags: ReadonlyArray<string>): ReadonlyArray<string> => {
  let ordered = true
  for (let i = 1; i < tags.length && ordered; i++) ordered = tags[i - 1]! < tags[i]!
  if (ordered) return tags
  const sorted = [...tags].sort()
  let unique = 1
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i] !== sorted[unique - 1]) sorted[unique++] = sorted[i]!
  }
  sorted.length = unique
  return sorted
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const OUTCOME_LIST = Outcomes.join(", ")
const IDENTITY_FIELDS: ReadonlySet<string> = new Set(["id", "externalId"])
const ITEM_FIELDS: ReadonlySet<string> = new Set([
  "apiId",
  "keyId",
  "outcome",
  "time",
  "identity",
  "tags",
  "spentCredits",
  "latency",
  "region"
])

/** The first own field of `value` outside `known`; counting first keeps the common case cheap. */
const unknownField = (value: Record<string, unknown>, known: ReadonlySet<string>, expected: number) => {
  let count = 0
  for (const _ in value) count++
  if (count === expected) return undefined
  for (const field in value) if (!known.has(field)) return field
  return undefined
}

/** What is wrong with an id, without its path (built only when something is: ingest checks millions). */
const idProblem = (value: unknown): string | undefined => {
  if (typeof value !== "string") return `must be a string, got ${describe(value)}`
  if (value.length === 0 || value.length > MAX_ID_LENGTH) {
    return `must be 1 to ${MAX_ID_LENGTH} characters, got ${value.length}`
  }
  if (!isWellFormed(value)) return NOT_WELL_FORMED
  return undefined
}

/**
 * Validates a batch of verifications and returns them in stored form. Hand-written rather than a
 * Schema decode because ingest must run at millions of events per second; `VerificationInput`
 * documents the same rules and a test holds the two to the same answers.
 */
export const decodeBatch = (
  input: unknown,
  options: { readonly workspaceId: string; readonly now: number; readonly path?: string }
): Either.Either<Array<Verification>, ValidationError> => {
  const fail = (message: string) => Either.left(new ValidationError({ message }))
  const root = options.path ?? "verifications"
  if (!Array.isArray(input)) return fail(`${root}: must be an array, got ${describe(input)}`)
  if (input.length === 0) return fail(`${root}: must hold at least 1 verification`)
  if (input.length > MAX_BATCH) {
    return fail(`${root}: must hold at most ${MAX_BATCH} verifications, got ${input.length}`)
  }
  const latest = options.now + MAX_CLOCK_SKEW
  const out = new Array<Verification>(input.length)
  // An item's path, built only for its error.
  const at = (i: number) => `${root}[${i}]`
  for (let i = 0; i < input.length; i++) {
    const item: unknown = input[i]
    if (!isPlainObject(item)) return fail(`${at(i)}: must be an object, got ${describe(item)}`)
    const { apiId, identity, keyId, latency, outcome, region, spentCredits, tags, time } = item
    const extra = unknownField(
      item,
      ITEM_FIELDS,
      3 + (time !== undefined ? 1 : 0) + (identity !== undefined ? 1 : 0) + (tags !== undefined ? 1 : 0) +
        (spentCredits !== undefined ? 1 : 0) + (latency !== undefined ? 1 : 0) + (region !== undefined ? 1 : 0)
    )
    if (extra !== undefined) return fail(`${at(i)}.${extra}: is not a known field`)
    const apiProblem = idProblem(apiId)
    if (apiProblem !== undefined) return fail(`${at(i)}.apiId: ${apiProblem}`)
    const keyProblem = idProblem(keyId) ?? ((keyId as string).includes(",") ? KEY_ID_COMMA : undefined)
    if (keyProblem !== undefined) return fail(`${at(i)}.keyId: ${keyProblem}`)
    // Nine of ten verifications are valid: compare before looking up.
    if (outcome !== "valid" && (typeof outcome !== "string" || !OutcomeIndex.has(outcome))) {
      return fail(`${at(i)}.outcome: must be one of ${OUTCOME_LIST}, got ${describe(outcome)}`)
    }
    let at_time = options.now
    if (time !== undefined) {
      if (typeof time !== "number" || !Number.isSafeInteger(time) || time < 0) {
        return fail(`${at(i)}.time: must be an integer of unix milliseconds >= 0, got ${describe(time)}`)
      }
      if (time > latest) {
        return fail(`${at(i)}.time: must be at most 60 s ahead of the server clock (${options.now}), got ${time}`)
      }
      at_time = time
    }
    let checkedIdentity: Identity | undefined
    if (identity !== undefined) {
      if (!isPlainObject(identity)) return fail(`${at(i)}.identity: must be an object, got ${describe(identity)}`)
      const extraIdentity = unknownField(identity, IDENTITY_FIELDS, 2)
      if (extraIdentity !== undefined) return fail(`${at(i)}.identity.${extraIdentity}: is not a known field`)
      const idError = idProblem(identity.id)
      if (idError !== undefined) return fail(`${at(i)}.identity.id: ${idError}`)
      const externalIdError = idProblem(identity.externalId)
      if (externalIdError !== undefined) return fail(`${at(i)}.identity.externalId: ${externalIdError}`)
      checkedIdentity = identity as unknown as Identity
    }
    let checkedTags: ReadonlyArray<string> = []
    if (tags !== undefined) {
      if (!Array.isArray(tags)) return fail(`${at(i)}.tags: must be an array of strings, got ${describe(tags)}`)
      if (tags.length > MAX_TAGS) return fail(`${at(i)}.tags: must hold at most ${MAX_TAGS} tags, got ${tags.length}`)
      for (let t = 0; t < tags.length; t++) {
        const tag: unknown = tags[t]
        if (typeof tag !== "string") return fail(`${at(i)}.tags[${t}]: must be a string, got ${describe(tag)}`)
        if (tag.length === 0 || tag.length > MAX_TAG_LENGTH) {
          return fail(`${at(i)}.tags[${t}]: must be 1 to ${MAX_TAG_LENGTH} characters, got ${tag.length}`)
        }
        if (!isWellFormed(tag)) return fail(`${at(i)}.tags[${t}]: ${NOT_WELL_FORMED}`)
      }
      checkedTags = normalizeTags(tags as Array<string>)
    }
    if (
      spentCredits !== undefined &&
      (typeof spentCredits !== "number" || !Number.isInteger(spentCredits) || spentCredits < 0 ||
        spentCredits > MAX_SPENT_CREDITS)
    ) {
      return fail(
        `${at(i)}.spentCredits: must be an integer from 0 to ${MAX_SPENT_CREDITS}, got ${describe(spentCredits)}`
      )
    }
    if (latency !== undefined && (typeof latency !== "number" || !(latency >= 0 && latency <= MAX_LATENCY))) {
      return fail(
        `${at(i)}.latency: must be a number of milliseconds from 0 to ${MAX_LATENCY}, got ${describe(latency)}`
      )
    }
    if (region !== undefined) {
      if (typeof region !== "string") return fail(`${at(i)}.region: must be a string, got ${describe(region)}`)
      if (region.length > MAX_REGION_LENGTH) {
        return fail(`${at(i)}.region: must be 0 to ${MAX_REGION_LENGTH} characters, got ${region.length}`)
      }
      if (!isWellFormed(region)) return fail(`${at(i)}.region: ${NOT_WELL_FORMED}`)
    }
    out[i] = {
      time: at_time,
      workspaceId: options.workspaceId,
      apiId: apiId as string,
      keyId: keyId as string,
      identity: checkedIdentity,
      outcome: outcome as Outcome,
      tags: checkedTags,
      spentCredits: (spentCredits as number | undefined) ?? 0,
      latency: (latency as number | undefined) ?? 0,
      region: (region as string | undefined) ?? ""
    }
  }
  return Either.right(out)
}
