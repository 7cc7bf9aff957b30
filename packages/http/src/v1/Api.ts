/**
 * The /v1 contract, Unkey v1's dialect: routes, parameters, bodies, answers and errors. No
 * handlers live here, so clients and the OpenAPI document derive from it alone.
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import { ApiIdInput, ApiList, ApiView, CreateApiInput } from "@keymeter/core/Api"
import { Datapoint } from "@keymeter/core/Datapoint"
import { LimitInput, LimitResponse } from "@keymeter/core/Limit"
import {
  DeleteOverrideInput,
  GetOverrideInput,
  ListOverridesInput,
  NamespaceList,
  OverridePage,
  OverrideView,
  SetOverrideInput
} from "@keymeter/core/Override"
import type { Principal } from "@keymeter/core/Permission"
import { RatelimitDatapoint, RatelimitQueryInput } from "@keymeter/core/RatelimitQuery"
import {
  CreatePermissionInput,
  CreateRoleInput,
  PermissionIdInput,
  PermissionView,
  RoleIdInput,
  RoleView
} from "@keymeter/core/Role"
import { RecordVerificationsInput } from "@keymeter/core/Verification"
import { VerificationQueryInput } from "@keymeter/core/VerificationQuery"
import * as Context from "effect/Context"
import * as Schema from "effect/Schema"
import { Responses } from "../Errors.js"
import { EnvelopedApi } from "../internal/EnvelopedApi.js"
import * as UrlParams from "../internal/UrlParams.js"
import { IdempotencyHeaders, keyedPost, post } from "./Endpoint.js"
import * as V1Identities from "./Identities.js"
import * as V1Keys from "./Keys.js"
import { GetKeyParams, KeysGroup, KeyUsageParams, ListKeysParams } from "./KeysGroup.js"
import * as V1Migrations from "./Migrations.js"

/** The authenticated caller of the current request. */
export class CurrentPrincipal extends Context.Tag("@keymeter/http/CurrentPrincipal")<CurrentPrincipal, Principal>() {}

/** `Authorization: Bearer <root key>` on every /v1 route. */
export class Authorization extends HttpApiMiddleware.Tag<Authorization>()("@keymeter/http/Authorization", {
  failure: Schema.Union(Responses[401], Responses[403], Responses[503]),
  provides: CurrentPrincipal,
  security: {
    rootKey: HttpApiSecurity.bearer.pipe(
      HttpApiSecurity.annotate(OpenApi.Description, "A root key: `Authorization: Bearer sk_...`")
    )
  }
}) {}

/** Query parameters of `GET /v1/analytics.getVerifications`. */
export const GetVerificationsParams = UrlParams.schema(VerificationQueryInput)

/** Query parameters of `GET /v1/analytics.getRatelimits`. */
export const GetRatelimitsParams = UrlParams.schema(RatelimitQueryInput)

/** Query parameters of `GET /v1/ratelimits.getOverride`. */
export const GetOverrideParams = UrlParams.schema(GetOverrideInput)

/** Query parameters of `GET /v1/ratelimits.listOverrides`. */
export const ListOverridesParams = UrlParams.schema(ListOverridesInput)

// The key routes and the write routes' shared parts have modules of their own; here for `V1Api` too.
export { GetKeyParams, IdempotencyHeaders, KeysGroup, KeyUsageParams, ListKeysParams }

