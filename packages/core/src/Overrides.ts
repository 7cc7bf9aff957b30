/**
 * Rate-limit overrides: setting them (create or overwrite).
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Auth } from "./Auth.js"
import { NotFound, ValidationError } from "./Errors.js"
import * as Ids from "./Ids.js"
import { Namespace } from "./Namespace.js"
import { SetOverrideInput } from "./Override.js"
import type { Principal } from "./Permission.js"
import * as Permission from "./Permission.js"
import { Catalog } from "./Storage.js"
import * as Validation from "./Validation.js"

/** Manages overrides in the caller's workspace. */
export class Overrides extends Effect.Service<Overrides>()("@keymeter/core/Overrides", {
  effect: Effect.gen(function*() {
    const catalog = yield* Catalog
    const auth = yield* Auth
    const decodeSet = Validation.decode(SetOverrideInput, { root: "body" })

    /**
     * The namespace an override call names, with the permission check. A namespaceId must exist
     * (404) and, with a namespaceName too, carry that name (400). A namespaceName that does not
     * exist is created when `create` is set, which needs the workspace-wide permission.
     */
    const namespaceFor = (
      principal: Principal,
      input: { readonly namespaceId?: string | undefined; readonly namespaceName?: string | undefined },
      required: (namespaceId: string) => ReadonlyArray<string>,
      create: boolean
    ) =>
      Effect.gen(function*() {
        const { namespaceId, namespaceName } = input
        if (namespaceId !== undefined) {
          yield* auth.authorize(principal, required(namespaceId))
          const found = yield* catalog.getNamespace(principal.workspaceId, namespaceId)
          if (Option.isNone(found)) {
            return yield* new NotFound({
              message: `namespaceId: no namespace ${JSON.stringify(namespaceId)} in this workspace`
            })
          }
          if (namespaceName !== undefined && namespaceName !== found.value.name) {
            return yield* new ValidationError({
              message: `namespaceName: ${JSON.stringify(namespaceName)} does not name namespace ${namespaceId}`
            })
          }
          return found.value
        }
        const name = namespaceName!
        const found = yield* catalog.findNamespaceByName(principal.workspaceId, name)
        if (Option.isSome(found)) {
          yield* auth.authorize(principal, required(found.value.id))
          return found.value
        }
        if (!create) {
          // Same answer as for a namespace the key may not see, so names do not leak.
          yield* auth.authorize(principal, required("*"))
          return yield* new NotFound({
            message: `namespaceName: no namespace ${JSON.stringify(name)} in this workspace`
          })
        }
        yield* auth.authorize(principal, Permission.required.createNamespace())
        return yield* catalog.ensureNamespace(
          new Namespace({
            id: Ids.make(Ids.Prefix.namespace, yield* Clock.currentTimeMillis),
            workspaceId: principal.workspaceId,
            name
          })
        )
      })

    const requireNamespace = (input: {
      readonly namespaceId?: string | undefined
      readonly namespaceName?: string | undefined
    }) =>
      input.namespaceId === undefined && input.namespaceName === undefined
        ? Effect.fail(new ValidationError({ message: "namespaceId: either namespaceId or namespaceName is required" }))
        : Effect.void

    /** Creates the override of (namespace, identifier), or overwrites it keeping its id. */
    const set = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const decoded = yield* decodeSet(input)
        yield* requireNamespace(decoded)
        const namespace = yield* namespaceFor(principal, decoded, Permission.required.setOverride, true)
        const now = yield* Clock.currentTimeMillis
        return yield* catalog.upsertOverride({
          id: Ids.make(Ids.Prefix.override, now),
          namespaceId: namespace.id,
          identifier: decoded.identifier,
          limit: decoded.limit,
          duration: decoded.duration,
          async: decoded.async ?? false,
          now
        })
      }).pipe(Effect.withSpan("Overrides.set"))

    return { set, namespaceFor, requireNamespace } as const
  })
}) {}
