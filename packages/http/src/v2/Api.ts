/**
 * The /v2 contract: Unkey v2's routes as `@unkey/api@2.5.1` calls them (every route a POST of a
 * JSON body), answering `{meta: {requestId}, data}` (and `pagination` on lists) and failing with
 * Unkey v2's problem body. No handlers live here.
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import { ApiIdInput, CreateApiInput } from "@keymeter/core/Api"
import type { Principal } from "@keymeter/core/Permission"
import { SqlRequest } from "@keymeter/sql/SqlAnalytics"
import * as Context from "effect/Context"
import * as Schema from "effect/Schema"
import { EnvelopedApi } from "../internal/EnvelopedApi.js"
import { ProblemResponses, Responses } from "./Errors.js"
import * as Identities from "./Identities.js"
import * as Keys from "./Keys.js"
import * as Ratelimit from "./Ratelimit.js"
import * as Rbac from "./Rbac.js"

/** The authenticated caller of the current /v2 request. */
export class CurrentPrincipalV2 extends Context.Tag("@keymeter/http/CurrentPrincipalV2")<
  CurrentPrincipalV2,
  Principal
>() {}

/** `Authorization: Bearer <root key>` on every /v2 route, its failures in v2's body. */
export class AuthorizationV2 extends HttpApiMiddleware.Tag<AuthorizationV2>()("@keymeter/http/AuthorizationV2", {
  failure: Schema.Union(Responses[401], Responses[403], Responses[429], Responses[503]),
  provides: CurrentPrincipalV2,
  security: {
    rootKey: HttpApiSecurity.bearer.pipe(
      HttpApiSecurity.annotate(OpenApi.Description, "A root key: `Authorization: Bearer sk_...`")
    )
  }
}) {}

const Meta = Schema.Struct({ requestId: Schema.String }).annotations({ identifier: "V2Meta" })

/** A /v2 answer: `{meta, data}`. */
const answer = <S extends Schema.Schema.Any>(data: S) => Schema.Struct({ meta: Meta, data })

/** A /v2 page: `{meta, data: [...], pagination: {cursor?, hasMore}}` (cursor only when more follow). */
const page = <S extends Schema.Schema.Any>(item: S) =>
  Schema.Struct({
    meta: Meta,
    data: Schema.Array(item),
    pagination: Schema.Struct({ cursor: Schema.optional(Schema.String), hasMore: Schema.Boolean })
  })

const Empty = Schema.Struct({})

/** The header that makes a write safe to retry (a keymeter extension on v2). */
const IdempotencyHeaders = Schema.Struct({
  "idempotency-key": Schema.optional(Schema.String.annotations({
    description: "A keymeter extension: a repeat with the same key and body within 24 hours answers what the " +
      "first answered and changes nothing."
  }))
})

/** A /v2 route: a POST of a JSON body, which may also be too large (413) or of another media type (415). */
const route = <const Name extends string>(name: Name, payload: Schema.Schema.Any, permission: string) =>
  HttpApiEndpoint.post(name, `/${name}` as `/${string}`)
    .setPayload(payload as Schema.Schema<unknown, unknown>)
    .addError(Responses[413])
    .addError(Responses[415])
    .annotate(OpenApi.Description, `Permission: ${permission}.`)

