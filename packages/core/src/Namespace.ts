/**
 * Rate-limit namespaces: they group limits. A name holding `*` is a pattern whose overrides apply
 * in every namespace whose name it matches.
 */
import * as Schema from "effect/Schema"

/** A namespace of a workspace. */
export class Namespace extends Schema.Class<Namespace>("Namespace")({
  id: Schema.String,
  workspaceId: Schema.String,
  name: Schema.String
}) {}

/** Longest namespace name. */
export const MAX_NAME_LENGTH = 255

/** True when `name` is a namespace pattern. */
export const isPattern = (name: string): boolean => name.includes("*")
