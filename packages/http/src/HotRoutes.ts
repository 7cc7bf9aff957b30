/**
 * The hot routes of `/v1` as functions of the caller and the request's input: the HttpApi
 * handlers and the fast lane (`FastLane`) both call these, so a route is wired to core
 * once. Where core decides (see core's `Decision`), so do they: `Decision.now` answers a route
 * without running an effect when memory holds what it needs.
 */
import { Analytics } from "@keymeter/core/Analytics"
import * as Checker from "@keymeter/core/Checker"
import * as Decision from "@keymeter/core/Decision"
import { ValidationError } from "@keymeter/core/Errors"
import type { KeyOptions } from "@keymeter/core/IdempotencyKeys"
import { Keys } from "@keymeter/core/Keys"
import { KeyVerifier } from "@keymeter/core/KeyVerifier"
import { Overrides } from "@keymeter/core/Overrides"
import type { Principal } from "@keymeter/core/Permission"
import { RatelimitAnalytics } from "@keymeter/core/RatelimitAnalytics"
import { RateLimiter } from "@keymeter/core/RateLimiter"
import { RatelimitQueryInput } from "@keymeter/core/RatelimitQuery"
import { fieldKinds } from "@keymeter/core/Validation"
import * as Validation from "@keymeter/core/Validation"
import { RecordVerificationsInput } from "@keymeter/core/Verification"
import { VerificationQueryInput } from "@keymeter/core/VerificationQuery"
import { Verifications } from "@keymeter/core/Verifications"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import { HttpError } from "./Errors.js"
import * as UrlParams from "./internal/UrlParams.js"
import * as V1Keys from "./v1/Keys.js"
import * as V1VerifyKey from "./v1/VerifyKey.js"
import * as V2Keys from "./v2/Keys.js"
import * as V2Ratelimit from "./v2/Ratelimit.js"

const decodeCreateKey = Checker.decode(V1Keys.CreateKeyRequest)
const encodeCreateKey = Checker.encode(V1Keys.CreateKeyResponse)
const decodeUpdateRemaining = Checker.decode(V1Keys.UpdateRemainingRequest)
const encodeUpdateRemaining = Checker.encode(V1Keys.UpdateRemainingResponse)
const checkVerify = Checker.compile(V1VerifyKey.VerifyKeyRequest)
const decodeVerify = Validation.decode(V1VerifyKey.VerifyKeyRequest)
const checkVerifyV2 = Checker.compile(V2Keys.VerifyKeyRequest)
const decodeVerifyV2 = Validation.decode(V2Keys.VerifyKeyRequest, { root: "body" })
const checkLimitV2 = Checker.compile(V2Ratelimit.LimitRequest)
const decodeLimitV2 = Validation.decode(V2Ratelimit.LimitRequest, { root: "body" })

/** How v2 verifies: a key of an api the caller may not verify is NOT_FOUND, as Unkey v2 answers it. */
const V2_VERIFY = { hideOtherApis: true } as const

/** Query parameters as a router reads them: a name given several times holds an array. */
export type QueryParams = Readonly<Record<string, string | ReadonlyArray<string>>>

const QUERY_KINDS = fieldKinds(VerificationQueryInput)
const RECORD_FIELDS = Object.keys(RecordVerificationsInput.fields)

/**
 * The batch of a recordVerifications body, or the 400 its envelope gets. The batch itself is
 * validated by core's hand-written decoder (it must run at millions of events per second).
 */
const recordBatch = (body: Record<string, unknown>): Either.Either<unknown, HttpError> => {
  const unknown = Object.keys(body).filter((key) => !RECORD_FIELDS.includes(key))
  if (unknown.length > 0) {
    return Either.left(
      new HttpError({ code: "BAD_REQUEST", message: unknown.map((k) => `${k}: is not a known field`).join("; ") })
    )
  }
  return "verifications" in body
    ? Either.right(body.verifications)
    : Either.left(new HttpError({ code: "BAD_REQUEST", message: "verifications: is required" }))
}