/** Key routes. */
export class KeysGroup extends HttpApiGroup.make("v2keys")
  .add(
    route("keys.createKey", Keys.CreateKeyRequest, "api.*.create_key or api.<apiId>.create_key")
      .setHeaders(IdempotencyHeaders)
      .addSuccess(answer(Keys.CreatedKey))
      .addError(Responses[409])
      .addError(Responses[422])
      .annotate(OpenApi.Summary, "Create a key; its secret is in this answer only")
  )
  .add(
    route(
      "keys.verifyKey",
      Keys.VerifyKeyRequest,
      "api.*.verify_key or api.<apiId>.verify_key of the key's api (a key of another api answers NOT_FOUND)"
    )
      .addSuccess(answer(Keys.VerifyKeyResponseData))
      .annotate(OpenApi.Summary, "Verify a key: one of its codes, always 200 for a well-formed request")
  )
  .add(
    route("keys.getKey", Keys.GetKeyRequest, "api.*.read_key or api.<apiId>.read_key")
      .addSuccess(answer(Keys.KeyResponseData))
      .annotate(OpenApi.Summary, "Read a key (never its secret)")
  )
  .add(
    route("keys.whoami", Keys.WhoamiRequest, "api.*.read_key or api.<apiId>.read_key")
      .addSuccess(answer(Keys.KeyResponseData))
      .annotate(OpenApi.Summary, "Read the key of a secret")
  )
  .add(
    route("keys.updateKey", Keys.UpdateKeyRequest, "api.*.update_key or api.<apiId>.update_key")
      .addSuccess(answer(Empty))
      .annotate(OpenApi.Summary, "Change a key's fields; null clears one")
  )
  .add(
    route("keys.updateCredits", Keys.UpdateCreditsRequest, "api.*.update_key or api.<apiId>.update_key")
      .setHeaders(IdempotencyHeaders)
      .addSuccess(answer(Keys.KeyResponseData.fields.credits.from))
      .addError(Responses[409])
      .addError(Responses[422])
      .annotate(OpenApi.Summary, "Set, increment or decrement (not below 0) a key's credits; set null: unlimited")
  )
  .add(
    route("keys.rerollKey", Keys.RerollKeyRequest, "api.*.create_key or api.<apiId>.create_key")
      .addSuccess(answer(Keys.CreatedKey))
      .annotate(OpenApi.Summary, "A new key with the old one's configuration; the old one expires after expiration ms")
  )
  .add(
    route("keys.deleteKey", Keys.DeleteKeyRequest, "api.*.delete_key or api.<apiId>.delete_key")
      .addSuccess(answer(Empty))
      .annotate(OpenApi.Summary, "Delete a key; it verifies as NOT_FOUND from the next call")
  )
  .add(
    route(
      "keys.addPermissions",
      Keys.KeyPermissionsRequest,
      "api.*.update_key, api.<apiId>.update_key or rbac.*.add_permission_to_key (and rbac.*.create_permission " +
        "for a slug the workspace has not)"
    ).addSuccess(answer(Schema.Array(Rbac.Permission)))
      .annotate(OpenApi.Summary, "Give a key permissions; answers all it holds itself")
  )
  .add(
    route(
      "keys.removePermissions",
      Keys.KeyPermissionsRequest,
      "api.*.update_key, api.<apiId>.update_key or rbac.*.remove_permission_from_key"
    ).addSuccess(answer(Schema.Array(Rbac.Permission)))
      .annotate(OpenApi.Summary, "Take permissions (slugs or ids) from a key; answers those it still holds")
  )
  .add(
    route(
      "keys.setPermissions",
      Keys.KeyPermissionsRequest,
      "api.*.update_key or api.<apiId>.update_key (or both rbac.*.add_permission_to_key and " +
        "rbac.*.remove_permission_from_key)"
    ).addSuccess(answer(Schema.Array(Rbac.Permission)))
      .annotate(OpenApi.Summary, "Replace a key's permissions; answers all it holds itself")
  )
  .add(
    route("keys.addRoles", Keys.KeyRolesRequest, "api.*.update_key, api.<apiId>.update_key or rbac.*.add_role_to_key")
      .addSuccess(answer(Schema.Array(Rbac.Role)))
      .annotate(OpenApi.Summary, "Give a key roles (names or ids, which must exist); answers all it holds")
  )
  .add(
    route(
      "keys.removeRoles",
      Keys.KeyRolesRequest,
      "api.*.update_key, api.<apiId>.update_key or rbac.*.remove_role_from_key"
    ).addSuccess(answer(Schema.Array(Rbac.Role)))
      .annotate(OpenApi.Summary, "Take roles from a key; answers those it still holds")
  )
  .add(
    route(
      "keys.setRoles",
      Keys.KeyRolesRequest,
      "api.*.update_key or api.<apiId>.update_key (or both rbac.*.add_role_to_key and rbac.*.remove_role_from_key)"
    ).addSuccess(answer(Schema.Array(Rbac.Role)))
      .annotate(OpenApi.Summary, "Replace a key's roles; answers all it holds")
  )
  .add(
    route("keys.migrateKeys", Keys.MigrateKeysRequest, "api.*.create_key or api.<apiId>.create_key")
      .addSuccess(answer(Keys.MigrateKeysResponseData))
      .annotate(
        OpenApi.Summary,
        "Import 1 to 1,000 keys by their SHA-256; a hash a key has already is listed in failed"
      )
  )
  .annotate(OpenApi.Title, "v2 keys")
{}

/** Api routes. */
export class ApisGroup extends HttpApiGroup.make("v2apis")
  .add(
    route("apis.createApi", CreateApiInput, "api.*.create_api")
      .setHeaders(IdempotencyHeaders)
      .addSuccess(answer(Schema.Struct({ apiId: Schema.String })))
      .addError(Responses[409])
      .addError(Responses[422])
      .annotate(OpenApi.Summary, "Create an api")
  )
  .add(
    route("apis.getApi", ApiIdInput, "api.*.read_api or api.<apiId>.read_api")
      .addSuccess(answer(Schema.Struct({ id: Schema.String, name: Schema.String })))
      .annotate(OpenApi.Summary, "Read an api")
  )
  .add(
    route(
      "apis.listKeys",
      Keys.ListKeysRequest,
      "api.*.read_key or api.<apiId>.read_key, and api.*.read_api or api.<apiId>.read_api"
    )
      .addSuccess(page(Keys.KeyResponseData))
      .annotate(OpenApi.Summary, "List an api's keys in creation order, a page at a time")
  )
  .add(
    route("apis.deleteApi", ApiIdInput, "api.*.delete_api or api.<apiId>.delete_api")
      .addSuccess(answer(Empty))
      .annotate(OpenApi.Summary, "Delete an api and its keys; its verifications stay counted")
  )
  .annotate(OpenApi.Title, "v2 apis")
{}

