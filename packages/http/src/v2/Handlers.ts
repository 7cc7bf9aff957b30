/**
 * The /v2 handlers: each reads its JSON body by its v2 schema (errors in v2's field names), maps it
 * onto core's input, calls the same core services as /v1 as the authenticated principal, and
 * answers `{meta: {requestId}, data}`; failures leave in v2's problem body (see `V2Errors`).
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { ApiIdInput, CreateApiInput } from "@keymeter/core/Api"
import { Apis } from "@keymeter/core/Apis"
import { Identities } from "@keymeter/core/Identities"
import { Keys } from "@keymeter/core/Keys"
import { Overrides } from "@keymeter/core/Overrides"
import type { Principal } from "@keymeter/core/Permission"
import { RateLimiter } from "@keymeter/core/RateLimiter"
import { Rbac } from "@keymeter/core/Rbac"
import * as Validation from "@keymeter/core/Validation"
import { SqlAnalytics, SqlRequest } from "@keymeter/sql/SqlAnalytics"
import type * as SqlQuery from "@keymeter/sql/SqlQuery"
import * as Effect from "effect/Effect"
import type * as Schema from "effect/Schema"
import { Api } from "../Api.js"
import type { DomainError, HttpError } from "../Errors.js"
import { HotRoutes } from "../HotRoutes.js"
import * as IdempotencyKey from "../internal/IdempotencyKey.js"
import * as JsonBody from "../internal/JsonBody.js"
import * as JsonText from "../internal/JsonText.js"
import { wire } from "../internal/Wire.js"
import * as RequestContext from "../RequestContext.js"
import { CurrentPrincipalV2 } from "./Api.js"
import { mapV2 } from "./Errors.js"
import * as V2Identities from "./Identities.js"
import * as V2Keys from "./Keys.js"
import * as V2Ratelimit from "./Ratelimit.js"
import * as V2Rbac from "./Rbac.js"

/** What a route's work gets: the caller, its input read, and the request (for its headers). */
interface Call<A> {
  readonly principal: Principal
  readonly input: A
  readonly request: HttpServerRequest.HttpServerRequest
  readonly requestId: string
}

/**
 * A /v2 route: its body read by `schema`, `act` run, its answer in v2's envelope (`data`, or the
 * whole body when `act` built it, as lists do with their pagination).
 */
const route = <A, I>(schema: Schema.Schema<A, I, never>) => {
  const decode = Validation.decode(schema, { root: "body" })
  return <B>(act: (call: Call<A>) => Effect.Effect<B, DomainError | HttpError>, whole = false) =>
  ({ request }: { readonly request: HttpServerRequest.HttpServerRequest }) =>
    mapV2(Effect.gen(function*() {
      const principal = yield* CurrentPrincipalV2
      const { requestId } = yield* RequestContext.current
      const input = yield* decode(yield* JsonBody.read(request))
      const data = yield* act({ principal, input, request, requestId })
      if (data instanceof JsonText.JsonText) return JsonText.response({ meta: { requestId } }, "data", data)
      return wire(whole ? data : { meta: { requestId }, data })
    }))
}

/**
 * A hot route (see `HotRoutes`): its body handed as read, for the route to check and answer in
 * v2's envelope itself, as the fast lane does.
 */
const hot = (
  act: (principal: Principal, body: unknown, requestId: string) => Effect.Effect<unknown, DomainError | HttpError>
) =>
({ request }: { readonly request: HttpServerRequest.HttpServerRequest }) =>
  mapV2(Effect.gen(function*() {
    const principal = yield* CurrentPrincipalV2
    const { requestId } = yield* RequestContext.current
    return wire(yield* act(principal, yield* JsonBody.read(request), requestId))
  }))

/** A page in v2's envelope: a cursor only when more follow (the client pages on the cursor alone). */
const page = <A>(requestId: string, data: ReadonlyArray<A>, cursor: string | undefined) => ({
  meta: { requestId },
  data,
  pagination: cursor === undefined ? { hasMore: false } : { cursor, hasMore: true }
})

