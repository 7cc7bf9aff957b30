/**
 * A workspace's namespaces read by name or by id, remembered while the catalog's revision holds
 * (see {@link CatalogCache}): the rate limiter and the override calls name a namespace on every
 * request. Lookups, in the sense of `Decision`.
 */
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import * as CatalogPart from "../CatalogPart.js"
import type { StorageError } from "../Errors.js"
import type { Namespace } from "../Namespace.js"
import type { Catalog } from "../Storage.js"
import { CatalogCache } from "./CatalogCache.js"
import * as CompositeKey from "./CompositeKey.js"

const byName = (workspaceId: string, name: string) => CompositeKey.make(workspaceId, name)
// No workspace id is empty: these keys never meet those of names.
const byId = (workspaceId: string, id: string) => CompositeKey.make("", CompositeKey.make(workspaceId, id))

export class NamespaceReads {
  private readonly cache: CatalogCache<Option.Option<Namespace>>
  constructor(private readonly catalog: Catalog["Type"]) {
    this.cache = new CatalogCache(CatalogPart.revisionOf(catalog, "namespaces"))
  }

  /** The workspace's namespace called `name`, as a lookup. */
  named(workspaceId: string, name: string) {
    return this.cache.lookup(byName(workspaceId, name), () => this.catalog.findNamespaceByName(workspaceId, name))
  }

  /** The workspace's namespace of id `id`, as a lookup. */
  withId(workspaceId: string, id: string) {
    return this.cache.lookup(byId(workspaceId, id), () => this.catalog.getNamespace(workspaceId, id))
  }

  /** `create`, which makes the namespace called `name`, as what a lookup of it is missing. */
  created(workspaceId: string, name: string, create: Effect.Effect<Option.Option<Namespace>, StorageError>) {
    return this.cache.written(byName(workspaceId, name), create)
  }
}