/** Analytics routes. */
export class AnalyticsGroup extends HttpApiGroup.make("analytics")
  .add(
    HttpApiEndpoint.get("getVerifications", "/analytics.getVerifications")
      .setUrlParams(GetVerificationsParams)
      .addSuccess(Schema.Array(Datapoint))
      .annotate(OpenApi.Summary, "Verification counts, filtered, grouped, ordered and limited")
      .annotate(OpenApi.Description, "Permission: api.*.read_api or api.<apiId>.read_api.")
  )
  .add(
    HttpApiEndpoint.get("getRatelimits", "/analytics.getRatelimits")
      .setUrlParams(GetRatelimitsParams)
      .addSuccess(Schema.Array(RatelimitDatapoint))
      .annotate(OpenApi.Summary, "Rate-limit decision counts (passed, blocked), filtered, grouped, ordered and limited")
      .annotate(
        OpenApi.Description,
        "A keymeter extension, shaped like getVerifications: every decision of ratelimits.limit, multiLimit " +
          "and the limits of keys.verifyKey, in one namespace. identifier may be repeated (not comma-joined: " +
          "an identifier may hold a comma). Permission: ratelimit.*.read_analytics or " +
          "ratelimit.<namespaceId>.read_analytics."
      )
  )
  .add(
    keyedPost("recordVerifications", "/analytics.recordVerifications")
      .setPayload(RecordVerificationsInput)
      .addSuccess(Schema.Struct({ recorded: Schema.Number }))
      .annotate(OpenApi.Summary, "Record 1 to 10,000 verifications, all or nothing")
      .annotate(
        OpenApi.Description,
        "Permission: api.*.record_verifications or api.<apiId>.record_verifications for every api in the batch."
      )
  )
{}

/** Rate-limit routes. */
export class RatelimitsGroup extends HttpApiGroup.make("ratelimits")
  .add(
    keyedPost("setOverride", "/ratelimits.setOverride")
      .setPayload(SetOverrideInput)
      .addSuccess(Schema.Struct({ overrideId: Schema.String }))
      .annotate(OpenApi.Summary, "Create or overwrite the override of an identifier (or * pattern) in a namespace")
      .annotate(
        OpenApi.Description,
        "Permission: ratelimit.*.set_override or ratelimit.<namespaceId>.set_override; creating a namespace by " +
          "name needs ratelimit.*.set_override."
      )
  )
  .add(
    HttpApiEndpoint.get("getOverride", "/ratelimits.getOverride")
      .setUrlParams(GetOverrideParams)
      .addSuccess(OverrideView)
      .annotate(OpenApi.Summary, "Read an override, or with resolve=true the one that applies to an identifier")
      .annotate(OpenApi.Description, "Permission: ratelimit.*.read_override or ratelimit.<namespaceId>.read_override.")
  )
  .add(
    HttpApiEndpoint.get("listOverrides", "/ratelimits.listOverrides")
      .setUrlParams(ListOverridesParams)
      .addSuccess(OverridePage)
      .annotate(OpenApi.Summary, "List a namespace's overrides in creation order, a page at a time")
      .annotate(
        OpenApi.Description,
        "Permission: ratelimit.*.read_override or ratelimit.<namespaceId>.read_override. Keyset pages: an " +
          "override never shows twice or goes missing while others are added or deleted between pages."
      )
  )
  .add(
    post("deleteOverride", "/ratelimits.deleteOverride")
      .setPayload(DeleteOverrideInput)
      .addSuccess(Schema.Struct({}))
      .annotate(OpenApi.Summary, "Delete an override; it never applies again")
      .annotate(
        OpenApi.Description,
        "Permission: ratelimit.*.delete_override or ratelimit.<namespaceId>.delete_override."
      )
  )
  .add(
    HttpApiEndpoint.get("listNamespaces", "/ratelimits.listNamespaces")
      .addSuccess(NamespaceList)
      .annotate(OpenApi.Summary, "List the namespaces whose overrides this key may read")
      .annotate(
        OpenApi.Description,
        "The workspace's namespaces for which the key holds ratelimit.*.read_override or " +
          "ratelimit.<namespaceId>.read_override, by name."
      )
  )
  .add(
    post("limit", "/ratelimits.limit")
      .setPayload(LimitInput)
      .addSuccess(LimitResponse)
      .annotate(OpenApi.Summary, "Take from an identifier's sliding window, applying the override that resolves")
      .annotate(
        OpenApi.Description,
        "Permission: ratelimit.*.limit or ratelimit.<namespaceId>.limit; a namespace used for the first time is " +
          "created, which needs ratelimit.*.limit."
      )
  )
{}

