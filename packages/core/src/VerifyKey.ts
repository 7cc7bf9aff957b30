/**
 * The contract of `keys.verifyKey`: its body, its answer and the codes it answers with (see
 * `KeyVerifier`, which decides them).
 */
import * as Schema from "effect/Schema"
import * as KeyModel from "./Key.js"
import { MAX_NAME_LENGTH } from "./Namespace.js"
import { Duration } from "./Override.js"
import { PermissionQuery } from "./PermissionQuery.js"
import * as Validation from "./Validation.js"
import type { Outcome } from "./Verification.js"
import * as Verification from "./Verification.js"

/** The codes of a verification, in the order they are checked (VALID last). */
export const Codes = [
  "NOT_FOUND",
  "FORBIDDEN",
  "UNAUTHORIZED",
  "DISABLED",
  "EXPIRED",
  "INSUFFICIENT_PERMISSIONS",
  "RATE_LIMITED",
  "USAGE_EXCEEDED",
  "VALID"
] as const
export type Code = typeof Codes[number]

/** The analytics outcome each code is recorded as. */
export const outcomeOf: Record<Code, Outcome> = {
  NOT_FOUND: "notFound",
  FORBIDDEN: "forbidden",
  UNAUTHORIZED: "unauthorized",
  DISABLED: "disabled",
  EXPIRED: "expired",
  INSUFFICIENT_PERMISSIONS: "insufficientPermissions",
  RATE_LIMITED: "rateLimited",
  USAGE_EXCEEDED: "usageExceeded",
  VALID: "valid"
}

/** The key id a verification of an unknown secret is recorded under (with the api it named). */
export const UNKNOWN_KEY_ID = "unknown"

/** Longest secret a verification accepts. */
export const MAX_SECRET_LENGTH = 1024

/** Body of `keys.verifyKey`. */
export const VerifyKeyInput = Schema.Struct({
  key: Validation.boundedString("a key", 1, MAX_SECRET_LENGTH),
  apiId: Schema.optional(Verification.Id),
  permissions: Schema.optional(PermissionQuery),
  credits: Schema.optional(Schema.Struct({
    cost: Validation.expected(
      Schema.Number.pipe(Schema.int(), Schema.between(0, Number.MAX_SAFE_INTEGER)),
      "must be an integer >= 0"
    )
  })),
  ratelimits: Schema.optional(
    Schema.Array(Schema.Struct({
      name: Validation.boundedString("a rate limit name", 1, MAX_NAME_LENGTH),
      cost: Schema.optional(Validation.expected(
        Schema.Number.pipe(Schema.int(), Schema.between(0, Number.MAX_SAFE_INTEGER)),
        "must be an integer >= 0"
      )),
      /** This call's limit and window in place of the key's (a limit the key lacks needs both). */
      limit: Schema.optional(KeyModel.Positive),
      duration: Schema.optional(Duration)
    })).pipe(Schema.maxItems(KeyModel.MAX_RATELIMITS))
  ),
  /** The cost of the key's limit named `default`, when it has one and `ratelimits` does not name it. */
  ratelimit: Schema.optional(Schema.Struct({
    cost: Schema.optional(Validation.expected(
      Schema.Number.pipe(Schema.int(), Schema.between(0, Number.MAX_SAFE_INTEGER)),
      "must be an integer >= 0"
    ))
  })),
  tags: Schema.optional(Schema.Array(Verification.Tag).pipe(Schema.maxItems(Verification.MAX_TAGS)))
}).annotations({ identifier: "VerifyKeyInput" })

/** Answer of `keys.verifyKey`: always 200, `valid` and `code` saying how it went. */
export const VerifyKeyResponse = Schema.Struct({
  valid: Schema.Boolean,
  code: Schema.Literal(...Codes),
  keyId: Schema.optional(Schema.String),
  name: Schema.optional(Schema.String),
  meta: Schema.optional(KeyModel.MetaObject),
  expires: Schema.optional(Schema.Number),
  credits: Schema.optional(Schema.Struct({ remaining: Schema.Number })),
  ratelimits: Schema.optional(Schema.Array(Schema.Struct({
    id: Schema.String.annotations({ description: "<owner id>:<name>: the key's or its identity's limit" }),
    name: Schema.String,
    limit: Schema.Number.annotations({ description: "the limit applied: the override's when one applies" }),
    duration: Schema.Number.annotations({ description: "the window applied, in ms" }),
    autoApply: Schema.Boolean,
    remaining: Schema.Number,
    reset: Schema.Number,
    exceeded: Schema.Boolean,
    overrideId: Schema.optional(Schema.String)
  }))),
  permissions: Schema.optional(
    Schema.Array(Schema.String).annotations({
      description: "the key's permissions, its own and its roles'"
    })
  ),
  roles: Schema.optional(Schema.Array(Schema.String).annotations({ description: "the names of the key's roles" })),
  enabled: Schema.optional(Schema.Boolean),
  identity: Schema.optional(Schema.Struct({ id: Schema.String, externalId: Schema.String, meta: KeyModel.MetaObject })),
  environment: Schema.optional(Schema.String)
}).annotations({ identifier: "VerifyKeyResponse" })
export type VerifyKeyResponse = Schema.Schema.Type<typeof VerifyKeyResponse>

/** A body of `keys.verifyKey`, decoded. */
export type VerifyKeyInput = Schema.Schema.Type<typeof VerifyKeyInput>
