/**
 * The parts of the catalog that what core remembers from it depends on, each with a revision of
 * its own (`Catalog.revision`): a write moves the parts it changes, and only those, so a flood of
 * new keys or overrides leaves the root keys, apis and namespaces read before valid (each request
 * would otherwise read its root key, api and namespace again after every such write).
 *
 * Overrides are no part: `Overrides` applies its own writes to what it remembers, and another
 * server's arrive by `Catalog.foreignOverridesRevision`. Credits change without moving anything.
 */
import * as Effect from "effect/Effect"
import type { Catalog } from "./Storage.js"

/** A part of the catalog with a revision of its own. */
export type CatalogPart = "rootKeys" | "apis" | "namespaces" | "keys"

/** Every part. */
export const ALL: ReadonlyArray<CatalogPart> = ["rootKeys", "apis", "namespaces", "keys"]

/**
 * Every write of the catalog (credits aside), with the parts it may change. A workspace's write
 * moves them all (rare, and every part lives in a workspace); keys' part holds what a key's
 * verification reads with it: identities, roles and permissions.
 */
export const partsOfWrite = {
  putWorkspace: ALL,
  putRootKey: ["rootKeys"],
  deleteRootKey: ["rootKeys"],
  putApi: ["apis"],
  putNamespace: ["namespaces"],
  ensureNamespace: ["namespaces"],
  upsertOverride: [],
  deleteOverride: [],
  ensureIdentity: ["keys"],
  replaceIdentity: ["keys"],
  deleteIdentity: ["keys"],
  insertKey: ["keys"],
  insertKeys: ["keys"],
  replaceKey: ["keys"],
  deleteKey: ["keys"],
  deleteKeysOfApi: ["keys"],
  deleteApi: ["apis", "keys"],
  putPermission: ["keys"],
  deletePermission: ["keys"],
  putRole: ["keys"],
  deleteRole: ["keys"]
} as const satisfies { readonly [K in keyof Catalog["Type"]]?: ReadonlyArray<CatalogPart> }

/** A write of the catalog (see {@link partsOfWrite}). */
export type CatalogWrite = keyof typeof partsOfWrite

/** Every write of the catalog, credits aside. */
export const WRITES = Object.keys(partsOfWrite) as ReadonlyArray<CatalogWrite>

/** A revision per part, for an adapter to move as its writes complete. */
export class Revisions {
  private readonly counts: Record<CatalogPart, number> = { rootKeys: 0, apis: 0, namespaces: 0, keys: 0 }

  /** The revision of `part`: `Catalog.revision`. */
  readonly read = (part: CatalogPart): number => this.counts[part]

  /** Moves each of `parts`. */
  move(parts: ReadonlyArray<CatalogPart>): void {
    for (const part of parts) this.counts[part]++
  }
}

/**
 * `catalog` with each write of `names` run through `around`: how an adapter adds what every write
 * needs (a shared commit, a revision that moves) without listing them again.
 */
export const wrapWrites = <C extends Catalog["Type"]>(
  catalog: C,
  names: ReadonlyArray<CatalogWrite>,
  around: (write: Effect.Effect<unknown, unknown>, name: CatalogWrite) => Effect.Effect<unknown, unknown>
): C => {
  const calls: Record<PropertyKey, unknown> = { ...catalog }
  for (const name of names) {
    const method = catalog[name] as (...args: Array<unknown>) => Effect.Effect<unknown, unknown>
    calls[name] = (...args: Array<unknown>) => around(method(...args), name)
  }
  return calls as C
}

/**
 * `catalog` with each write moving, once it completes (failed too: a revision may move more often
 * than its part changes), the parts it may change in `revisions`.
 */
export const tracking = <C extends Catalog["Type"]>(catalog: C, revisions: Revisions): C => {
  const moving = WRITES.filter((name) => partsOfWrite[name].length > 0)
  const moved = new Map(moving.map((name) => [name, Effect.sync(() => revisions.move(partsOfWrite[name]))]))
  return wrapWrites(catalog, moving, (write, name) => Effect.ensuring(write, moved.get(name)!))
}

/** The revision of one part of `catalog`, as a cache reads it; absent when the catalog has none. */
export const revisionOf = (catalog: Catalog["Type"], part: CatalogPart): (() => number) | undefined => {
  const revision = catalog.revision
  return revision === undefined ? undefined : () => revision(part)
}