/** Query parameters of `GET /v1/permissions.getPermission` and `getRole`. */
export const GetPermissionParams = UrlParams.schema(PermissionIdInput)
export const GetRoleParams = UrlParams.schema(RoleIdInput)

/** Permission and role routes (Unkey's RBAC). */
export class PermissionsGroup extends HttpApiGroup.make("permissions")
  .add(
    post("createPermission", "/permissions.createPermission")
      .setPayload(CreatePermissionInput)
      .addSuccess(Schema.Struct({ permissionId: Schema.String }))
      .addError(Responses[409])
      .annotate(OpenApi.Summary, "Create a permission; its slug (the name unless given) is what keys hold")
      .annotate(OpenApi.Description, "Permission: rbac.*.create_permission. A name or slug taken is a 409 CONFLICT.")
  )
  .add(
    HttpApiEndpoint.get("getPermission", "/permissions.getPermission")
      .setUrlParams(GetPermissionParams)
      .addSuccess(PermissionView)
      .annotate(OpenApi.Summary, "Read a permission")
      .annotate(OpenApi.Description, "Permission: rbac.*.read_permission.")
  )
  .add(
    HttpApiEndpoint.get("listPermissions", "/permissions.listPermissions")
      .addSuccess(Schema.Array(PermissionView))
      .annotate(OpenApi.Summary, "List the workspace's permissions")
      .annotate(OpenApi.Description, "Permission: rbac.*.read_permission.")
  )
  .add(
    post("deletePermission", "/permissions.deletePermission")
      .setPayload(PermissionIdInput)
      .addSuccess(Schema.Struct({}))
      .annotate(OpenApi.Summary, "Delete a permission; every key and role holding it loses it at once")
      .annotate(OpenApi.Description, "Permission: rbac.*.delete_permission.")
  )
  .add(
    post("createRole", "/permissions.createRole")
      .setPayload(CreateRoleInput)
      .addSuccess(Schema.Struct({ roleId: Schema.String }))
      .addError(Responses[409])
      .annotate(OpenApi.Summary, "Create a role, with the permissions it holds (a keymeter extension)")
      .annotate(
        OpenApi.Description,
        "Permission: rbac.*.create_role; with permissions, also rbac.*.add_permission_to_role. A name taken is " +
          "a 409 CONFLICT."
      )
  )
  .add(
    HttpApiEndpoint.get("getRole", "/permissions.getRole")
      .setUrlParams(GetRoleParams)
      .addSuccess(RoleView)
      .annotate(OpenApi.Summary, "Read a role, with its permissions' slugs (a keymeter extension)")
      .annotate(OpenApi.Description, "Permission: rbac.*.read_role.")
  )
  .add(
    HttpApiEndpoint.get("listRoles", "/permissions.listRoles")
      .addSuccess(Schema.Array(RoleView))
      .annotate(OpenApi.Summary, "List the workspace's roles")
      .annotate(OpenApi.Description, "Permission: rbac.*.read_role.")
  )
  .add(
    post("deleteRole", "/permissions.deleteRole")
      .setPayload(RoleIdInput)
      .addSuccess(Schema.Struct({}))
      .annotate(OpenApi.Summary, "Delete a role; every key holding it loses it at once")
      .annotate(OpenApi.Description, "Permission: rbac.*.delete_role.")
  )
{}

/** Query parameters of `GET /v1/identities.getIdentity` and `listIdentities`. */
export const GetIdentityParams = UrlParams.schema(V1Identities.GetIdentityQuery)
export const ListIdentitiesParams = UrlParams.schema(V1Identities.ListIdentitiesQuery)

