/**
 * The `Idempotency-Key` request header, as core's key options. Sent bare (`Idempotency-Key: abc`,
 * as Stripe has it) or as a structured-field string (`Idempotency-Key: "abc"`, as the IETF draft
 * has it): both name the key `abc`. Core checks the key; a header sent twice arrives joined by
 * `, ` and so fails that check.
 */
import type { KeyOptions } from "@keymeter/core/IdempotencyKeys"

/** The header's name, as messages give it. */
export const HEADER = "Idempotency-Key"

/** The key options of a request's headers: none without the header. */
export const read = (headers: Readonly<Record<string, string | Array<string> | undefined>>): KeyOptions => {
  const value = headers["idempotency-key"]
  if (Array.isArray(value)) return { idempotencyKey: value.join(", "), idempotencyKeyName: HEADER }
  if (value === undefined) return {}
  const key = value.length >= 2 && value.startsWith("\"") && value.endsWith("\"") ? value.slice(1, -1) : value
  return { idempotencyKey: key, idempotencyKeyName: HEADER }
}
