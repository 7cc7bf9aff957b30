/**
 * Root keys: the credentials of the API. The secret is shown once, at creation; only its SHA-256
 * hash is stored.
 */
import * as Schema from "effect/Schema"
import { createHash, randomBytes } from "node:crypto"

/** A stored root key (no secret). */
export class RootKey extends Schema.Class<RootKey>("RootKey")({
  id: Schema.String,
  workspaceId: Schema.String,
  name: Schema.String,
  hash: Schema.String,
  permissions: Schema.Array(Schema.String),
  createdAt: Schema.Number,
  expiresAt: Schema.optional(Schema.Number),
  disabled: Schema.Boolean
}) {}

/** Prefix of every root key secret. */
export const SECRET_PREFIX = "sk_"

/** A new random secret: `sk_` and 32 random bytes in base64url. */
export const generateSecret = (): string => SECRET_PREFIX + randomBytes(32).toString("base64url")

/** SHA-256 of the secret, hex. */
export const hash = (secret: string): string => createHash("sha256").update(secret, "utf8").digest("hex")