/** Handlers of the key routes. */
export const KeysLive = HttpApiBuilder.group(Api, "v2keys", (handlers) =>
  Effect.gen(function*() {
    const keys = yield* Keys
    const routes = yield* HotRoutes
    return handlers
      .handleRaw(
        "keys.createKey",
        route(V2Keys.CreateKeyRequest)(({ input, principal, request }) =>
          Effect.map(
            keys.create(principal, V2Keys.toCreateKey(input), IdempotencyKey.read(request.headers)),
            ({ key, keyId }) => ({ keyId, key: key ?? "" })
          )
        )
      )
      .handleRaw("keys.verifyKey", hot(routes.verifyKeyV2))
      .handleRaw(
        "keys.getKey",
        route(V2Keys.GetKeyRequest)(({ input, principal }) =>
          Effect.map(keys.get(principal, { keyId: input.keyId }), V2Keys.fromKey)
        )
      )
      .handleRaw(
        "keys.whoami",
        route(V2Keys.WhoamiRequest)(({ input, principal }) => Effect.map(keys.whoami(principal, input), V2Keys.fromKey))
      )
      .handleRaw(
        "keys.updateKey",
        route(V2Keys.UpdateKeyRequest)(({ input, principal }) =>
          Effect.as(keys.update(principal, V2Keys.toUpdateKey(input)), {})
        )
      )
      .handleRaw(
        "keys.updateCredits",
        route(V2Keys.UpdateCreditsRequest)(({ input, principal, request }) =>
          keys.updateCredits(principal, V2Keys.toUpdateCredits(input), IdempotencyKey.read(request.headers))
        )
      )
      .handleRaw(
        "keys.rerollKey",
        route(V2Keys.RerollKeyRequest)(({ input, principal }) => keys.reroll(principal, input))
      )
      .handleRaw(
        "keys.deleteKey",
        route(V2Keys.DeleteKeyRequest)(({ input, principal }) => keys.delete(principal, { keyId: input.keyId }))
      )
      .handleRaw(
        "keys.addPermissions",
        route(V2Keys.KeyPermissionsRequest)(({ input, principal }) =>
          keys.changePermissions(principal, "add", V2Keys.toKeyPermissions("add", input))
        )
      )
      .handleRaw(
        "keys.removePermissions",
        route(V2Keys.KeyPermissionsRequest)(({ input, principal }) =>
          keys.changePermissions(principal, "remove", V2Keys.toKeyPermissions("remove", input))
        )
      )
      .handleRaw(
        "keys.setPermissions",
        route(V2Keys.KeyPermissionsRequest)(({ input, principal }) =>
          keys.changePermissions(principal, "set", V2Keys.toKeyPermissions("set", input))
        )
      )
      .handleRaw(
        "keys.addRoles",
        route(V2Keys.KeyRolesRequest)(({ input, principal }) =>
          Effect.map(keys.changeRoles(principal, "add", V2Keys.toKeyRoles(input)), rolesAlone)
        )
      )
      .handleRaw(
        "keys.removeRoles",
        route(V2Keys.KeyRolesRequest)(({ input, principal }) =>
          Effect.map(keys.changeRoles(principal, "remove", V2Keys.toKeyRoles(input)), rolesAlone)
        )
      )
      .handleRaw(
        "keys.setRoles",
        route(V2Keys.KeyRolesRequest)(({ input, principal }) =>
          Effect.map(keys.changeRoles(principal, "set", V2Keys.toKeyRoles(input)), rolesAlone)
        )
      )
      .handleRaw(
        "keys.migrateKeys",
        route(V2Keys.MigrateKeysRequest)(({ input, principal }) =>
          Effect.map(
            keys.migrate(principal, V2Keys.toMigrateKeys(input), { skipExisting: true }),
            (migrated) => V2Keys.fromMigrated(input, migrated)
          )
        )
      )
  }))

/** A key's roles as its role routes answer them: their permissions not expanded (v2's). */
const rolesAlone = (
  roles: ReadonlyArray<{ readonly id: string; readonly name: string; readonly description?: string | undefined }>
) => roles.map(({ description, id, name }) => ({ id, name, ...(description !== undefined ? { description } : {}) }))

