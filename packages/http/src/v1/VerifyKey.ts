/**
 * Unkey v1's `keys.verifyKey` on the wire, as `@unkey/api@0.38.0` types it
 * (docs/unkey-v1-contract.md): its body onto core's verification input, and core's answer back as
 * v1's, whose one `ratelimit` stands for the key's limits.
 */
import * as KeyModel from "@keymeter/core/Key"
import type { VerifyKeyInput, VerifyKeyResponse } from "@keymeter/core/KeyVerifier"
import { MAX_SECRET_LENGTH } from "@keymeter/core/KeyVerifier"
import { Duration } from "@keymeter/core/Override"
import { PermissionQuery } from "@keymeter/core/PermissionQuery"
import * as Validation from "@keymeter/core/Validation"
import * as Verification from "@keymeter/core/Verification"
import * as Schema from "effect/Schema"

/** Body of `keys.verifyKey`. */
export const VerifyKeyRequest = Schema.Struct({
  key: Validation.boundedString("a key", 1, MAX_SECRET_LENGTH),
  apiId: Schema.optional(Verification.Id),
  tags: Schema.optional(Schema.Array(Verification.Tag).pipe(Schema.maxItems(Verification.MAX_TAGS))),
  authorization: Schema.optional(Schema.Struct({ permissions: Schema.optional(Schema.NullOr(PermissionQuery)) })),
  remaining: Schema.optional(Schema.Struct({ cost: Schema.optional(KeyModel.Count) })),
  ratelimit: Schema.optional(Schema.Struct({ cost: Schema.optional(KeyModel.Count) })).annotations({
    description: "Deprecated: the cost of the key's ratelimit; use ratelimits [{name: \"default\", cost}]"
  }),
  ratelimits: Schema.optional(
    Schema.Array(Schema.Struct({
      name: Validation.boundedString("a rate limit name", 1, 512),
      cost: Schema.optional(KeyModel.Count),
      limit: Schema.optional(KeyModel.Positive),
      duration: Schema.optional(Duration)
    })).pipe(Schema.maxItems(KeyModel.MAX_RATELIMITS))
  )
}).annotations({ identifier: "V1VerifyKeyRequest" })
export type VerifyKeyRequest = typeof VerifyKeyRequest.Type

/** The core input of a v1 `keys.verifyKey`: the body itself when it holds only what both share. */
export const toVerifyKey = (request: VerifyKeyRequest): VerifyKeyInput => {
  if (
    request.authorization === undefined && request.remaining === undefined && request.ratelimit === undefined &&
    request.ratelimits === undefined
  ) return request as VerifyKeyInput
  const permissions = request.authorization?.permissions
  return {
    key: request.key,
    ...(request.apiId !== undefined ? { apiId: request.apiId } : {}),
    ...(request.tags !== undefined ? { tags: request.tags } : {}),
    ...(permissions !== undefined && permissions !== null ? { permissions } : {}),
    ...(request.remaining !== undefined ? { credits: { cost: request.remaining.cost ?? 1 } } : {}),
    ...(request.ratelimit?.cost !== undefined ? { ratelimit: { cost: request.ratelimit.cost } } : {}),
    ...(request.ratelimits !== undefined ? { ratelimits: request.ratelimits } : {})
  }
}

/** Answer of `keys.verifyKey`: always 200 for a well-formed request, `code` saying how it went. */
export const VerifyKeyResponseV1 = Schema.Struct({
  keyId: Schema.optional(Schema.String),
  valid: Schema.Boolean,
  name: Schema.optional(Schema.String),
  ownerId: Schema.optional(Schema.String),
  meta: Schema.optional(KeyModel.MetaObject),
  expires: Schema.optional(Schema.Number),
  ratelimit: Schema.optional(Schema.Struct({ limit: Schema.Number, remaining: Schema.Number, reset: Schema.Number })),
  remaining: Schema.optional(Schema.Number),
  code: Schema.Literal(
    "VALID",
    "NOT_FOUND",
    "FORBIDDEN",
    "USAGE_EXCEEDED",
    "RATE_LIMITED",
    "UNAUTHORIZED",
    "DISABLED",
    "INSUFFICIENT_PERMISSIONS",
    "EXPIRED"
  ),
  enabled: Schema.optional(Schema.Boolean),
  permissions: Schema.optional(Schema.Array(Schema.String)),
  roles: Schema.optional(Schema.Array(Schema.String)),
  environment: Schema.optional(Schema.String),
  identity: Schema.optional(Schema.Struct({ id: Schema.String, externalId: Schema.String, meta: KeyModel.MetaObject })),
  requestId: Schema.String
}).annotations({ identifier: "V1VerifyKeyResponse" })
export type VerifyKeyResponseV1 = typeof VerifyKeyResponseV1.Type

const NO_ROLES: ReadonlyArray<string> = Object.freeze([])

/**
 * A core verification as v1 answers it. v1 has one `ratelimit`: the limit named `default` when
 * the verification took it, else the one that refused it, else the one with the fewest left.
 */
export const fromVerification = (answer: VerifyKeyResponse, requestId: string): VerifyKeyResponseV1 => {
  const limits = answer.ratelimits
  let limit: typeof limits extends ReadonlyArray<infer L> | undefined ? L | undefined : never = undefined
  if (limits !== undefined) {
    for (const taken of limits) {
      if (taken.name === KeyModel.DEFAULT_RATELIMIT) {
        limit = taken
        break
      }
      if (limit === undefined || (taken.exceeded && !limit.exceeded) || taken.remaining < limit.remaining) {
        limit = taken
      }
    }
  }
  // One object of one shape for every answer (this runs on every verification): the fields a
  // verification does not have are undefined, which JSON leaves out.
  return {
    keyId: answer.keyId,
    valid: answer.valid,
    name: answer.name,
    ownerId: answer.identity?.externalId,
    meta: answer.meta,
    expires: answer.expires,
    ratelimit: limit === undefined ? undefined : { limit: limit.limit, remaining: limit.remaining, reset: limit.reset },
    remaining: answer.credits?.remaining,
    code: answer.code,
    enabled: answer.enabled,
    permissions: answer.permissions,
    roles: answer.permissions === undefined ? undefined : answer.roles ?? NO_ROLES,
    environment: answer.environment,
    identity: answer.identity,
    requestId
  } as VerifyKeyResponseV1
}
