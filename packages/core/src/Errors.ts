/**
 * Domain errors. Each carries a `message` meant for the caller; the HTTP package decides status
 * codes and the wire shape.
 */
import * as Schema from "effect/Schema"

/** An input failed validation; `message` names the field and what was expected. */
export class ValidationError extends Schema.TaggedError<ValidationError>()("ValidationError", {
  message: Schema.String
}) {}

/** A named resource does not exist in the caller's workspace. */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {
  message: Schema.String
}) {}

/** What was asked conflicts with what exists (an identity's external id already taken, say). */
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", {
  message: Schema.String
}) {}

/** No credentials, or credentials that are not a known root key. */
export class Unauthenticated extends Schema.TaggedError<Unauthenticated>()("Unauthenticated", {
  message: Schema.String
}) {}

/** The root key is known but may not be used: disabled or expired. */
export class KeyForbidden extends Schema.TaggedError<KeyForbidden>()("KeyForbidden", {
  message: Schema.String
}) {}

/** The root key lacks every permission that would allow the operation. */
export class InsufficientPermissions extends Schema.TaggedError<InsufficientPermissions>()(
  "InsufficientPermissions",
  { message: Schema.String, required: Schema.Array(Schema.String) }
) {
  static anyOf(required: ReadonlyArray<string>): InsufficientPermissions {
    return new InsufficientPermissions({
      message: `Missing permission: one of ${required.map((p) => `"${p}"`).join(", ")} is required`,
      required
    })
  }
}

/** An analytics answer would exceed the datapoint cap. */
export class QueryTooLarge extends Schema.TaggedError<QueryTooLarge>()("QueryTooLarge", {
  message: Schema.String
}) {}

/**
 * The workspace has as many analytics reads at work as it may have at once, and as many waiting
 * for a turn, or this one waited 2 s without one (see `Analytics.MaxReadsAtOnce`); nothing was
 * read; retry shortly.
 */
export class Busy extends Schema.TaggedError<Busy>()("Busy", {
  message: Schema.String
}) {}

/** The store could not be read or written; nothing was changed by the failed operation. */
export class StorageError extends Schema.TaggedError<StorageError>()("StorageError", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {}

/**
 * An idempotency key already stands for another request (another body or another operation)
 * within its window; nothing was done.
 */
export class IdempotencyKeyReused extends Schema.TaggedError<IdempotencyKeyReused>()("IdempotencyKeyReused", {
  message: Schema.String
}) {}

/**
 * A request with this idempotency key is still being carried out elsewhere (another server, or one
 * that stopped mid-way and whose outcome is not settled yet); nothing was done; retry later.
 */
export class IdempotencyKeyInUse extends Schema.TaggedError<IdempotencyKeyInUse>()("IdempotencyKeyInUse", {
  message: Schema.String
}) {}

/**
 * What messages and logs show of a connection setting (`postgres://`, `redis://`, …): its scheme
 * and host at most, never its user, password, path or query; of a value that is not a URL with a
 * host, its scheme at most. A malformed setting may hold a password anywhere.
 */
export const redactUrl = (text: string): string => {
  const value = text.trim()
  const url = URL.canParse(value) ? new URL(value) : undefined
  if (url !== undefined && url.host !== "") return `${url.protocol}//${url.host}`
  const scheme = /^[a-z][a-z0-9+.-]{0,31}:/i.exec(value)?.[0]
  return scheme !== undefined ? `${scheme}…` : "(not a URL)"
}
