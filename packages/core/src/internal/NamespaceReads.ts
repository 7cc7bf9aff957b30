/**
 * A workspace's namespaces read by name or by id, remembered while the catalog's revision holds
 * (see {@link CatalogCache}): the rate limiter and the override calls name a namespace on every
 * request. Lookups, in the sense of `Decision`.
 */
import type * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as CatalogPart from "../CatalogPart.js"
import { Missing } from "../Decision.js"
import type { StorageError } from "../Errors.js"
import * as Ids from "../Ids.js"
import type { Namespace } from "../Namespace.js"
import type { Catalog } from "../Storage.js"
import { CatalogCache } from "./CatalogCache.js"
import * as CompositeKey from "./CompositeKey.js"

const byName = (workspaceId: string, name: string) => CompositeKey.make(workspaceId, name)
// No workspace id is empty: these keys never meet those of names.
const byId = (workspaceId: string, id: string) => CompositeKey.make("", CompositeKey.make(workspaceId, id))

const ID_PREFIX = `${Ids.Prefix.namespace}_`

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

  /**
   * The workspace's namespace that `name` names, as a lookup: the one called `name`, else, when no
   * namespace is and `name` has an id's shape, the one of that id (Unkey v2 names a namespace by
   * either).
   */
  namedOrWithId(workspaceId: string, name: string) {
    const found = this.named(workspaceId, name)
    if (found instanceof Missing || Option.isSome(found) || !name.startsWith(ID_PREFIX)) return found
    return this.withId(workspaceId, name)
  }

  /** `create`, which makes the namespace called `name`, as what a lookup of it is missing. */
  created(workspaceId: string, name: string, create: Effect.Effect<Option.Option<Namespace>, StorageError>) {
    return this.cache.written(byName(workspaceId, name), create)
  }
}