/** The hot routes over the core services. */
export class HotRoutes extends Effect.Service<HotRoutes>()("@keymeter/http/HotRoutes", {
  effect: Effect.gen(function*() {
    const analytics = yield* Analytics
    const ratelimitAnalytics = yield* RatelimitAnalytics
    const verifications = yield* Verifications
    const limiter = yield* RateLimiter
    const verifier = yield* KeyVerifier
    const overrides = yield* Overrides
    const keys = yield* Keys
    return {
      /** `GET analytics.getVerifications`, its query string read by {@link readQuery}. */
      getVerifications: (principal: Principal, query: Record<string, unknown>) =>
        analytics.getVerifications(principal, query),
      /** `GET analytics.getRatelimits`, its query string read by {@link readRatelimitQuery}. */
      getRatelimits: (principal: Principal, query: Record<string, unknown>) =>
        ratelimitAnalytics.getRatelimits(principal, query),
      /** `POST analytics.recordVerifications`: a body of `verifications`, stored all or nothing. */
      recordVerifications: (principal: Principal, body: Record<string, unknown>, options: KeyOptions) =>
        Effect.flatMap(recordBatch(body), (batch) => verifications.record(principal, batch, options)),
      /** `POST ratelimits.setOverride`: the id of the override created or overwritten. */
      setOverride: (principal: Principal, body: Record<string, unknown>, options: KeyOptions) =>
        Effect.map(overrides.set(principal, body, options), (override) => ({ overrideId: override.id })),
      /** `POST keys.createKey`, answered in the contract's encoding. */
      createKey: (principal: Principal, body: Record<string, unknown>, options: KeyOptions) =>
        Effect.flatMap(
          decodeCreateKey(body),
          (request) => Effect.map(keys.create(principal, V1Keys.toCreateKey(request), options), encodeCreateKey)
        ),
      /** `POST keys.updateRemaining` (credits), answered in the contract's encoding. */
      updateRemaining: (principal: Principal, body: Record<string, unknown>, options: KeyOptions) =>
        Effect.flatMap(
          decodeUpdateRemaining(body),
          (request) => Effect.map(keys.updateCredits(principal, request, options), encodeUpdateRemaining)
        ),
      /** `POST ratelimits.limit`. */
      limit: (principal: Principal, body: Record<string, unknown>) => limiter.limit(principal, body),
      /**
       * `POST keys.verifyKey`, in Unkey v1's shapes (see `V1Keys`): a decision as core's is, its
       * answer mapped once decided.
       */
      verifyKey: (principal: Principal, body: Record<string, unknown>, requestId: string) => {
        const answer = (request: V1VerifyKey.VerifyKeyRequest) =>
          Decision.andThen(
            verifier.verify(principal, V1VerifyKey.toVerifyKey(request)),
            (answer) => Exit.succeed(V1VerifyKey.fromVerification(answer, requestId))
          )
        return checkVerify(body)
          ? Decision.make(() => answer(body))
          : Effect.flatMap(decodeVerify(body), (request) => Decision.start(() => answer(request)))
      },
      /** `POST /v2/keys.verifyKey`, in Unkey v2's shapes (see `V2Keys`), answered in v2's envelope. */
      verifyKeyV2: (principal: Principal, body: unknown, requestId: string) => {
        const answer = (request: V2Keys.VerifyKeyRequest) => {
          const input = V2Keys.toVerifyKey(request)
          if (typeof input === "string") return Exit.fail(new ValidationError({ message: input }))
          return Decision.andThen(
            verifier.verify(principal, input, V2_VERIFY),
            (answer) => Exit.succeed(V2Keys.fromVerification(answer, requestId))
          )
        }
        return checkVerifyV2(body)
          ? Decision.make(() => answer(body))
          : Effect.flatMap(decodeVerifyV2(body), (request) => Decision.start(() => answer(request)))
      },
      /** `POST /v2/ratelimit.limit`, the namespace by id or name, answered in v2's envelope. */
      limitV2: (principal: Principal, body: unknown, requestId: string) => {
        const answer = (request: V2Ratelimit.LimitRequest) =>
          Decision.andThen(
            limiter.limit(principal, V2Ratelimit.toLimit(request)),
            (data) => Exit.succeed({ meta: { requestId }, data })
          )
        return checkLimitV2(body)
          ? Decision.make(() => answer(body))
          : Effect.flatMap(decodeLimitV2(body), (request) => Decision.start(() => answer(request)))
      }
    } as const
  })
}) {}

/** Parameters of `getVerifications` whose values cannot hold a comma: ids and groupBy's names. */
const COMMA_SEPARATED: ReadonlySet<string> = new Set(["keyId", "groupBy"])

const RATELIMIT_QUERY_KINDS = fieldKinds(RatelimitQueryInput)

/** Parameters of `getRatelimits` that may be comma-joined: groupBy's names (an identifier may hold a comma). */
const RATELIMIT_COMMA_SEPARATED: ReadonlySet<string> = new Set(["groupBy"])

/** The query of `getRatelimits`, read as `readQuery` reads `getVerifications`'. */
export const readRatelimitQuery = (params: QueryParams) =>
  UrlParams.parse(params, RATELIMIT_QUERY_KINDS, RATELIMIT_COMMA_SEPARATED)

/**
 * The query of `getVerifications`: its parameters read as the values of core's query struct.
 * `keyId` and `groupBy` may be repeated or comma-joined; `tag` only repeated (a tag may hold a
 * comma).
 */
export const readQuery = (params: QueryParams) => UrlParams.parse(params, QUERY_KINDS, COMMA_SEPARATED)
