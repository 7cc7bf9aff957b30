/**
 * The wire form of every failure: HTTP status, error code and the envelope
 * `{"error":{"code","message","docs","requestId"}}`. The tables here are the only place that maps
 * domain errors to codes and codes to statuses; the wire error schemas are made from them.
 */
import { HttpApiDecodeError } from "@effect/platform/HttpApiError"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type * as DomainErrors from "@keymeter/core/Errors"
import type { ProvisioningError } from "@keymeter/core/Provisioning"
import * as Validation from "@keymeter/core/Validation"
import type { InvalidQuery, QueryBudgetExceeded } from "@keymeter/sql/SqlError"
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as RequestContext from "./RequestContext.js"
import * as Problem from "./v2/Problem.js"

/** Every error code, its status and when it happens. */
export const Codes = {
  BAD_REQUEST: {
    status: 400,
    when: "A parameter or body field fails validation, malformed JSON, or conflicting parameters."
  },
  INVALID_QUERY: {
    status: 400,
    when:
      "A SQL analytics query is outside the supported subset, names a table, column or function that does not exist, or does not type; the message names the construct and its line and column."
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
    when:
      "The route exists but not for this method, or the method (CONNECT, DELETE, ...) is one keymeter serves on no route; the Allow header lists the methods."
  },
  REQUEST_TIMEOUT: {
    status: 408,
    when:
      "The client sent its headers or body too slowly (KEYMETER_HEADERS_TIMEOUT_MS, KEYMETER_REQUEST_TIMEOUT_MS); the connection is closed."
  },
  CONFLICT: {
    status: 409,
    when: "What was asked conflicts with what exists: an identity's externalId already taken, a name already used."
  },
  IDEMPOTENCY_KEY_IN_USE: {
    status: 409,
    when:
      "A request with the same Idempotency-Key is still being carried out (or, on ClickHouse, its outcome is not settled yet). Nothing was done; retry."
  },
  PAYLOAD_TOO_LARGE: { status: 413, when: "The request body is over the configured limit (1 MiB by default)." },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, when: "A POST body whose Content-Type is missing or not application/json." },
  EXPECTATION_FAILED: {
    status: 417,
    when: "The request's Expect header asks for something other than 100-continue; the connection is closed."
  },
  IDEMPOTENCY_KEY_REUSED: {
    status: 422,
    when:
      "The Idempotency-Key already stands for another request (another body or another route) within its window. Nothing was done."
  },
  QUERY_BUDGET_EXCEEDED: {
    status: 422,
    when:
      "A SQL analytics query needed more than one of its budgets (time, rows scanned, rows answered, memory); the message names it. Nothing of its answer is returned: narrow the window, filter, aggregate or add a LIMIT."
  },
  RATE_LIMITED: {
    status: 429,
    when:
      "The server's own protective limits: it is serving as many requests at once as it takes (KEYMETER_MAX_IN_FLIGHT, 256 by default), or the workspace has as many analytics reads at work as it may (KEYMETER_MAX_ANALYTICS_READS, 8 by default). Nothing was read or changed; retry after the Retry-After header's seconds."
  },
  HEADERS_TOO_LARGE: {
    status: 431,
    when: "The request's headers are over 16 KiB; the connection is closed."
  },
  INTERNAL_SERVER_ERROR: { status: 500, when: "A bug. It is logged with the request id; nothing about it is leaked." },
  SERVICE_UNAVAILABLE: {
    status: 503,
    when: "Storage is unreachable or failing, or the server is shutting down. Safe to retry."
  }
} as const

/** An error code. */
export type Code = keyof typeof Codes

/** An HTTP status some code answers. */
export type Status = typeof Codes[Code]["status"]

/** Every error code. */
export const CODES = Object.keys(Codes) as Array<Code>

/** A failure as the wire carries it: one of the {@link Codes} and a message for the caller. */
export class HttpError extends Schema.TaggedError<HttpError>()("HttpError", {
  code: Schema.Literal(...CODES),
  message: Schema.String
}) {
  /** The HTTP status of {@link code}. */
  get status(): Status {
    return Codes[this.code].status
  }
}

/** Every failure core and provisioning report, by tag. */
export type DomainError =
  | DomainErrors.ValidationError
  | DomainErrors.NotFound
  | DomainErrors.Conflict
  | DomainErrors.Unauthenticated
  | DomainErrors.KeyForbidden
  | DomainErrors.InsufficientPermissions
  | DomainErrors.QueryTooLarge
  | DomainErrors.StorageError
  | DomainErrors.IdempotencyKeyReused
  | DomainErrors.IdempotencyKeyInUse
  | DomainErrors.Busy
  | ProvisioningError
  | InvalidQuery
  | QueryBudgetExceeded

