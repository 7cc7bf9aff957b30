/**
 * Handlers of the /v1 routes: read the wire input (query strings by the route's input struct, JSON bodies as
 * objects), call the core services as the authenticated principal, and map domain failures to
 * wire errors. Core validates the values.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { ApiIdInput } from "@keymeter/core/Api"
import { Apis } from "@keymeter/core/Apis"
import { Identities } from "@keymeter/core/Identities"
import { Keys } from "@keymeter/core/Keys"
import { GetOverrideInput, ListOverridesInput } from "@keymeter/core/Override"
import { Overrides } from "@keymeter/core/Overrides"
import type { Principal } from "@keymeter/core/Permission"
import { Rbac } from "@keymeter/core/Rbac"
import { PermissionIdInput, RoleIdInput } from "@keymeter/core/Role"
import * as Validation from "@keymeter/core/Validation"
import * as Windows from "@keymeter/core/Windows"
import * as Effect from "effect/Effect"
import type * as Schema from "effect/Schema"
import { Api } from "../Api.js"
import type { DomainError } from "../Errors.js"
import { mapDomain } from "../Errors.js"
import { HotRoutes, readQuery, readRatelimitQuery } from "../HotRoutes.js"
import * as IdempotencyKey from "../internal/IdempotencyKey.js"
import * as JsonBody from "../internal/JsonBody.js"
import * as UrlParams from "../internal/UrlParams.js"
import { wire } from "../internal/Wire.js"
import * as RequestContext from "../RequestContext.js"
import { CurrentPrincipal } from "./Api.js"
import * as V1Identities from "./Identities.js"
import * as V1Keys from "./Keys.js"
import * as V1KeyUsage from "./KeyUsage.js"
import * as V1Migrations from "./Migrations.js"

const getOverrideQuery = UrlParams.reader(GetOverrideInput)
const listOverridesQuery = UrlParams.reader(ListOverridesInput)

/** A route of a JSON body: the caller's principal and the body read, `act` run, its failure mapped. */
const withBody = <A>(
  request: HttpServerRequest.HttpServerRequest,
  act: (principal: Principal, body: Record<string, unknown>) => Effect.Effect<A, DomainError>
) =>
  Effect.gen(function*() {
    const principal = yield* CurrentPrincipal
    return yield* mapDomain(act(principal, yield* JsonBody.readObject(request)))
  })

/** Handlers of the analytics routes. */
export const AnalyticsLive = HttpApiBuilder.group(Api, "analytics", (handlers) =>
  Effect.gen(function*() {
    const routes = yield* HotRoutes
    return handlers
      .handle("getVerifications", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const query = yield* readQuery(yield* HttpServerRequest.ParsedSearchParams)
          return wire(yield* routes.getVerifications(principal, query))
        }).pipe(mapDomain))
      .handle("getRatelimits", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const query = yield* readRatelimitQuery(yield* HttpServerRequest.ParsedSearchParams)
          return wire(yield* routes.getRatelimits(principal, query))
        }).pipe(mapDomain))
      .handleRaw("recordVerifications", ({ request }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const body = yield* JsonBody.readObject(request)
          return wire(
            yield* mapDomain(routes.recordVerifications(principal, body, IdempotencyKey.read(request.headers)))
          )
        }))
  }))

/** Handlers of the rate-limit routes. */
export const RatelimitsLive = HttpApiBuilder.group(Api, "ratelimits", (handlers) =>
  Effect.gen(function*() {
    const overrides = yield* Overrides
    const routes = yield* HotRoutes
    return handlers
      .handleRaw("setOverride", ({ request }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const body = yield* JsonBody.readObject(request)
          return wire(yield* mapDomain(routes.setOverride(principal, body, IdempotencyKey.read(request.headers))))
        }))
      .handle("getOverride", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          return yield* overrides.get(principal, yield* getOverrideQuery)
        }).pipe(mapDomain))
      .handle("listOverrides", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          return yield* overrides.list(principal, yield* listOverridesQuery)
        }).pipe(mapDomain))
      .handleRaw("deleteOverride", ({ request }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const body = yield* JsonBody.readObject(request)
          return yield* mapDomain(overrides.delete(principal, body))
        }))
      .handle(
        "listNamespaces",
        () => Effect.flatMap(CurrentPrincipal, (principal) => mapDomain(overrides.namespaces(principal)))
      )
      .handleRaw("limit", ({ request }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const body = yield* JsonBody.readObject(request)
          return wire(yield* mapDomain(routes.limit(principal, body)))
        }))
  }))

