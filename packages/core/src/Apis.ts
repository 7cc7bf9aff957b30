/**
 * Creating and listing apis.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Api, ApiIdInput, CreateApiInput } from "./Api.js"
import { Auth } from "./Auth.js"
import { NotFound, StorageError } from "./Errors.js"
import { IdempotencyKeys, type KeyOptions } from "./IdempotencyKeys.js"
import * as Ids from "./Ids.js"
import * as Span from "./internal/Span.js"
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
    const decodeApiId = Validation.decode(ApiIdInput)

    const noApi = (apiId: string) =>
      new NotFound({ message: `apiId: no api ${JSON.stringify(apiId)} in this workspace` })

    /** The api `apiId` of the caller's workspace, once `permission` on it is checked. */
    const apiFor = (principal: Principal, apiId: string, permission: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        yield* auth.authorize(principal, permission)
        const api = yield* catalog.getApi(principal.workspaceId, apiId)
        if (Option.isNone(api)) return yield* noApi(apiId)
        return api.value
      })

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
      }).pipe(Span.span("Apis.create"))

    /** The workspace's apis the caller may read (`api.*.read_api` or `api.<apiId>.read_api`), by id. */
    const list = (principal: Principal) =>
      Effect.map(catalog.listApis(principal.workspaceId), (apis) => ({
        apis: apis
          .filter((api) => Permission.allows(principal.permissions, Permission.required.readApi(api.id)))
          .map((api) => ({ apiId: api.id, name: api.name }))
      })).pipe(Span.span("Apis.list"))

    /** An api: `api.*.read_api` or `api.<apiId>.read_api`. */
    const get = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const { apiId } = yield* decodeApiId(input)
        const api = yield* apiFor(principal, apiId, Permission.required.readApi(apiId))
        return { id: api.id, workspaceId: api.workspaceId, name: api.name }
      }).pipe(Span.span("Apis.get"))

    /**
     * Deletes an api and its keys (they verify as NOT_FOUND from the next call); its verifications
     * stay counted. `api.*.delete_api` or `api.<apiId>.delete_api`.
     */
    const remove = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const { apiId } = yield* decodeApiId(input)
        yield* apiFor(principal, apiId, Permission.required.deleteApi(apiId))
        if (!(yield* catalog.deleteApi(principal.workspaceId, apiId))) return yield* noApi(apiId)
        return {}
      }).pipe(Span.span("Apis.delete"))

    /** Deletes an api's keys, keeping the api: `api.*.delete_key` or `api.<apiId>.delete_key`. */
    const deleteKeys = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const { apiId } = yield* decodeApiId(input)
        yield* apiFor(principal, apiId, Permission.required.deleteKey(apiId))
        return { deletedKeys: yield* catalog.deleteKeysOfApi(principal.workspaceId, apiId) }
      }).pipe(Span.span("Apis.deleteKeys"))

    return { create, list, get, delete: remove, deleteKeys } as const
  })
}) {}