/** Handlers of the api routes. */
export const ApisLive = HttpApiBuilder.group(Api, "v2apis", (handlers) =>
  Effect.gen(function*() {
    const apis = yield* Apis
    const keys = yield* Keys
    return handlers
      .handleRaw(
        "apis.createApi",
        route(CreateApiInput)(({ input, principal, request }) =>
          apis.create(principal, input, IdempotencyKey.read(request.headers))
        )
      )
      .handleRaw(
        "apis.getApi",
        route(ApiIdInput)(({ input, principal }) =>
          Effect.map(apis.get(principal, input), ({ id, name }) => ({ id, name }))
        )
      )
      .handleRaw(
        "apis.listKeys",
        route(V2Keys.ListKeysRequest)(({ input, principal, requestId }) =>
          Effect.gen(function*() {
            // v2 reads an api's keys with the api itself readable too.
            yield* apis.get(principal, { apiId: input.apiId })
            const found = yield* keys.list(principal, V2Keys.toListKeys(input))
            return page(requestId, found.keys.map(V2Keys.fromKey), found.cursor)
          }), true)
      )
      .handleRaw("apis.deleteApi", route(ApiIdInput)(({ input, principal }) => apis.delete(principal, input)))
  }))

/** Handlers of the identity routes. */
export const IdentitiesLive = HttpApiBuilder.group(Api, "v2identities", (handlers) =>
  Effect.gen(function*() {
    const identities = yield* Identities
    return handlers
      .handleRaw(
        "identities.createIdentity",
        route(V2Identities.CreateIdentityRequest)(({ input, principal }) =>
          Effect.map(identities.create(principal, input), ({ id }) => ({ identityId: id }))
        )
      )
      .handleRaw(
        "identities.getIdentity",
        route(V2Identities.IdentityRequest)(({ input, principal }) =>
          Effect.map(identities.get(principal, input), V2Identities.fromIdentity)
        )
      )
      .handleRaw(
        "identities.listIdentities",
        route(V2Identities.ListIdentitiesRequest)(({ input, principal, requestId }) =>
          Effect.map(
            identities.list(principal, input),
            (found) => page(requestId, found.identities.map(V2Identities.fromIdentity), found.cursor)
          ), true)
      )
      .handleRaw(
        "identities.updateIdentity",
        route(V2Identities.UpdateIdentityRequest)(({ input, principal }) =>
          Effect.map(identities.update(principal, input), V2Identities.fromIdentity)
        )
      )
      .handleRaw(
        "identities.deleteIdentity",
        route(V2Identities.IdentityRequest)(
          ({ input, principal, requestId }) => Effect.as(identities.delete(principal, input), { meta: { requestId } }),
          true
        )
      )
  }))

/** Handlers of the permission and role routes. */
export const PermissionsLive = HttpApiBuilder.group(Api, "v2permissions", (handlers) =>
  Effect.gen(function*() {
    const rbac = yield* Rbac
    return handlers
      .handleRaw(
        "permissions.createPermission",
        route(V2Rbac.CreatePermissionRequest)(({ input, principal }) =>
          Effect.map(rbac.createPermission(principal, input), ({ id }) => ({ permissionId: id }))
        )
      )
      .handleRaw(
        "permissions.getPermission",
        route(V2Rbac.PermissionRequest)(({ input, principal }) =>
          rbac.getPermission(principal, { permissionId: input.permission })
        )
      )
      .handleRaw(
        "permissions.listPermissions",
        route(V2Rbac.ListRequest)(
          ({ input, principal, requestId }) =>
            Effect.map(rbac.pagePermissions(principal, input), (found) => page(requestId, found.items, found.cursor)),
          true
        )
      )
      .handleRaw(
        "permissions.deletePermission",
        route(V2Rbac.PermissionRequest)(({ input, principal }) =>
          rbac.deletePermission(principal, { permissionId: input.permission })
        )
      )
      .handleRaw(
        "permissions.createRole",
        route(V2Rbac.CreateRoleRequest)(({ input, principal }) =>
          Effect.map(rbac.createRole(principal, input), ({ id }) => ({ roleId: id }))
        )
      )
      .handleRaw(
        "permissions.getRole",
        route(V2Rbac.RoleRequest)(({ input, principal }) =>
          Effect.gen(function*() {
            const role = yield* rbac.getRole(principal, { roleId: input.role })
            return (yield* rbac.expandRoles(principal, [role]))[0]!
          })
        )
      )
      .handleRaw(
        "permissions.listRoles",
        route(V2Rbac.ListRequest)(({ input, principal, requestId }) =>
          Effect.gen(function*() {
            const found = yield* rbac.pageRoles(principal, input)
            return page(requestId, yield* rbac.expandRoles(principal, found.items), found.cursor)
          }), true)
      )
      .handleRaw(
        "permissions.deleteRole",
        route(V2Rbac.RoleRequest)(({ input, principal }) => rbac.deleteRole(principal, { roleId: input.role }))
      )
  }))