/** A v1 body or query read by its wire schema (errors in v1's names), then mapped onto core's input. */
const v1 = <A, I, B>(schema: Schema.Schema<A, I, never>, map: (a: A) => B) => {
  const decode = Validation.decode(schema)
  return (input: unknown) => Effect.map(decode(input), map)
}

/** What a key holds after a change, as v1 answers it: ids and names. */
const connected = (held: ReadonlyArray<{ readonly id: string; readonly name: string }>) =>
  wire(held.map(({ id, name }) => ({ id, name })))

const getApiQuery = UrlParams.reader(ApiIdInput)
const listKeysQuery = Effect.flatMap(
  UrlParams.reader(V1Keys.ListKeysQuery),
  v1(V1Keys.ListKeysQuery, V1Keys.toListKeys)
)
const deleteKeysBody = v1(V1Keys.DeleteKeysRequest, ({ apiId }) => ({ apiId }))

/** Handlers of the api routes. */
export const ApisLive = HttpApiBuilder.group(Api, "apis", (handlers) =>
  Effect.gen(function*() {
    const apis = yield* Apis
    const keys = yield* Keys
    return handlers
      .handleRaw("createApi", ({ request }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const body = yield* JsonBody.readObject(request)
          return yield* mapDomain(apis.create(principal, body, IdempotencyKey.read(request.headers)))
        }))
      .handle("getApi", () =>
        Effect.gen(function*() {
          return yield* apis.get(yield* CurrentPrincipal, yield* getApiQuery)
        }).pipe(mapDomain))
      .handle("listKeys", () =>
        Effect.gen(function*() {
          const page = yield* keys.list(yield* CurrentPrincipal, yield* listKeysQuery)
          return wire({
            keys: page.keys.map(V1Keys.fromKey),
            ...(page.cursor !== undefined ? { cursor: page.cursor } : {}),
            total: page.total
          })
        }).pipe(mapDomain))
      .handleRaw("deleteApi", ({ request }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          return yield* mapDomain(apis.delete(principal, yield* JsonBody.readObject(request)))
        }))
      .handleRaw("deleteKeys", ({ request }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const body = yield* JsonBody.readObject(request)
          return yield* mapDomain(Effect.flatMap(deleteKeysBody(body), (input) => apis.deleteKeys(principal, input)))
        }))
      .handle("listApis", () => Effect.flatMap(CurrentPrincipal, (principal) => mapDomain(apis.list(principal))))
  }))

const getKeyQuery = Effect.flatMap(
  UrlParams.reader(V1Keys.GetKeyQuery),
  v1(V1Keys.GetKeyQuery, ({ keyId }) => ({ keyId }))
)
const updateKeyBody = v1(V1Keys.UpdateKeyRequest, V1Keys.toUpdateKey)
const deleteKeyBody = v1(V1Keys.DeleteKeyRequest, ({ keyId }) => ({ keyId }))
const whoamiBody = v1(V1Keys.WhoamiRequest, (request) => request)

const keyUsageQuery = Effect.flatMap(UrlParams.reader(V1KeyUsage.KeyUsageQuery), v1(V1KeyUsage.KeyUsageQuery, (q) => q))

