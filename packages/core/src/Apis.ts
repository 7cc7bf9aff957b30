/**
 * Creating and listing apis.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { Api, CreateApiInput } from "./Api.js"
import { Auth } from "./Auth.js"
import { StorageError } from "./Errors.js"
import { IdempotencyKeys, type KeyOptions } from "./IdempotencyKeys.js"
import * as Ids from "./Ids.js"
import type { Principal } from "./Permission.js"
import * as Permission from "./Permission.js"
import { Catalog } from "./Storage.js"
import * as Validation from "./Validation.js"

/** Creates and lists apis in the caller's workspace. */
export class Apis extends Effect.Service<Apis>()("@keymeter/core/Apis", {
  effect: Effect.gen(function*() {
    const catalog = yield* Catalog
    const auth = yield* Auth
    const keys = yield* IdempotencyKeys
    const decode = Validation.decode(CreateApiInput)

    /**
     * Validates the name, checks `api.*.create_api`, creates the api and returns its id. With an
     * idempotency key, a repeat is answered from the receipt.
     */
    const create = (principal: Principal, input: unknown, options?: KeyOptions) =>
      Effect.gen(function*() {
        const { name } = yield* decode(input)
        yield* auth.authorize(principal, Permission.required.createApi())
        return yield* keys.once(
          {
            workspaceId: principal.workspaceId,
            key: options?.idempotencyKey,
            name: options?.idempotencyKeyName ?? "idempotencyKey",
            operation: "createApi",
            canonical: () => [name]
          },
          () =>
            Effect.gen(function*() {
              const api = new Api({
                id: Ids.make(Ids.Prefix.api, yield* Clock.currentTimeMillis),
                workspaceId: principal.workspaceId,
                name
              })
              const result = yield* catalog.putApi(api)
              // A fresh random id cannot collide unless something is badly wrong.
              if (result === "conflict") return yield* new StorageError({ message: "api id collision" })
              return { apiId: api.id }
            }),
          // The api and the receipt are two writes: a process killed between them leaves the api,
          // and the repeat creates another (see the README).
          { storeAfter: true }
        )
      }).pipe(Effect.withSpan("Apis.create"))

    /** The workspace's apis the caller may read (`api.*.read_api` or `api.<apiId>.read_api`), by id. */
    const list = (principal: Principal) =>
      Effect.map(catalog.listApis(principal.workspaceId), (apis) => ({
        apis: apis
          .filter((api) => Permission.allows(principal.permissions, Permission.required.readApi(api.id)))
          .map((api) => ({ apiId: api.id, name: api.name }))
      })).pipe(Effect.withSpan("Apis.list"))

    return { create, list } as const
  })
}) {}