/** Identity routes: the end customers keys are created for, in Unkey v1's shapes. */
export class IdentitiesGroup extends HttpApiGroup.make("identities")
  .add(
    post("createIdentity", "/identities.createIdentity")
      .setPayload(V1Identities.CreateIdentityRequest)
      .addSuccess(Schema.Struct({ identityId: Schema.String }))
      .addError(Responses[409])
      .annotate(OpenApi.Summary, "Create an identity; an externalId the workspace has already is a 409 CONFLICT")
      .annotate(
        OpenApi.Description,
        "Permission: identity.*.create_identity; with ratelimits, also ratelimit.*.limit or ratelimit.<id>.limit " +
          "of each namespace they name."
      )
  )
  .add(
    HttpApiEndpoint.get("getIdentity", "/identities.getIdentity")
      .setUrlParams(GetIdentityParams)
      .addSuccess(V1Identities.Identity)
      .annotate(OpenApi.Summary, "Read an identity by identityId or externalId (identityId wins)")
      .annotate(OpenApi.Description, "Permission: identity.*.read_identity.")
  )
  .add(
    HttpApiEndpoint.get("listIdentities", "/identities.listIdentities")
      .setUrlParams(ListIdentitiesParams)
      .addSuccess(V1Identities.IdentityPage)
      .annotate(OpenApi.Summary, "List the workspace's identities in creation order, a page at a time")
      .annotate(OpenApi.Description, "Permission: identity.*.read_identity.")
  )
  .add(
    post("updateIdentity", "/identities.updateIdentity")
      .setPayload(V1Identities.UpdateIdentityRequest)
      .addSuccess(V1Identities.Identity)
      .annotate(OpenApi.Summary, "Change an identity's meta, shared limits, or (keymeter) enabled flag")
      .annotate(
        OpenApi.Description,
        "Permission: identity.*.update_identity; with ratelimits, also as createIdentity. A disabled identity's " +
          "keys verify as UNAUTHORIZED from the next call."
      )
  )
  .add(
    post("deleteIdentity", "/identities.deleteIdentity")
      .setPayload(V1Identities.DeleteIdentityRequest)
      .addSuccess(Schema.Struct({}))
      .annotate(OpenApi.Summary, "Delete an identity; its keys stay, without it")
      .annotate(OpenApi.Description, "Permission: identity.*.delete_identity.")
  )
{}

/** Routes that bring keys from elsewhere. */
export class MigrationsGroup extends HttpApiGroup.make("migrations")
  .add(
    post("createKeys", "/migrations.createKeys")
      .setPayload(V1Migrations.MigrateKeysRequest)
      .addSuccess(Schema.Struct({ keyIds: Schema.Array(Schema.String) }))
      .addError(Responses[409])
      .annotate(OpenApi.Summary, "Import 1 to 1,000 keys by their plaintext or SHA-256, all or none")
      .annotate(
        OpenApi.Description,
        "Permission: as createKey, for each api named. A key whose secret the workspace has already (or two " +
          "alike in the batch) is a 409 CONFLICT, and nothing is imported. keyIds in the order of the body."
      )
  )
{}

/** Answer of `auth.whoami`: the calling root key, so a client (the dashboard) can offer what it may do. */
export const WhoAmI = Schema.Struct({
  workspaceId: Schema.String,
  rootKeyId: Schema.String,
  permissions: Schema.Array(Schema.String)
}).annotations({ identifier: "WhoAmI" })

/** Routes about the calling root key. */
export class AuthGroup extends HttpApiGroup.make("auth")
  .add(
    HttpApiEndpoint.get("whoami", "/auth.whoami")
      .addSuccess(WhoAmI)
      .annotate(OpenApi.Summary, "The calling root key: its workspace, id and permissions")
      .annotate(OpenApi.Description, "Any valid root key.")
  )
{}