/** Handlers of the key routes. */
export const KeysLive = HttpApiBuilder.group(Api, "keys", (handlers) =>
  Effect.gen(function*() {
    const keys = yield* Keys
    const apis = yield* Apis
    const routes = yield* HotRoutes
    return handlers
      .handleRaw("createKey", ({ request }) =>
        withBody(request, (principal, body) =>
          routes.createKey(principal, body, IdempotencyKey.read(request.headers))).pipe(Effect.map(wire)))
      .handleRaw("verifyKey", ({ request }) =>
        Effect.gen(function*() {
          const { requestId } = yield* RequestContext.current
          return yield* withBody(request, (principal, body) =>
            routes.verifyKey(principal, body, requestId))
        }).pipe(Effect.map(wire)))
      .handle("getKey", () =>
        Effect.gen(function*() {
          return wire(V1Keys.fromKey(yield* keys.get(yield* CurrentPrincipal, yield* getKeyQuery)))
        }).pipe(mapDomain))
      .handle("getKeyVerifications", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const query = yield* keyUsageQuery
          const window = {
            ...(query.start !== undefined ? { start: query.start } : {}),
            ...(query.end !== undefined ? { end: query.end } : {}),
            groupBy: ["day"]
          }
          // A key's api; or every api the caller may read, for an ownerId's keys.
          const asked = query.keyId !== undefined
            ? [{ apiId: (yield* keys.get(principal, { keyId: query.keyId })).apiId, keyId: [query.keyId] }]
            : (yield* apis.list(principal)).apis.map(({ apiId }) => ({ apiId, externalId: query.ownerId }))
          const series = yield* Effect.forEach(asked, (filter) =>
            routes.getVerifications(principal, { ...filter, ...window }))
          return wire(V1KeyUsage.toKeyUsage(series as ReadonlyArray<ReadonlyArray<Record<string, unknown>>>))
        }).pipe(mapDomain))
      .handleRaw("whoami", ({ request }) =>
        withBody(request, (principal, body) =>
          Effect.flatMap(whoamiBody(body), (input) =>
            keys.whoami(principal, input))).pipe(
            Effect.map((view) =>
              wire(V1Keys.toWhoami(view))
            )
          ))
      .handleRaw("updateKey", ({ request }) =>
        withBody(request, (principal, body) =>
          Effect.flatMap(updateKeyBody(body), (input) =>
            Effect.as(keys.update(principal, input), {}))))
      .handleRaw("updateRemaining", ({ request }) =>
        withBody(request, (principal, body) =>
          routes.updateRemaining(principal, body, IdempotencyKey.read(request.headers))).pipe(Effect.map(wire)))
      .handleRaw("addPermissions", ({ request }) =>
        withBody(request, (principal, body) =>
          keys.changePermissions(principal, "add", body)).pipe(Effect.map(connected)))
      .handleRaw("setPermissions", ({ request }) =>
        withBody(request, (principal, body) =>
          keys.changePermissions(principal, "set", body)).pipe(Effect.map(connected)))
      .handleRaw("removePermissions", ({ request }) =>
        withBody(request, (principal, body) =>
          Effect.as(keys.changePermissions(principal, "remove", body), {})))
      .handleRaw("addRoles", ({ request }) =>
        withBody(request, (principal, body) =>
          keys.changeRoles(principal, "add", body)).pipe(Effect.map(connected)))
      .handleRaw("setRoles", ({ request }) =>
        withBody(request, (principal, body) =>
          keys.changeRoles(principal, "set", body)).pipe(Effect.map(connected)))
      .handleRaw("removeRoles", ({ request }) =>
        withBody(request, (principal, body) =>
          Effect.as(keys.changeRoles(principal, "remove", body), {})))
      .handleRaw("deleteKey", ({ request }) =>
        withBody(request, (principal, body) =>
          Effect.flatMap(deleteKeyBody(body), (input) =>
            keys.delete(principal, input))))
  }))

const getIdentityQuery = Effect.flatMap(
  UrlParams.reader(V1Identities.GetIdentityQuery),
  v1(V1Identities.GetIdentityQuery, (query) => query)
)
const listIdentitiesQuery = Effect.flatMap(
  UrlParams.reader(V1Identities.ListIdentitiesQuery),
  v1(V1Identities.ListIdentitiesQuery, (query) => query)
)
const createIdentityBody = v1(V1Identities.CreateIdentityRequest, V1Identities.toCreateIdentity)
const updateIdentityBody = v1(V1Identities.UpdateIdentityRequest, V1Identities.toUpdateIdentity)
const deleteIdentityBody = v1(V1Identities.DeleteIdentityRequest, (request) => request)

