/**
 * The wire form of every failure: HTTP status, error code and the envelope
 * `{"error":{"code","message","docs","requestId"}}`. Domain errors from core are mapped here and
 * only here.
 */
import { HttpApiDecodeError } from "@effect/platform/HttpApiError"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type * as DomainErrors from "@keymeter/core/Errors"
import * as Validation from "@keymeter/core/Validation"
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as RequestContext from "./RequestContext.js"

/** Every error code, its status and when it happens. */
export const Codes = {
  BAD_REQUEST: {
    status: 400,
    when: "A parameter or body field fails validation, malformed JSON, or conflicting parameters."
  },
  QUERY_TOO_LARGE: {
    status: 400,
    when:
      "An analytics answer would exceed the datapoint cap; narrow the window, coarsen the time unit, filter, or group by fewer dimensions."
  },
  UNAUTHORIZED: {
    status: 401,
    when: "The Authorization header is missing, is not `Bearer <root key>`, or the token is not a known root key."
  },
  FORBIDDEN: { status: 403, when: "The root key is disabled or expired." },
  INSUFFICIENT_PERMISSIONS: {
    status: 403,
    when: "The root key lacks the permission; the message lists the permissions that would do."
  },
  NOT_FOUND: {
    status: 404,
    when: "A named resource does not exist in the caller's workspace, or the route does not exist."
  },
  METHOD_NOT_ALLOWED: {
    status: 405,
    when: "The route exists but not for this method; the Allow header lists the methods."
  },
  PAYLOAD_TOO_LARGE: { status: 413, when: "The request body is over the configured limit (1 MiB by default)." },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, when: "A POST body whose Content-Type is missing or not application/json." },
  RATE_LIMITED: {
    status: 429,
    when:
      "The server's own protective limit: it is serving as many requests at once as it takes (KEYMETER_MAX_IN_FLIGHT, 256 by default). Nothing was read or changed; retry after the Retry-After header's seconds."
  },
  INTERNAL_SERVER_ERROR: { status: 500, when: "A bug. It is logged with the request id; nothing about it is leaked." },
  SERVICE_UNAVAILABLE: {
    status: 503,
    when: "Storage is unreachable or failing, or the server is shutting down. Safe to retry."
  }
} as const

/** An error code. */
export type Code = keyof typeof Codes

const envelopeOf = <C extends Code>(codes: ReadonlyArray<C>) =>
  Schema.Struct({
    error: Schema.Struct({
      code: Schema.Literal(...codes),
      message: Schema.String,
      docs: Schema.String,
      requestId: Schema.String
    })
  })

/** The body of an error response. */
export const encodeBody = (code: Code, message: string) =>
  Effect.map(RequestContext.current, ({ docsUrl, requestId }) => ({
    error: { code, message, docs: `${docsUrl}/errors/${code}`, requestId }
  }))

/** A complete error response, for the places that build responses themselves. */
export const respond = (code: Code, message: string, headers?: Record<string, string>) =>
  Effect.map(encodeBody(code, message), (body) =>
    HttpServerResponse.unsafeJson(body, {
      status: Codes[code].status,
      ...(headers !== undefined ? { headers } : {})
    }))

interface WireError<C extends Code> {
  readonly code: C
  readonly message: string
}

/**
 * Declares the wire schema of an error class: its type side is the class, its encoded side the
 * envelope, with the status annotation HttpApi reads.
 */
const envelope = <C extends Code, Self extends WireError<C>>(
  errorClass: Schema.Schema<Self, any> & (new(props: WireError<C>) => Self),
  codes: ReadonlyArray<C>,
  identifier: string,
  description: string
) =>
  Schema.transformOrFail(envelopeOf(codes), Schema.typeSchema(errorClass), {
    strict: true,
    decode: ({ error }) => ParseResult.succeed(new errorClass({ code: error.code, message: error.message })),
    encode: (e) => encodeBody(e.code, e.message) as Effect.Effect<any>
  }).annotations({
    identifier,
    description,
    ...HttpApiSchema.annotations({ status: Codes[codes[0]!].status })
  })

/** 400 */
export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", {
  code: Schema.Literal("BAD_REQUEST", "QUERY_TOO_LARGE"),
  message: Schema.String
}) {}
export const BadRequestResponse = envelope(
  BadRequest,
  ["BAD_REQUEST", "QUERY_TOO_LARGE"],
  "BadRequestError",
  "Invalid input, or an answer over the datapoint cap"
)

/** 401 */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {
  code: Schema.Literal("UNAUTHORIZED"),
  message: Schema.String
}) {}
export const UnauthorizedResponse = envelope(
  Unauthorized,
  ["UNAUTHORIZED"],
  "UnauthorizedError",
  "Missing or invalid root key"
)

/** 403 */
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", {
  code: Schema.Literal("FORBIDDEN", "INSUFFICIENT_PERMISSIONS"),
  message: Schema.String
}) {}
export const ForbiddenResponse = envelope(
  Forbidden,
  ["FORBIDDEN", "INSUFFICIENT_PERMISSIONS"],
  "ForbiddenError",
  "Root key disabled or expired, or lacking the permission"
)

