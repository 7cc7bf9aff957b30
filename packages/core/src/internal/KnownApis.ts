/**
 * The apis requests name, remembered while the catalog holds (see {@link CatalogCache}): every
 * analytics query, batch and verification checks its api, and a read through an adapter costs far
 * more than the check.
 */
import type * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type { Api } from "../Api.js"
import * as CatalogPart from "../CatalogPart.js"
import * as Decision from "../Decision.js"
import type { StorageError } from "../Errors.js"
import { NotFound } from "../Errors.js"
import type { Catalog } from "../Storage.js"
import { CatalogCache } from "./CatalogCache.js"
import * as CompositeKey from "./CompositeKey.js"

export const make = (catalog: Catalog["Type"]) => {
  const cache = new CatalogCache<Option.Option<Api>>(CatalogPart.revisionOf(catalog, "apis"))
  /** The api `apiId` of the workspace, if it has one (a lookup). */
  const lookup = (workspaceId: string, apiId: string) =>
    cache.lookup(CompositeKey.make(workspaceId, apiId), () => catalog.getApi(workspaceId, apiId))
  /** Nothing when the workspace has the api; a NotFound (the field `apiId`) when not (a decision). */
  const decideKnown = (workspaceId: string, apiId: string) => {
    const api = lookup(workspaceId, apiId)
    if (api instanceof Decision.Missing) return api
    return Option.isNone(api)
      ? Exit.fail(new NotFound({ message: `apiId: no api ${JSON.stringify(apiId)} in this workspace` }))
      : undefined
  }
  /** Fails with NotFound (the field `apiId`) unless the workspace has the api. */
  const require = (workspaceId: string, apiId: string): Effect.Effect<void, NotFound | StorageError> =>
    Decision.make<void, NotFound | StorageError, never>(() => decideKnown(workspaceId, apiId) ?? Exit.void)
  /** The api, if the workspace has it. */
  const find = (workspaceId: string, apiId: string) => Decision.read(() => lookup(workspaceId, apiId))
  return { lookup, decideKnown, require, find } as const
}
