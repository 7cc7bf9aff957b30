/**
 * Recording verification outcomes.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Auth } from "./Auth.js"
import { NotFound } from "./Errors.js"
import type { Receipt } from "./Idempotency.js"
import { IdempotencyKeys, type KeyOptions } from "./IdempotencyKeys.js"
import * as KnownApis from "./internal/KnownApis.js"
import type { Principal } from "./Permission.js"
import * as Permission from "./Permission.js"
import { Catalog, VerificationStore } from "./Storage.js"
import * as Verification from "./Verification.js"

/** The answer of a record call. */
export interface Recorded {
  readonly recorded: number
}

/** Options of {@link Verifications} `record`. */
export interface RecordOptions extends KeyOptions {
  /** What the batch is called in messages (default `verifications`). */
  readonly path?: string
}

/**
 * A batch in a form that does not depend on the order of fields in the caller's JSON: one array
 * per event, fields in a fixed order, absent ones null. Called once the batch is valid.
 */
const canonical = (items: ReadonlyArray<Record<string, any>>) =>
  items.map((item) => [
    item.apiId,
    item.keyId,
    item.outcome,
    item.time ?? null,
    item.identity === undefined ? null : [item.identity.id, item.identity.externalId],
    item.tags ?? null
  ])

/** Records batches of verifications, all or nothing. */
export class Verifications extends Effect.Service<Verifications>()("@keymeter/core/Verifications", {
  effect: Effect.gen(function*() {
    const store = yield* VerificationStore
    const catalog = yield* Catalog
    const knownApis = KnownApis.make(catalog)
    const auth = yield* Auth

    const keys = yield* IdempotencyKeys

    /**
     * Validates every item (a bad one rejects the batch, naming its index), checks
     * `api.*.record_verifications` or `api.<apiId>.record_verifications` for every api in the batch,
     * checks those apis are in the caller's workspace, then stores the batch.
     *
     * With an idempotency key, a repeat of the same batch within the window answers what the first
     * answered and stores nothing; another batch under the key fails with `IdempotencyKeyReused`.
     */
    const record = (principal: Principal, verifications: unknown, options?: RecordOptions) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const events = yield* Verification.decodeBatch(verifications, {
          workspaceId: principal.workspaceId,
          now,
          ...(options?.path !== undefined ? { path: options.path } : {})
        })
        // First index of each api, to name it if the api turns out not to exist.
        const apis = new Map<string, number>()
        for (let i = 0; i < events.length; i++) {
          const apiId = events[i]!.apiId
          if (!apis.has(apiId)) apis.set(apiId, i)
        }
        for (const apiId of apis.keys()) {
          yield* auth.authorize(principal, Permission.required.recordVerifications(apiId))
        }
        for (const [apiId, index] of apis) {
          if (Option.isNone(yield* knownApis.find(principal.workspaceId, apiId))) {
            return yield* new NotFound({
              message: `${options?.path ?? "verifications"}[${index}].apiId: no api ${
                JSON.stringify(apiId)
              } in this workspace`
            })
          }
        }
        const answer: Recorded = { recorded: events.length }
        return yield* keys.once(
          {
            workspaceId: principal.workspaceId,
            key: options?.idempotencyKey,
            name: options?.idempotencyKeyName ?? "idempotencyKey",
            operation: "recordVerifications",
            canonical: () => canonical(verifications as ReadonlyArray<Record<string, any>>)
          },
          (receiptOf: (answer: Recorded) => Receipt | undefined) =>
            Effect.as(store.append(events, receiptOf(answer)), answer),
          { storeAfter: false }
        )
      })

    return { record } as const
  })
}) {}