/** Identity routes. */
export class IdentitiesGroup extends HttpApiGroup.make("v2identities")
  .add(
    route("identities.createIdentity", Identities.CreateIdentityRequest, "identity.*.create_identity")
      .addSuccess(answer(Schema.Struct({ identityId: Schema.String })))
      .addError(Responses[409])
      .annotate(OpenApi.Summary, "Create an identity; an externalId the workspace has already is a 409")
  )
  .add(
    route("identities.getIdentity", Identities.IdentityRequest, "identity.*.read_identity")
      .addSuccess(answer(Keys.Identity))
      .annotate(OpenApi.Summary, "Read an identity by id or externalId")
  )
  .add(
    route("identities.listIdentities", Identities.ListIdentitiesRequest, "identity.*.read_identity")
      .addSuccess(page(Keys.Identity))
      .annotate(OpenApi.Summary, "List the workspace's identities in creation order, a page at a time")
  )
  .add(
    route("identities.updateIdentity", Identities.UpdateIdentityRequest, "identity.*.update_identity")
      .addSuccess(answer(Keys.Identity))
      .annotate(OpenApi.Summary, "Replace an identity's meta or shared limits")
  )
  .add(
    route("identities.deleteIdentity", Identities.IdentityRequest, "identity.*.delete_identity")
      .addSuccess(Schema.Struct({ meta: Meta }))
      .addError(ProblemResponses[400])
      .addError(ProblemResponses[401])
      .addError(ProblemResponses[403])
      .addError(ProblemResponses[404])
      .addError(ProblemResponses[413])
      .addError(ProblemResponses[415])
      .addError(ProblemResponses[429])
      .addError(ProblemResponses[500])
      .addError(ProblemResponses[503])
      .annotate(OpenApi.Summary, "Delete an identity; its keys stay, without it (errors as application/problem+json)")
  )
  .annotate(OpenApi.Title, "v2 identities")
{}

/** Permission and role routes. */
export class PermissionsGroup extends HttpApiGroup.make("v2permissions")
  .add(
    route("permissions.createPermission", Rbac.CreatePermissionRequest, "rbac.*.create_permission")
      .addSuccess(answer(Schema.Struct({ permissionId: Schema.String })))
      .addError(Responses[409])
      .annotate(OpenApi.Summary, "Create a permission; a name or slug taken is a 409")
  )
  .add(
    route("permissions.getPermission", Rbac.PermissionRequest, "rbac.*.read_permission")
      .addSuccess(answer(Rbac.Permission))
      .annotate(OpenApi.Summary, "Read a permission by id or slug")
  )
  .add(
    route("permissions.listPermissions", Rbac.ListRequest, "rbac.*.read_permission")
      .addSuccess(page(Rbac.Permission))
      .annotate(OpenApi.Summary, "List the workspace's permissions by id, a page at a time")
  )
  .add(
    route("permissions.deletePermission", Rbac.PermissionRequest, "rbac.*.delete_permission")
      .addSuccess(answer(Empty))
      .annotate(OpenApi.Summary, "Delete a permission; every key and role holding it loses it at once")
  )
  .add(
    route(
      "permissions.createRole",
      Rbac.CreateRoleRequest,
      "rbac.*.create_role (with permissions, also rbac.*.add_permission_to_role; for a slug the workspace has " +
        "not, rbac.*.create_permission)"
    )
      .addSuccess(answer(Schema.Struct({ roleId: Schema.String })))
      .addError(Responses[409])
      .annotate(OpenApi.Summary, "Create a role with its permissions; a name taken is a 409")
  )
  .add(
    route("permissions.getRole", Rbac.RoleRequest, "rbac.*.read_role")
      .addSuccess(answer(Rbac.Role))
      .annotate(OpenApi.Summary, "Read a role by id or name, with its permissions")
  )
  .add(
    route("permissions.listRoles", Rbac.ListRequest, "rbac.*.read_role")
      .addSuccess(page(Rbac.Role))
      .annotate(OpenApi.Summary, "List the workspace's roles by id, a page at a time")
  )
  .add(
    route("permissions.deleteRole", Rbac.RoleRequest, "rbac.*.delete_role")
      .addSuccess(answer(Empty))
      .annotate(OpenApi.Summary, "Delete a role; every key holding it loses it at once")
  )
  .annotate(OpenApi.Title, "v2 permissions")
{}