/** The wire code of each domain error. */
export const DomainCodes: { readonly [Tag in DomainError["_tag"]]: Code } = {
  ValidationError: "BAD_REQUEST",
  ProvisioningError: "BAD_REQUEST",
  QueryTooLarge: "QUERY_TOO_LARGE",
  Unauthenticated: "UNAUTHORIZED",
  KeyForbidden: "FORBIDDEN",
  InsufficientPermissions: "INSUFFICIENT_PERMISSIONS",
  NotFound: "NOT_FOUND",
  Conflict: "CONFLICT",
  StorageError: "SERVICE_UNAVAILABLE",
  IdempotencyKeyReused: "IDEMPOTENCY_KEY_REUSED",
  IdempotencyKeyInUse: "IDEMPOTENCY_KEY_IN_USE",
  Busy: "RATE_LIMITED",
  InvalidQuery: "INVALID_QUERY",
  QueryBudgetExceeded: "QUERY_BUDGET_EXCEEDED"
}

/** What a caller is told of a storage failure; its cause is logged, never shown. */
export const STORAGE_UNAVAILABLE = "Storage is unavailable; nothing was changed. Retry later."

/** The wire code and message of a domain error, as plain data (cheaper than an {@link HttpError}). */
export const wireOf = (error: DomainError): { readonly code: Code; readonly message: string } => ({
  code: DomainCodes[error._tag],
  message: error._tag === "StorageError" ? STORAGE_UNAVAILABLE : error.message
})

/** The wire error of a domain error, without logging (see {@link fromDomain}). */
export const toWire = (error: DomainError): HttpError => new HttpError(wireOf(error))

/** The wire error of a domain error. Storage failures are logged here. */
export const fromDomain = (error: DomainError): Effect.Effect<HttpError> =>
  error._tag === "StorageError"
    ? Effect.as(Effect.logError("storage failure", error.message, error.cause), toWire(error))
    : Effect.succeed(toWire(error))

/** Fails with the wire error of the effect's domain failure. */
export const mapDomain = <A, E extends DomainError | HttpError, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, HttpError, R> =>
  Effect.catchAll(
    effect,
    (error) => error instanceof HttpError ? Effect.fail(error) : Effect.flatMap(fromDomain(error), Effect.fail)
  )

/** The body of an error response. */
export const body = (
  code: Code,
  message: string,
  context: { readonly requestId: string; readonly docsUrl: string }
) => ({
  error: { code, message, docs: `${context.docsUrl}/errors/${code}`, requestId: context.requestId }
})

/** The body of an error response, in the current request's context. */
export const encodeBody = (code: Code, message: string) =>
  Effect.map(RequestContext.current, (context) => body(code, message, context))

/**
 * A complete error response, for the places that build responses themselves: in the envelope of
 * the request's dialect (v1's, or Unkey v2's problem body).
 */
export const respond = (code: Code, message: string, headers?: Record<string, string>) =>
  Effect.map(RequestContext.current, (context) => {
    const status = Codes[code].status
    return context.dialect === "v1"
      ? HttpServerResponse.unsafeJson(body(code, message, context), {
        status,
        ...(headers !== undefined ? { headers } : {})
      })
      : HttpServerResponse.unsafeJson(Problem.body(code, status, message, context), {
        status,
        contentType: Problem.contentType(status, context.dialect),
        ...(headers !== undefined ? { headers } : {})
      })
  })

const envelopeOf = (codes: ReadonlyArray<Code>) =>
  Schema.Struct({
    error: Schema.Struct({
      code: Schema.Literal(...codes),
      message: Schema.String,
      docs: Schema.String,
      requestId: Schema.String
    })
  })

/** `BAD_REQUEST` → `BadRequestError`; `INTERNAL_SERVER_ERROR` → `InternalServerError`. */
export const identifierOf = (code: Code) => {
  const name = code.toLowerCase().replace(/(^|_)([a-z])/g, (_, __, letter: string) => letter.toUpperCase())
  return name.endsWith("Error") ? name : `${name}Error`
}

/**
 * The wire schema of the errors answering `status`: its type side is {@link HttpError} with one of
 * their codes, its encoded side the envelope, with the status annotation HttpApi reads.
 */
const responseOf = (status: Status) => {
  const codes = CODES.filter((code) => Codes[code].status === status)
  return Schema.transformOrFail(
    envelopeOf(codes),
    Schema.typeSchema(HttpError).pipe(Schema.filter((error) => codes.includes(error.code))),
    {
      strict: true,
      decode: ({ error }) => ParseResult.succeed(new HttpError({ code: error.code, message: error.message })),
      encode: (error) => encodeBody(error.code, error.message) as Effect.Effect<any>
    }
  ).annotations({
    identifier: identifierOf(codes[0]!),
    description: codes.map((code) => `${code}: ${Codes[code].when}`).join(" "),
    ...HttpApiSchema.annotations({ status })
  })
}

/** The wire schema of every status, made from {@link Codes}. */
export const Responses = Object.fromEntries(
  [...new Set(CODES.map((code) => Codes[code].status))].map((status) => [status, responseOf(status)])
) as { readonly [S in Status]: ReturnType<typeof responseOf> }

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
  ...HttpApiSchema.annotations({ status: Codes.BAD_REQUEST.status })
})