/** Handlers of the rate-limit routes. */
export const RatelimitLive = HttpApiBuilder.group(Api, "v2ratelimit", (handlers) =>
  Effect.gen(function*() {
    const overrides = yield* Overrides
    const limiter = yield* RateLimiter
    const routes = yield* HotRoutes
    return handlers
      .handleRaw("ratelimit.limit", hot(routes.limitV2))
      .handleRaw(
        "ratelimit.multiLimit",
        route(V2Ratelimit.MultiLimitRequest)(({ input, principal, request }) =>
          limiter.multiLimit(principal, input.map(V2Ratelimit.toLimit), { atomic: isAtomic(request.url) })
        )
      )
      .handleRaw(
        "ratelimit.setOverride",
        route(V2Ratelimit.SetOverrideRequest)(({ input, principal }) =>
          Effect.map(overrides.set(principal, V2Ratelimit.toSetOverride(input)), ({ id }) => ({ overrideId: id }))
        )
      )
      .handleRaw(
        "ratelimit.getOverride",
        route(V2Ratelimit.OverrideRequest)(({ input, principal }) =>
          Effect.map(overrides.get(principal, V2Ratelimit.toOverride(input)), V2Ratelimit.fromOverride)
        )
      )
      .handleRaw(
        "ratelimit.listOverrides",
        route(V2Ratelimit.ListOverridesRequest)(({ input, principal, requestId }) =>
          Effect.map(
            overrides.list(principal, V2Ratelimit.toListOverrides(input)),
            (found) => page(requestId, found.overrides.map(V2Ratelimit.fromOverride), found.cursor)
          ), true)
      )
      .handleRaw(
        "ratelimit.deleteOverride",
        route(V2Ratelimit.OverrideRequest)(({ input, principal }) =>
          overrides.delete(principal, V2Ratelimit.toOverride(input))
        )
      )
  }))

/** Whether a multiLimit asks all or nothing: `?atomic=true` (a keymeter extension). */
const isAtomic = (url: string) => new URLSearchParams(url.split("?")[1] ?? "").get("atomic") === "true"

/** The SQL routes write their answer's rows as JSON: a thread that ran the query encodes them. */
const JSON_ROWS = { json: true } as const

/** An answer's rows for the envelope: as encoded, when they were. */
const rowsOf = (answer: SqlQuery.Answer) => answer.json === undefined ? answer.rows : new JsonText.JsonText(answer.json)

/** Handlers of the SQL analytics routes. */
export const AnalyticsLive = HttpApiBuilder.group(Api, "v2analytics", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlAnalytics
    return handlers
      .handleRaw(
        "analytics.getVerifications",
        route(SqlRequest)(({ input, principal }) =>
          Effect.map(sql.getVerifications(principal, input, JSON_ROWS), rowsOf)
        )
      )
      .handleRaw(
        "analytics.getRatelimits",
        route(SqlRequest)(({ input, principal }) => Effect.map(sql.getRatelimits(principal, input, JSON_ROWS), rowsOf))
      )
  }))
