/**
 * The `Idempotency-Key` request header, as core's key options. Sent bare (`Idempotency-Key: abc`,
 * as Stripe has it) or as a structured-field string (`Idempotency-Key: "abc"`, as the IETF draft
 * has it): both name the key `abc`. Core checks the key; a header sent twice arrives joined by
 * `, ` and so fails that check.
 */
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type { KeyOptions } from "@keymeter/core/IdempotencyKeys"

/** The header's name, as messages give it. */
export const HEADER = "Idempotency-Key"

/** The key options of `request`: none without the header. */
export const read = (request: HttpServerRequest.HttpServerRequest): KeyOptions => {
  const value = request.headers["idempotency-key"]
  if (value === undefined) return {}
  const key = value.length >= 2 && value.startsWith("\"") && value.endsWith("\"") ? value.slice(1, -1) : value
  return { idempotencyKey: key, idempotencyKeyName: HEADER }
}
