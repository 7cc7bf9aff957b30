/**
 * Apis: verifications belong to an api.
 */
import * as Schema from "effect/Schema"
import { expected, wellFormed } from "./Validation.js"

/** An api of a workspace. */
export class Api extends Schema.Class<Api>("Api")({
  id: Schema.String,
  workspaceId: Schema.String,
  name: Schema.String
}) {}

/** Longest api name. */
export const MAX_NAME_LENGTH = 255

/** Body of `apis.createApi`. */
export const CreateApiInput = Schema.Struct({
  name: wellFormed(expected(
    Schema.String.pipe(Schema.minLength(1), Schema.maxLength(MAX_NAME_LENGTH)),
    `must be a name of 1 to ${MAX_NAME_LENGTH} characters`
  ))
}).annotations({ identifier: "CreateApiInput" })
