/**
 * Recording verification outcomes.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Auth } from "./Auth.js"
import { NotFound } from "./Errors.js"
import type { Principal } from "./Permission.js"
import * as Permission from "./Permission.js"
import { Catalog, VerificationStore } from "./Storage.js"
import * as Verification from "./Verification.js"

/** Records batches of verifications, all or nothing. */
export class Verifications extends Effect.Service<Verifications>()("@keymeter/core/Verifications", {
  effect: Effect.gen(function*() {
    const store = yield* VerificationStore
    const catalog = yield* Catalog
    const auth = yield* Auth

    /**
     * Validates every item (a bad one rejects the batch, naming its index), checks
     * `api.*.record_verifications` or `api.<apiId>.record_verifications` for every api in the batch,
     * checks those apis are in the caller's workspace, then stores the batch.
     */
    const record = (principal: Principal, verifications: unknown, options?: { readonly path?: string }) =>
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
          if (Option.isNone(yield* catalog.getApi(principal.workspaceId, apiId))) {
            return yield* new NotFound({
              message: `${options?.path ?? "verifications"}[${index}].apiId: no api ${
                JSON.stringify(apiId)
              } in this workspace`
            })
          }
        }
        yield* store.append(events)
        return { recorded: events.length }
      }).pipe(Effect.withSpan("Verifications.record"))

    return { record } as const
  })
}) {}