/** Rate-limit routes. */
export class RatelimitGroup extends HttpApiGroup.make("v2ratelimit")
  .add(
    route(
      "ratelimit.limit",
      Ratelimit.LimitRequest,
      "ratelimit.*.limit or ratelimit.<namespaceId>.limit (a namespace named for the first time is made, which " +
        "needs ratelimit.*.limit)"
    )
      .addSuccess(answer(Ratelimit.LimitResponseData))
      .annotate(OpenApi.Summary, "Take from an identifier's window, applying the override that resolves")
  )
  .add(
    route("ratelimit.multiLimit", Ratelimit.MultiLimitRequest, "as ratelimit.limit, for every namespace named")
      .addSuccess(answer(Ratelimit.MultiLimitResponseData))
      .annotate(
        OpenApi.Summary,
        "Several limits in one call, each independent; ?atomic=true (keymeter's) takes all or none"
      )
  )
  .add(
    route(
      "ratelimit.setOverride",
      Ratelimit.SetOverrideRequest,
      "ratelimit.*.set_override or ratelimit.<namespaceId>.set_override"
    )
      .addSuccess(answer(Schema.Struct({ overrideId: Schema.String })))
      .annotate(OpenApi.Summary, "Create or overwrite the override of an identifier (or * pattern) in a namespace")
  )
  .add(
    route(
      "ratelimit.getOverride",
      Ratelimit.OverrideRequest,
      "ratelimit.*.read_override or ratelimit.<namespaceId>.read_override"
    )
      .addSuccess(answer(Ratelimit.RatelimitOverride))
      .annotate(OpenApi.Summary, "Read the override of exactly this identifier (or pattern)")
  )
  .add(
    route(
      "ratelimit.listOverrides",
      Ratelimit.ListOverridesRequest,
      "ratelimit.*.read_override or ratelimit.<namespaceId>.read_override"
    )
      .addSuccess(page(Ratelimit.RatelimitOverride))
      .annotate(OpenApi.Summary, "List a namespace's overrides in creation order, a page at a time")
  )
  .add(
    route(
      "ratelimit.deleteOverride",
      Ratelimit.OverrideRequest,
      "ratelimit.*.delete_override or ratelimit.<namespaceId>.delete_override"
    )
      .addSuccess(answer(Empty))
      .annotate(OpenApi.Summary, "Delete an override; it never applies again")
  )
  .annotate(OpenApi.Title, "v2 ratelimit")
{}

/** An answer's rows: one object per row, keyed by column name. */
const Rows = Schema.Array(Schema.Record({ key: Schema.String, value: Schema.Unknown }))

/** SQL analytics routes. */
export class AnalyticsGroup extends HttpApiGroup.make("v2analytics")
  .add(
    route(
      "analytics.getVerifications",
      SqlRequest,
      "api.*.read_api or api.*.read_analytics (all apis), or api.<apiId>.read_api / api.<apiId>.read_analytics " +
        "(the query sees those apis' rows only)"
    )
      .addSuccess(answer(Rows))
      .addError(Responses[422])
      .annotate(
        OpenApi.Summary,
        "Run a SQL SELECT over the workspace's verifications (key_verifications_v1 and its per-minute, hour, day " +
          "and month rollups)"
      )
  )
  .add(
    route(
      "analytics.getRatelimits",
      SqlRequest,
      "ratelimit.*.read_analytics (all namespaces), or ratelimit.<namespaceId>.read_analytics (those namespaces' " +
        "rows only)"
    )
      .addSuccess(answer(Rows))
      .addError(Responses[422])
      .annotate(
        OpenApi.Summary,
        "Run a SQL SELECT over the workspace's rate-limit decisions (ratelimits_v1 and its rollups)"
      )
  )
  .annotate(OpenApi.Title, "v2 analytics")
{}

/**
 * The /v2 routes, each authenticated and answering v2's shared errors. They read their bodies
 * themselves, so the api's decode error (v1's envelope) is never answered here.
 */
export const V2 = EnvelopedApi
  .add(KeysGroup)
  .add(ApisGroup)
  .add(IdentitiesGroup)
  .add(PermissionsGroup)
  .add(RatelimitGroup)
  .add(AnalyticsGroup)
  .addError(Responses[400])
  .addError(Responses[401])
  .addError(Responses[403])
  .addError(Responses[404])
  .addError(Responses[429])
  .addError(Responses[500])
  .addError(Responses[503])
  .middleware(AuthorizationV2)
  .prefix("/v2")
