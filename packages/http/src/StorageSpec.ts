/**
 * Choosing storage from a string, as `KEYMETER_STORAGE` gives it: `memory`, or `sqlite:<path>`.
 */
import type { Catalog, VerificationStore } from "@keymeter/core/Storage"
import { MemoryStorage } from "@keymeter/storage-memory"
import { SqliteStorage } from "@keymeter/storage-sqlite"
import * as Data from "effect/Data"
import * as Layer from "effect/Layer"

/** The default: a SQLite file beside the working directory. */
export const DEFAULT = "sqlite:./.keymeter/keymeter.db"

/** The storage string names no storage keymeter knows. */
export class InvalidStorageSpec extends Data.TaggedError("InvalidStorageSpec")<{ readonly message: string }> {}

/** A parsed storage choice. */
export type Spec = { readonly _tag: "memory" } | { readonly _tag: "sqlite"; readonly filename: string }

/** Parses `memory` or `sqlite:<path>`. */
export const parse = (spec: string): Spec | InvalidStorageSpec => {
  const value = spec.trim()
  if (value === "memory") return { _tag: "memory" }
  if (value.startsWith("sqlite:") && value.length > "sqlite:".length) {
    return { _tag: "sqlite", filename: value.slice("sqlite:".length) }
  }
  return new InvalidStorageSpec({
    message: `KEYMETER_STORAGE must be "memory" or "sqlite:<path>", got ${JSON.stringify(spec)}`
  })
}

/** The storage layer a spec names; `hotDays` tunes SQLite's in-memory hot range. */
export const layer = (
  spec: Spec,
  options: { readonly hotDays?: number | undefined } = {}
): Layer.Layer<VerificationStore | Catalog, SqliteStorage.OpenError> => {
  switch (spec._tag) {
    case "memory":
      return MemoryStorage.layer
    case "sqlite":
      return SqliteStorage.layer({ filename: spec.filename, hotDays: options.hotDays })
  }
}
