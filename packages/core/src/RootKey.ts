/**
 * Root keys: the credentials of the API. The secret is shown once, at creation; only its SHA-256
 * hash is stored.
 */
import * as Schema from "effect/Schema"
import * as Crypto from "node:crypto"
import * as Ids from "./Ids.js"

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
export const generateSecret = (): string => SECRET_PREFIX + Crypto.randomBytes(32).toString("base64url")

// Node's one-shot hash (20.12+) takes a third of createHash's time; every request hashes its key.
const oneShot = (Crypto as { readonly hash?: (algorithm: string, data: string, encoding: "hex") => string }).hash

/** SHA-256 of the secret (UTF-8), hex. */
export const hash = (secret: string): string =>
  oneShot !== undefined
    ? oneShot("sha256", secret, "hex")
    : Crypto.createHash("sha256").update(secret, "utf8").digest("hex")

/** What a new root key is made of. */
export interface MintOptions {
  readonly workspaceId: string
  readonly name: string
  readonly permissions: ReadonlyArray<string>
  /** Creation time, unix ms. */
  readonly now: number
  readonly expiresAt?: number | undefined
  readonly disabled?: boolean | undefined
  /** The secret, when the caller brings its own (a provisioning document); otherwise a new random one. */
  readonly secret?: string | undefined
}

/** A new root key: the record to store (only its secret's hash) and the secret, to show once. */
export const mint = (options: MintOptions): { readonly rootKey: RootKey; readonly secret: string } => {
  const secret = options.secret ?? generateSecret()
  const rootKey = new RootKey({
    id: Ids.make(Ids.Prefix.rootKey, options.now),
    workspaceId: options.workspaceId,
    name: options.name,
    hash: hash(secret),
    permissions: options.permissions,
    createdAt: options.now,
    ...(options.expiresAt !== undefined ? { expiresAt: options.expiresAt } : {}),
    disabled: options.disabled ?? false
  })
  return { rootKey, secret }
}
