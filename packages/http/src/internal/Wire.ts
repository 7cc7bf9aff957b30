/**
 * Answers sent as core built them.
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"

/**
 * An answer core built already in its wire form (plain JSON values, fields in the order of the
 * contract's schema), sent without HttpApi encoding it again through the schema: that encoding
 * was a fifth of a day-series request's time. A test holds the bytes to the contract's encoding.
 */
export const wire = (body: unknown) => HttpServerResponse.unsafeJson(body)
