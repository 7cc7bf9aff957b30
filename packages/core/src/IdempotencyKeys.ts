/**
 * Runs keyed writes once: a write under an idempotency key that already has a receipt in the
 * workspace is answered from the receipt (or refused, for another request); two writes under one
 * key at once run one after the other, so the second finds the first's receipt.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { IdempotencyKeyInUse, IdempotencyKeyReused, StorageError, ValidationError } from "./Errors.js"
import * as Idempotency from "./Idempotency.js"
import * as CompositeKey from "./internal/CompositeKey.js"
import { VerificationStore } from "./Storage.js"

/** How a caller makes a write safe to retry. */
export interface KeyOptions {
  /** The idempotency key (see `Idempotency`); absent: the write is not keyed. */
  readonly idempotencyKey?: string | undefined
  /** What the key is called in messages (default `idempotencyKey`; HTTP says `Idempotency-Key`). */
  readonly idempotencyKeyName?: string | undefined
}

/** What a keyed write is: its key (absent: not keyed), operation and request. */
export interface Keyed {
  readonly workspaceId: string
  readonly key: string | undefined
  /** What the key is called in messages (`Idempotency-Key` on HTTP). */
  readonly name: string
  readonly operation: string
  /** The request in a form independent of the caller's field order (hashed only when keyed). */
  readonly canonical: () => unknown
}

/** How a keyed write's answer is kept and replayed (see `IdempotencyKeys` `once`). */
interface OnceOptions<A> {
  readonly storeAfter: boolean
  /** Rebuilds a replayed answer from its JSON (default: the JSON value itself). */
  readonly revive?: (json: unknown) => A
  /** What the receipt keeps of the answer (default: all of it); a secret must not be kept. */
  readonly kept?: (answer: A) => unknown
}

export class IdempotencyKeys extends Effect.Service<IdempotencyKeys>()("@keymeter/core/IdempotencyKeys", {
  effect: Effect.gen(function*() {
    const store = yield* VerificationStore
    const locks = Idempotency.makeLocks()
    const window = yield* Idempotency.Window

    /**
     * Runs `write` unless the key has a receipt. `write` is handed the receipt of its answer, to
     * store in the same step as its effect (as a batch of verifications does); a write that
     * converges on repeat instead leaves it to be stored after it (`storeAfter`), so a crash in
     * between only means the repeat runs it again, to the same result.
     */
    const once = <A, E, R>(
      keyed: Keyed,
      write: (receiptOf: (answer: A) => Idempotency.Receipt | undefined) => Effect.Effect<A, E, R>,
      options: OnceOptions<A>
    ): Effect.Effect<
      A,
      E | ValidationError | IdempotencyKeyReused | IdempotencyKeyInUse | StorageError,
      R
    > =>
      // Unkeyed, the write itself: another generator around a bulk ingest's write kept its batch
      // alive past two young collections (promoted ~4 MB a collection where 0.6 without it).
      keyed.key === undefined ? write(() => undefined) : keyedOnce(keyed, keyed.key, write, options)

    const keyedOnce = <A, E, R>(
      keyed: Keyed,
      given: string,
      write: (receiptOf: (answer: A) => Idempotency.Receipt | undefined) => Effect.Effect<A, E, R>,
      options: OnceOptions<A>
    ) =>
      Effect.gen(function*() {
        const key = yield* Idempotency.validateKey(given, keyed.name)
        const request = {
          operation: keyed.operation,
          fingerprint: Idempotency.fingerprint([keyed.operation, keyed.canonical()]),
          name: keyed.name
        }
        return yield* locks(
          CompositeKey.make(keyed.workspaceId, key),
          Effect.gen(function*() {
            const now = yield* Clock.currentTimeMillis
            const found = yield* store.findReceipt(keyed.workspaceId, key, now)
            if (Option.isSome(found)) {
              const json = yield* Idempotency.replay<unknown>(found.value, request)
              return options.revive === undefined ? json as A : options.revive(json)
            }
            const receiptOf = (answer: A): Idempotency.Receipt => ({
              workspaceId: keyed.workspaceId,
              key,
              operation: request.operation,
              fingerprint: request.fingerprint,
              response: JSON.stringify(options.kept === undefined ? answer : options.kept(answer)),
              createdAt: now,
              expiresAt: now + window
            })
            const answer = yield* write(receiptOf)
            if (options.storeAfter) yield* store.append([], receiptOf(answer))
            return answer
          })
        )
      })

    return { once } as const
  })
}) {}
