/**
 * Workspaces: the tenants. Everything else belongs to exactly one workspace.
 */
import * as Schema from "effect/Schema"

/** A workspace. */
export class Workspace extends Schema.Class<Workspace>("Workspace")({
  id: Schema.String,
  name: Schema.String
}) {}