/** Answer of `liveness`: Unkey v1's shape, naming what this server runs on. */
export const Liveness = Schema.Struct({
  status: Schema.String,
  services: Schema.Struct({
    metrics: Schema.String,
    logger: Schema.String,
    ratelimit: Schema.String,
    usagelimit: Schema.String
  })
}).annotations({ identifier: "Liveness" })

/** Whether the server answers: the one route without a root key (Unkey v1's `liveness`). */
export class LivenessGroup extends HttpApiGroup.make("liveness")
  .add(
    HttpApiEndpoint.get("liveness", "/liveness")
      .addSuccess(Liveness)
      .annotate(OpenApi.Summary, "Whether the server answers")
      .annotate(OpenApi.Description, "No root key needed.")
  )
{}

/** Query parameters of `GET /v1/apis.getApi`. */
export const GetApiParams = UrlParams.schema(ApiIdInput)

/** Api routes. */
export class ApisGroup extends HttpApiGroup.make("apis")
  .add(
    keyedPost("createApi", "/apis.createApi")
      .setPayload(CreateApiInput)
      .addSuccess(Schema.Struct({ apiId: Schema.String }))
      .annotate(OpenApi.Summary, "Create an api")
      .annotate(OpenApi.Description, "Permission: api.*.create_api.")
  )
  .add(
    HttpApiEndpoint.get("getApi", "/apis.getApi")
      .setUrlParams(GetApiParams)
      .addSuccess(ApiView)
      .annotate(OpenApi.Summary, "Read an api")
      .annotate(OpenApi.Description, "Permission: api.*.read_api or api.<apiId>.read_api.")
  )
  .add(
    HttpApiEndpoint.get("listKeys", "/apis.listKeys")
      .setUrlParams(ListKeysParams)
      .addSuccess(V1Keys.KeyPage)
      .annotate(OpenApi.Summary, "List an api's keys in creation order, a page at a time, of one externalId")
      .annotate(OpenApi.Description, "Permission: api.*.read_key or api.<apiId>.read_key.")
  )
  .add(
    post("deleteApi", "/apis.deleteApi")
      .setPayload(ApiIdInput)
      .addSuccess(Schema.Struct({}))
      .annotate(OpenApi.Summary, "Delete an api and its keys; its verifications stay counted")
      .annotate(OpenApi.Description, "Permission: api.*.delete_api or api.<apiId>.delete_api.")
  )
  .add(
    post("deleteKeys", "/apis.deleteKeys")
      .setPayload(V1Keys.DeleteKeysRequest)
      .addSuccess(Schema.Struct({ deletedKeys: Schema.Number }))
      .annotate(OpenApi.Summary, "Delete all of an api's keys")
      .annotate(OpenApi.Description, "Permission: api.*.delete_key or api.<apiId>.delete_key.")
  )
  .add(
    HttpApiEndpoint.get("listApis", "/apis.listApis")
      .addSuccess(ApiList)
      .annotate(OpenApi.Summary, "List the apis this key may read (a keymeter extension)")
      .annotate(
        OpenApi.Description,
        "The workspace's apis for which the key holds api.*.read_api or api.<apiId>.read_api, by id."
      )
  )
{}

/**
 * The /v1 routes, each authenticated and answering the shared errors: declared once here, and
 * pushed down to every group when this api is added to the whole `Api` (an api-level middleware
 * would also guard the docs and the 404s).
 */
export const V1 = EnvelopedApi
  .add(AnalyticsGroup)
  .add(RatelimitsGroup)
  .add(ApisGroup)
  .add(KeysGroup)
  .add(IdentitiesGroup)
  .add(PermissionsGroup)
  .add(MigrationsGroup)
  .add(AuthGroup)
  .addError(Responses[400])
  .addError(Responses[404])
  .addError(Responses[429])
  .addError(Responses[500])
  .middleware(Authorization)
  .prefix("/v1")

/** The /v1 routes without a root key. */
export const V1Open = EnvelopedApi
  .add(LivenessGroup)
  .addError(Responses[500])
  .prefix("/v1")