/** Handlers of the identity routes. */
export const IdentitiesLive = HttpApiBuilder.group(Api, "identities", (handlers) =>
  Effect.gen(function*() {
    const identities = yield* Identities
    const withBody = <A, B>(
      request: HttpServerRequest.HttpServerRequest,
      read: (body: unknown) => Effect.Effect<A, DomainError>,
      act: (principal: Principal, input: A) => Effect.Effect<B, DomainError>
    ) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const body = yield* JsonBody.readObject(request)
        return yield* mapDomain(Effect.flatMap(read(body), (input) => act(principal, input)))
      })
    return handlers
      .handleRaw("createIdentity", ({ request }) =>
        withBody(request, createIdentityBody, (principal, input) =>
          Effect.map(identities.create(principal, input), (identity) => ({ identityId: identity.id }))))
      .handle("getIdentity", () =>
        Effect.gen(function*() {
          const identity = yield* identities.get(yield* CurrentPrincipal, yield* getIdentityQuery)
          return wire(V1Identities.fromIdentity(identity))
        }).pipe(mapDomain))
      .handle("listIdentities", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const { environment, ...query } = yield* listIdentitiesQuery
          // Every identity is in the environment "default" (v1 sets no other).
          if (environment !== undefined && environment !== "default") {
            yield* identities.list(principal, {})
            return wire({ identities: [], total: 0 })
          }
          return wire(V1Identities.fromIdentityPage(yield* identities.list(principal, query)))
        }).pipe(mapDomain))
      .handleRaw("updateIdentity", ({ request }) =>
        withBody(request, updateIdentityBody, (principal, input) =>
          Effect.map(identities.update(principal, input), (identity) =>
            wire(V1Identities.fromIdentity(identity)))))
      .handleRaw("deleteIdentity", ({ request }) =>
        withBody(request, deleteIdentityBody, (principal, input) =>
          identities.delete(principal, input)))
  }))

const getPermissionQuery = UrlParams.reader(PermissionIdInput)
const getRoleQuery = UrlParams.reader(RoleIdInput)

/** Handlers of the permission and role routes. */
export const PermissionsLive = HttpApiBuilder.group(Api, "permissions", (handlers) =>
  Effect.gen(function*() {
    const rbac = yield* Rbac
    return handlers
      .handleRaw("createPermission", ({ request }) =>
        withBody(request, (principal, body) =>
          Effect.map(rbac.createPermission(principal, body), (permission) => ({ permissionId: permission.id }))))
      .handle("getPermission", () =>
        Effect.gen(function*() {
          return yield* rbac.getPermission(yield* CurrentPrincipal, yield* getPermissionQuery)
        }).pipe(mapDomain))
      .handle("listPermissions", () =>
        Effect.flatMap(CurrentPrincipal, (principal) =>
          Effect.map(rbac.listPermissions(principal), wire)).pipe(
            mapDomain
          ))
      .handleRaw("deletePermission", ({ request }) =>
        withBody(request, (principal, body) =>
          rbac.deletePermission(principal, body)))
      .handleRaw("createRole", ({ request }) =>
        withBody(request, (principal, body) =>
          Effect.map(rbac.createRole(principal, body), (role) => ({ roleId: role.id }))))
      .handle("getRole", () =>
        Effect.gen(function*() {
          return yield* rbac.getRole(yield* CurrentPrincipal, yield* getRoleQuery)
        }).pipe(mapDomain))
      .handle("listRoles", () =>
        Effect.flatMap(CurrentPrincipal, (principal) =>
          Effect.map(rbac.listRoles(principal), wire)).pipe(mapDomain))
      .handleRaw("deleteRole", ({ request }) =>
        withBody(request, (principal, body) =>
          rbac.deleteRole(principal, body)))
  }))

const migrateKeysBody = v1(V1Migrations.MigrateKeysRequest, V1Migrations.toMigrateKeys)

/** Handlers of the routes that bring keys from elsewhere. */
export const MigrationsLive = HttpApiBuilder.group(Api, "migrations", (handlers) =>
  Effect.gen(function*() {
    const keys = yield* Keys
    return handlers.handleRaw("createKeys", ({ request }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const body = yield* JsonBody.read(request)
        return yield* mapDomain(
          Effect.flatMap(
            migrateKeysBody(body),
            (input) => Effect.map(keys.migrate(principal, input), ({ keyIds }) => ({ keyIds }))
          )
        )
      }))
  }))

/** Handlers of the routes about the calling key. */
export const AuthLive = HttpApiBuilder.group(
  Api,
  "auth",
  (handlers) =>
    handlers.handle("whoami", () =>
      Effect.map(CurrentPrincipal, (principal) => ({
        workspaceId: principal.workspaceId,
        rootKeyId: principal.rootKeyId,
        permissions: principal.permissions
      })))
)

/** Handler of `liveness`: answers while the server runs, naming where its limits live. */
export const LivenessLive = HttpApiBuilder.group(
  Api,
  "liveness",
  (handlers) =>
    handlers.handle("liveness", () =>
      Effect.map(Windows.Windows, (windows) => ({
        status: "ok",
        services: {
          metrics: "none",
          logger: "stderr",
          ratelimit: windows.shared ? "shared" : "local",
          usagelimit: "keymeter"
        }
      })))
)
