/**
 * Choosing storage from strings, as the environment gives them: `KEYMETER_STORAGE` (`memory`, or
 * `sqlite:<path>`) holds everything, unless `KEYMETER_ANALYTICS` (`clickhouse:<url>`) takes the
 * verifications, leaving the catalog where `KEYMETER_STORAGE` says.
 */
import { StorageError } from "@keymeter/core/Errors"
import type { Catalog, VerificationStore } from "@keymeter/core/Storage"
import { ClickhouseVerificationStore } from "@keymeter/storage-clickhouse"
import { MemoryCatalog, MemoryStorage } from "@keymeter/storage-memory"
import { SqliteStorage } from "@keymeter/storage-sqlite"
import * as Data from "effect/Data"
import * as Layer from "effect/Layer"

/** The default: a SQLite file beside the working directory. */
export const DEFAULT = "sqlite:./.keymeter/keymeter.db"

/** The storage string names no storage keymeter knows. */
export class InvalidStorageSpec extends Data.TaggedError("InvalidStorageSpec")<{ readonly message: string }> {}

/** A parsed storage choice. */
export type Spec = { readonly _tag: "memory" } | { readonly _tag: "sqlite"; readonly filename: string }

/** A parsed analytics choice: where verifications go instead. */
export type AnalyticsSpec = { readonly _tag: "clickhouse"; readonly url: string }

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

/** Parses `clickhouse:http://host:8123/<database>`. */
export const parseAnalytics = (spec: string): AnalyticsSpec | InvalidStorageSpec => {
  const value = spec.trim()
  if (value.startsWith("clickhouse:")) {
    const url = value.slice("clickhouse:".length)
    const target = ClickhouseVerificationStore.parseUrl(url)
    if (target instanceof StorageError) {
      return new InvalidStorageSpec({ message: `KEYMETER_ANALYTICS: ${target.message}` })
    }
    return { _tag: "clickhouse", url }
  }
  return new InvalidStorageSpec({
    message: `KEYMETER_ANALYTICS must be "clickhouse:http://<host>:<port>/<database>", got ${JSON.stringify(spec)}`
  })
}

/** Tuning of the layers a spec names. */
export interface LayerOptions {
  /** SQLite's in-memory hot range, in days. */
  readonly hotDays?: number | undefined
  /** Where verifications go instead of `spec`'s storage. */
  readonly analytics?: AnalyticsSpec | undefined
}

/** The storage layer the specs name. */
export const layer = (
  spec: Spec,
  options: LayerOptions = {}
): Layer.Layer<VerificationStore | Catalog, SqliteStorage.OpenError | StorageError> => {
  if (options.analytics !== undefined) {
    const catalog = spec._tag === "memory"
      ? MemoryCatalog.layer
      : SqliteStorage.layerServerCatalog({ filename: spec.filename })
    return Layer.merge(catalog, ClickhouseVerificationStore.layer({ url: options.analytics.url }))
  }
  switch (spec._tag) {
    case "memory":
      return MemoryStorage.layer
    case "sqlite":
      return SqliteStorage.layer({ filename: spec.filename, hotDays: options.hotDays })
  }
}
