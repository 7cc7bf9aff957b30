/**
 * Identities: the end customers keys belong to, by their `externalId` in a workspace. One is made
 * with the first key naming its externalId; disabling it makes all its keys verify as
 * UNAUTHORIZED from the next call.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Auth } from "./Auth.js"
import { NotFound } from "./Errors.js"
import * as Ids from "./Ids.js"
import { KeyCache } from "./internal/KeyCache.js"
import * as KeyModel from "./Key.js"
import { Identity } from "./Key.js"
import type { Principal } from "./Permission.js"
import * as Permission from "./Permission.js"
import { Catalog } from "./Storage.js"
import * as Validation from "./Validation.js"

/** Reads, enables and disables the identities of the caller's workspace. */
export class Identities extends Effect.Service<Identities>()("@keymeter/core/Identities", {
  effect: Effect.gen(function*() {
    const catalog = yield* Catalog
    const auth = yield* Auth
    const cache = yield* KeyCache
    const decodeExternalId = Validation.decode(KeyModel.ExternalIdInput)
    const decodeUpdate = Validation.decode(KeyModel.UpdateIdentityInput)

    /** The identity of `externalId` in the workspace, made now when it has none. */
    const ensure = (workspaceId: string, externalId: string, now: number) =>
      cache.write(
        {},
        catalog.ensureIdentity(
          new Identity({
            id: Ids.make(Ids.Prefix.identity, now),
            workspaceId,
            externalId,
            enabled: true,
            createdAt: now
          })
        )
      )

    /** The identity of `externalId` in the caller's workspace. */
    const named = (principal: Principal, externalId: string) =>
      Effect.flatMap(
        catalog.findIdentityByExternalId(principal.workspaceId, externalId),
        (found) =>
          Option.isNone(found)
            ? Effect.fail(
              new NotFound({ message: `externalId: no identity ${JSON.stringify(externalId)} in this workspace` })
            )
            : Effect.succeed(found.value)
      )

    /** An identity (created with the first key of its externalId). */
    const get = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const { externalId } = yield* decodeExternalId(input)
        yield* auth.authorize(principal, Permission.required.readIdentity())
        return KeyModel.toIdentityView(yield* named(principal, externalId))
      }).pipe(Effect.withSpan("Identities.get"))

    /** Enables or disables an identity: a disabled one's keys verify as UNAUTHORIZED from the next call. */
    const update = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const request = yield* decodeUpdate(input)
        yield* auth.authorize(principal, Permission.required.updateIdentity())
        const identity = yield* named(principal, request.externalId)
        const changed = yield* cache.write(
          { identityId: identity.id },
          catalog.setIdentityEnabled(principal.workspaceId, identity.id, request.enabled)
        )
        if (!changed) {
          return yield* new NotFound({
            message: `externalId: no identity ${JSON.stringify(request.externalId)} in this workspace`
          })
        }
        return KeyModel.toIdentityView(new Identity({ ...identity, enabled: request.enabled }))
      }).pipe(Effect.withSpan("Identities.update"))

    return { ensure, get, update } as const
  })
}) {}
