/**
 * Failures of the /v2 routes: an {@link HttpError}'s code and message in Unkey v2's problem body
 * (see `Problem`). A separate error type, so the api's one error encoder (HttpApi unions every
 * route's errors) answers each dialect in its own envelope and media type.
 */
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type { Code, DomainError, HttpError, Status } from "../Errors.js"
import { CODES, Codes, identifierOf, mapDomain } from "../Errors.js"
import * as RequestContext from "../RequestContext.js"
import * as Problem from "./Problem.js"

/** A /v2 failure. `problem`: answered as application/problem+json whatever its status. */
export class V2Error extends Schema.TaggedError<V2Error>()("V2Error", {
  code: Schema.Literal(...CODES),
  message: Schema.String,
  problem: Schema.Boolean
}) {
  /** The HTTP status of {@link code}. */
  get status(): Status {
    return Codes[this.code].status
  }
}

/** The /v2 failure of a wire error, in the current request's flavour of the envelope. */
export const fromHttp = (error: HttpError): Effect.Effect<V2Error> =>
  Effect.map(
    RequestContext.current,
    (context) => new V2Error({ code: error.code, message: error.message, problem: context.dialect === "v2problem" })
  )

/** Fails with the /v2 failure of the effect's domain or wire failure. */
export const mapV2 = <A, E extends DomainError | HttpError, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, V2Error, R> =>
  Effect.catchAll(mapDomain(effect), (error) => Effect.flatMap(fromHttp(error), Effect.fail))

const Issue = Schema.Struct({
  location: Schema.String.annotations({ description: "Where in the request: body.<field>" }),
  message: Schema.String,
  fix: Schema.optional(Schema.String)
})

const envelopeOf = (status: Status) =>
  Schema.Struct({
    meta: Schema.Struct({ requestId: Schema.String }),
    error: Schema.Struct({
      title: Schema.String,
      detail: Schema.String,
      status: Schema.Number,
      type: Schema.String,
      ...(status === 400 ? { errors: Schema.Array(Issue) } : {})
    })
  })

/** The wire schema of the /v2 errors answering `status`, as JSON or as problem+json. */
const responseOf = (status: Status, problem: boolean) => {
  const codes = CODES.filter((code) => Codes[code].status === status)
  return Schema.transformOrFail(
    envelopeOf(status),
    Schema.typeSchema(V2Error).pipe(
      Schema.filter((error) => codes.includes(error.code) && error.problem === problem)
    ),
    {
      strict: true,
      decode: (body) =>
        ParseResult.succeed(
          new V2Error({ code: codes[0]!, message: (body.error as { readonly detail: string }).detail, problem })
        ),
      encode: (error) =>
        Effect.map(
          RequestContext.current,
          (context) => Problem.body(error.code, status, error.message, context)
        ) as Effect.Effect<any>
    }
  ).annotations({
    identifier: `V2${identifierOf(codes[0]!)}${problem ? "Problem" : ""}`,
    description: codes.map((code) => `${code}: ${Codes[code].when}`).join(" ") +
      (problem || status === 429 ? " Sent as application/problem+json." : ""),
    ...HttpApiSchema.annotations({ status })
  }).pipe(HttpApiSchema.withEncoding({
    kind: "Json",
    contentType: Problem.contentType(status, problem ? "v2problem" : "v2")
  }))
}

const STATUSES = [...new Set(CODES.map((code: Code) => Codes[code].status))]

/** The /v2 error schemas by status: `Responses[status]`, and `ProblemResponses[status]` (problem+json). */
export const Responses = Object.fromEntries(STATUSES.map((status) => [status, responseOf(status, false)])) as {
  readonly [S in Status]: ReturnType<typeof responseOf>
}
export const ProblemResponses = Object.fromEntries(STATUSES.map((status) => [status, responseOf(status, true)])) as {
  readonly [S in Status]: ReturnType<typeof responseOf>
}
