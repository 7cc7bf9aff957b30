/**
 * The /v1 key routes, in Unkey v1's shapes: their parameters and the group.
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { KeyPermissionsInput, KeyRolesInput } from "@keymeter/core/Key"
import * as Schema from "effect/Schema"
import * as UrlParams from "../internal/UrlParams.js"
import { keyedPost, post } from "./Endpoint.js"
import * as V1Keys from "./Keys.js"
import * as V1KeyUsage from "./KeyUsage.js"
import * as V1VerifyKey from "./VerifyKey.js"

/** The permissions or roles a key holds after a change, by id and name. */
const Connected = Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String }))

/** Query parameters of `GET /v1/keys.getKey` and `GET /v1/apis.listKeys`. */
export const GetKeyParams = UrlParams.schema(V1Keys.GetKeyQuery)
export const ListKeysParams = UrlParams.schema(V1Keys.ListKeysQuery)
export const KeyUsageParams = UrlParams.schema(V1KeyUsage.KeyUsageQuery)

/** Key routes, in Unkey v1's shapes. */
export class KeysGroup extends HttpApiGroup.make("keys")
  .add(
    keyedPost("createKey", "/keys.createKey")
      .setPayload(V1Keys.CreateKeyRequest)
      .addSuccess(V1Keys.CreateKeyResponse)
      .annotate(OpenApi.Summary, "Create a key; its secret is in this answer only")
      .annotate(
        OpenApi.Description,
        "Permission: api.*.create_key or api.<apiId>.create_key (a ratelimit also needs ratelimit.*.limit or " +
          "ratelimit.<id>.limit of the namespace `default`). A repeat with the same Idempotency-Key answers the " +
          "keyId without the secret, which is never kept."
      )
  )
  .add(
    post("verifyKey", "/keys.verifyKey")
      .setPayload(V1VerifyKey.VerifyKeyRequest)
      .addSuccess(V1VerifyKey.VerifyKeyResponseV1)
      .annotate(OpenApi.Summary, "Verify a key: one of nine codes, always 200 for a well-formed request")
      .annotate(
        OpenApi.Description,
        "Permission: api.*.verify_key or api.<apiId>.verify_key (the apiId asked, else the key's). Checks, first " +
          "failure wins: NOT_FOUND, FORBIDDEN, UNAUTHORIZED, DISABLED, EXPIRED, INSUFFICIENT_PERMISSIONS, " +
          "RATE_LIMITED, USAGE_EXCEEDED, then VALID. Every verification is recorded."
      )
  )
  .add(
    HttpApiEndpoint.get("getKey", "/keys.getKey")
      .setUrlParams(GetKeyParams)
      .addSuccess(V1Keys.Key)
      .annotate(OpenApi.Summary, "Read a key (never its secret)")
      .annotate(OpenApi.Description, "Permission: api.*.read_key or api.<apiId>.read_key.")
  )
  .add(
    HttpApiEndpoint.get("getKeyVerifications", "/keys.getVerifications")
      .setUrlParams(KeyUsageParams)
      .addSuccess(V1KeyUsage.KeyUsage)
      .annotate(OpenApi.Summary, "A key's (or an ownerId's keys') verifications by day: Unkey v1's older usage route")
      .annotate(
        OpenApi.Description,
        "Permission: api.*.read_key (or the key's api's) with keyId; api.*.read_api (or each api's) for the " +
          "apis counted. success counts VALID verifications. analytics.getVerifications answers more."
      )
  )
  .add(
    post("whoami", "/keys.whoami")
      .setPayload(V1Keys.WhoamiRequest)
      .addSuccess(V1Keys.WhoamiResponse)
      .annotate(OpenApi.Summary, "Read the key of a secret")
      .annotate(OpenApi.Description, "Permission: api.*.read_key or api.<apiId>.read_key.")
  )
  .add(
    post("updateKey", "/keys.updateKey")
      .setPayload(V1Keys.UpdateKeyRequest)
      .addSuccess(Schema.Struct({}))
      .annotate(OpenApi.Summary, "Change a key's fields; null clears one")
      .annotate(OpenApi.Description, "Permission: api.*.update_key or api.<apiId>.update_key.")
  )
  .add(
    keyedPost("updateRemaining", "/keys.updateRemaining")
      .setPayload(V1Keys.UpdateRemainingRequest)
      .addSuccess(V1Keys.UpdateRemainingResponse)
      .annotate(OpenApi.Summary, "Set, increment or decrement (not below 0) a key's remaining verifications")
      .annotate(
        OpenApi.Description,
        "Permission: api.*.update_key or api.<apiId>.update_key. set with null makes the key unlimited; set " +
          "gives a key without credits some."
      )
  )
  .add(
    post("addPermissions", "/keys.addPermissions")
      .setPayload(KeyPermissionsInput)
      .addSuccess(Connected)
      .annotate(OpenApi.Summary, "Give a key permissions; answers all it holds itself")
      .annotate(
        OpenApi.Description,
        "Permission: rbac.*.add_permission_to_key (and rbac.*.create_permission with create: true)."
      )
  )
  .add(
    post("setPermissions", "/keys.setPermissions")
      .setPayload(KeyPermissionsInput)
      .addSuccess(Connected)
      .annotate(OpenApi.Summary, "Replace a key's permissions; answers all it holds itself")
      .annotate(
        OpenApi.Description,
        "Permission: rbac.*.add_permission_to_key and rbac.*.remove_permission_from_key."
      )
  )
  .add(
    post("removePermissions", "/keys.removePermissions")
      .setPayload(KeyPermissionsInput)
      .addSuccess(Schema.Struct({}))
      .annotate(OpenApi.Summary, "Take permissions from a key")
      .annotate(OpenApi.Description, "Permission: rbac.*.remove_permission_from_key.")
  )
  .add(
    post("addRoles", "/keys.addRoles")
      .setPayload(KeyRolesInput)
      .addSuccess(Connected)
      .annotate(OpenApi.Summary, "Give a key roles; answers all it holds")
      .annotate(OpenApi.Description, "Permission: rbac.*.add_role_to_key (and rbac.*.create_role with create: true).")
  )
  .add(
    post("setRoles", "/keys.setRoles")
      .setPayload(KeyRolesInput)
      .addSuccess(Connected)
      .annotate(OpenApi.Summary, "Replace a key's roles; answers all it holds")
      .annotate(OpenApi.Description, "Permission: rbac.*.add_role_to_key and rbac.*.remove_role_from_key.")
  )
  .add(
    post("removeRoles", "/keys.removeRoles")
      .setPayload(KeyRolesInput)
      .addSuccess(Schema.Struct({}))
      .annotate(OpenApi.Summary, "Take roles from a key")
      .annotate(OpenApi.Description, "Permission: rbac.*.remove_role_from_key.")
  )
  .add(
    post("deleteKey", "/keys.deleteKey")
      .setPayload(V1Keys.DeleteKeyRequest)
      .addSuccess(Schema.Struct({}))
      .annotate(OpenApi.Summary, "Delete a key; it verifies as NOT_FOUND from the next call")
      .annotate(OpenApi.Description, "Permission: api.*.delete_key or api.<apiId>.delete_key.")
  )
{}
