/**
 * What every /v1 write route shares: a POST's errors of body size and media type, and the
 * `Idempotency-Key` header of writes safe to retry with its errors.
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as Schema from "effect/Schema"
import { Responses } from "../Errors.js"

/** The header that makes a write safe to retry. */
export const IdempotencyHeaders = Schema.Struct({
  "idempotency-key": Schema.optional(Schema.String.annotations({
    description: "Makes the request safe to retry: a repeat with the same key and body within 24 hours " +
      "answers what the first answered and changes nothing. 1 to 255 visible ASCII characters (no space, " +
      "\" or \\), bare or as a quoted string; scoped to the workspace."
  }))
})

/** A POST route: its JSON body may also be too large (413) or of another media type (415). */
export const post = <const Name extends string>(name: Name, path: HttpApiEndpoint.PathSegment) =>
  HttpApiEndpoint.post(name, path).addError(Responses[413]).addError(Responses[415])

/** A POST route taking `Idempotency-Key`: a key reused for another request (422), or still at work (409). */
export const keyedPost = <const Name extends string>(name: Name, path: HttpApiEndpoint.PathSegment) =>
  post(name, path).setHeaders(IdempotencyHeaders).addError(Responses[409]).addError(Responses[422])
