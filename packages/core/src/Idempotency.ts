/**
 * Idempotency keys: a client names a write with a key of its own (the `Idempotency-Key` header,
 * the `idempotencyKey` option), and a repeat of that write within the window answers what the first
 * answered without doing it again. Keys are scoped to the workspace; a receipt remembers which
 * operation and which request (by fingerprint) a key stands for, and the answer to replay.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { createHash } from "node:crypto"
import { IdempotencyKeyReused, ValidationError } from "./Errors.js"

/** Longest key (Stripe's bound; a UUID or ULID needs 36 at most). */
export const MAX_KEY_LENGTH = 255

/** How long a receipt is remembered by default: 24 hours. */
export const DEFAULT_WINDOW_MS = 24 * 3_600_000

/** Longest window that may be configured: 30 days. */
export const MAX_WINDOW_MS = 30 * 86_400_000

/**
 * Visible ASCII but `"` and `\`: what survives every header, log line and URL unchanged, and can be
 * sent bare (Stripe's way) or as a structured-field string (`"..."`, the IETF draft's way) alike.
 */
const KEY = /^[\x21\x23-\x5b\x5d-\x7e]+$/

/** Checks a key; `name` is what the caller called it (`Idempotency-Key`, `idempotencyKey`). */
export const validateKey = (key: string, name: string): Either.Either<string, ValidationError> =>
  key.length >= 1 && key.length <= MAX_KEY_LENGTH && KEY.test(key)
    ? Either.right(key)
    : Either.left(
      new ValidationError({
        message: `${name}: must be 1 to ${MAX_KEY_LENGTH} visible ASCII characters (no space, " or \\), got ${
          key.length > MAX_KEY_LENGTH ? `${key.length} characters` : JSON.stringify(key.slice(0, 40))
        }`
      })
    )

/** What a keyed write leaves behind, stored with (or, on ClickHouse, around) the write itself. */
export interface Receipt {
  readonly workspaceId: string
  readonly key: string
  /** The operation the key was used for (`recordVerifications`). */
  readonly operation: string
  /** SHA-256 (hex) of the request, in a canonical form (see {@link fingerprint}). */
  readonly fingerprint: string
  /** The answer, as JSON, replayed to a repeat. */
  readonly response: string
  readonly createdAt: number
  /** After this (unix ms) the key is forgotten and may be used again. */
  readonly expiresAt: number
}

/** SHA-256 (hex) of `canonical` (a JSON value whose form does not depend on the caller's key order). */
export const fingerprint = (canonical: unknown): string =>
  createHash("sha256").update(JSON.stringify(canonical), "utf8").digest("hex")

/** How long receipts are remembered (default {@link DEFAULT_WINDOW_MS}). */
export class Window extends Context.Reference<Window>()("@keymeter/core/Idempotency/Window", {
  defaultValue: () => DEFAULT_WINDOW_MS
}) {}

/**
 * The answer to a request with a key that has a receipt: the stored answer when it is the same
 * request, else {@link IdempotencyKeyReused}.
 */
export const replay = <A>(
  receipt: Receipt,
  request: { readonly operation: string; readonly fingerprint: string; readonly name: string }
): Effect.Effect<A, IdempotencyKeyReused> =>
  receipt.operation === request.operation && receipt.fingerprint === request.fingerprint
    ? Effect.succeed(JSON.parse(receipt.response) as A)
    : Effect.fail(
      new IdempotencyKeyReused({
        message: `${request.name}: this key was used ${
          receipt.operation === request.operation ? "with another request body" : `for ${receipt.operation}`
        } at ${new Date(receipt.createdAt).toISOString()}; a key stands for one request until ${
          new Date(receipt.expiresAt).toISOString()
        }`
      })
    )

/**
 * One lock per key, held while a keyed request looks for its receipt and writes: two requests with
 * the same key at once run one after the other, so the second finds the first's receipt. Entries
 * are dropped as soon as nobody holds or waits for them.
 */
export const makeLocks = () => {
  const locks = new Map<string, { readonly semaphore: Effect.Semaphore; users: number }>()
  return <A, E, R>(id: string, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.suspend(() => {
      let entry = locks.get(id)
      if (entry === undefined) {
        entry = { semaphore: Effect.unsafeMakeSemaphore(1), users: 0 }
        locks.set(id, entry)
      }
      const held = entry
      held.users++
      return held.semaphore.withPermits(1)(effect).pipe(
        Effect.ensuring(Effect.sync(() => {
          if (--held.users === 0) locks.delete(id)
        }))
      )
    })
}