/** 404 */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {
  code: Schema.Literal("NOT_FOUND"),
  message: Schema.String
}) {}
export const NotFoundResponse = envelope(
  NotFound,
  ["NOT_FOUND"],
  "NotFoundError",
  "No such resource in the caller's workspace"
)

/** 413 */
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", {
  code: Schema.Literal("PAYLOAD_TOO_LARGE"),
  message: Schema.String
}) {}
export const PayloadTooLargeResponse = envelope(
  PayloadTooLarge,
  ["PAYLOAD_TOO_LARGE"],
  "PayloadTooLargeError",
  "Request body over the limit"
)

/** 415 */
export class UnsupportedMediaType extends Schema.TaggedError<UnsupportedMediaType>()("UnsupportedMediaType", {
  code: Schema.Literal("UNSUPPORTED_MEDIA_TYPE"),
  message: Schema.String
}) {}
export const UnsupportedMediaTypeResponse = envelope(
  UnsupportedMediaType,
  ["UNSUPPORTED_MEDIA_TYPE"],
  "UnsupportedMediaTypeError",
  "Body is not application/json"
)

/** 429 */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  code: Schema.Literal("RATE_LIMITED"),
  message: Schema.String
}) {}
export const RateLimitedResponse = envelope(
  RateLimited,
  ["RATE_LIMITED"],
  "RateLimitedError",
  "The server's own protective limit"
)

/** 500 */
export class InternalServerError extends Schema.TaggedError<InternalServerError>()("InternalServerError", {
  code: Schema.Literal("INTERNAL_SERVER_ERROR"),
  message: Schema.String
}) {}
export const InternalServerErrorResponse = envelope(
  InternalServerError,
  ["INTERNAL_SERVER_ERROR"],
  "InternalServerError",
  "A bug; logged with the request id"
)

/** 503 */
export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", {
  code: Schema.Literal("SERVICE_UNAVAILABLE"),
  message: Schema.String
}) {}
export const ServiceUnavailableResponse = envelope(
  ServiceUnavailable,
  ["SERVICE_UNAVAILABLE"],
  "ServiceUnavailableError",
  "Storage unavailable or shutting down; retry"
)

/**
 * HttpApi's own 400 for parameters that fail their declared schema, re-dressed in the envelope.
 * Installed as the api-level `errorSchema` (see `Api`).
 */
export const DecodeErrorResponse: Schema.Schema<HttpApiDecodeError, any> = Schema.transformOrFail(
  envelopeOf(["BAD_REQUEST"]),
  Schema.typeSchema(HttpApiDecodeError),
  {
    strict: true,
    decode: ({ error }) => ParseResult.succeed(new HttpApiDecodeError({ message: error.message, issues: [] })),
    encode: (e) =>
      encodeBody(
        "BAD_REQUEST",
        Validation.formatIssues(e.issues, undefined, { unknownField: "is not a known parameter", root: "query" }) ||
          e.message
      ) as Effect.Effect<any>
  }
).annotations({
  identifier: "BadRequestError",
  description: "Invalid input",
  ...HttpApiSchema.annotations({ status: 400 })
})

/** Every domain failure a handler can meet. */
export type DomainError =
  | DomainErrors.ValidationError
  | DomainErrors.NotFound
  | DomainErrors.InsufficientPermissions
  | DomainErrors.QueryTooLarge
  | DomainErrors.StorageError

/** The wire errors a handler can fail with. */
export type HandlerError = BadRequest | NotFound | Forbidden | ServiceUnavailable

/** The wire error of a domain failure. Storage failures are logged here, never shown. */
export const fromDomain = (error: DomainError): Effect.Effect<HandlerError> => {
  switch (error._tag) {
    case "ValidationError":
      return Effect.succeed(new BadRequest({ code: "BAD_REQUEST", message: error.message }))
    case "QueryTooLarge":
      return Effect.succeed(new BadRequest({ code: "QUERY_TOO_LARGE", message: error.message }))
    case "NotFound":
      return Effect.succeed(new NotFound({ code: "NOT_FOUND", message: error.message }))
    case "InsufficientPermissions":
      return Effect.succeed(new Forbidden({ code: "INSUFFICIENT_PERMISSIONS", message: error.message }))
    case "StorageError":
      return Effect.as(
        Effect.logError("storage failure", error.message, error.cause),
        new ServiceUnavailable({
          code: "SERVICE_UNAVAILABLE",
          message: "Storage is unavailable; nothing was changed. Retry later."
        })
      )
  }
}

/** The wire error each domain error becomes. */
export type HttpErrorOf<E> = E extends DomainErrors.ValidationError | DomainErrors.QueryTooLarge ? BadRequest
  : E extends DomainErrors.NotFound ? NotFound
  : E extends DomainErrors.InsufficientPermissions ? Forbidden
  : E extends DomainErrors.StorageError ? ServiceUnavailable
  : never

/** Fails with the wire error of the effect's domain failure. */
export const mapDomain = <A, E extends DomainError, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, HttpErrorOf<E>, R> =>
  Effect.catchAll(effect, (error) => Effect.flatMap(fromDomain(error), Effect.fail)) as Effect.Effect<
    A,
    any,
    R
  >
