/**
 * Apis: verifications belong to an api.
 */
import * as Schema from "effect/Schema"
import { boundedString } from "./Validation.js"

/** An api of a workspace. */
export class Api extends Schema.Class<Api>("Api")({
  id: Schema.String,
  workspaceId: Schema.String,
  name: Schema.String
}) {}

/** Longest api name. */
export const MAX_NAME_LENGTH = 255

/** Answer of `apis.listApis`. */
export const ApiList = Schema.Struct({
  apis: Schema.Array(Schema.Struct({ apiId: Schema.String, name: Schema.String }))
}).annotations({ identifier: "ApiList" })

/** Body of `apis.createApi`. */
export const CreateApiInput = Schema.Struct({
  name: boundedString("a name", 1, MAX_NAME_LENGTH)
}).annotations({ identifier: "CreateApiInput" })

/** Query of `apis.getApi`; body of `apis.deleteApi` and `apis.deleteKeys`. */
export const ApiIdInput = Schema.Struct({
  apiId: boundedString("an api id", 1, 255)
}).annotations({ identifier: "ApiIdInput" })

/** Answer of `apis.getApi`. */
export const ApiView = Schema.Struct({
  id: Schema.String,
  workspaceId: Schema.String,
  name: Schema.String
}).annotations({ identifier: "ApiView" })
