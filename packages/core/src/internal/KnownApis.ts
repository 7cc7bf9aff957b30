/**
 * The apis requests name, remembered while the catalog holds (see {@link CatalogCache}): every
 * analytics query, batch and verification checks its api, and a read through an adapter costs far
 * more than the check.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Api } from "../Api.js"
import { NotFound } from "../Errors.js"
import type { Catalog } from "../Storage.js"
import { CatalogCache } from "./CatalogCache.js"

export const make = (catalog: Catalog["Type"]) => {
  const cache = new CatalogCache<Option.Option<Api>>(catalog.revision)
  /** The api `apiId` of the workspace, if it has one. */
  const find = (workspaceId: string, apiId: string) =>
    cache.get(`${workspaceId}\u0000${apiId}`, catalog.getApi(workspaceId, apiId))
  /** Fails with NotFound (the field `apiId`) unless the workspace has the api. */
  const require = (workspaceId: string, apiId: string) =>
    Effect.flatMap(find(workspaceId, apiId), (api) =>
      Option.isNone(api)
        ? Effect.fail(new NotFound({ message: `apiId: no api ${JSON.stringify(apiId)} in this workspace` }))
        : Effect.void)
  /** Whether the workspace has the api, when remembered; undefined when it must be read. */
  const peek = (workspaceId: string, apiId: string): boolean | undefined => {
    const api = cache.peek(`${workspaceId}\u0000${apiId}`)
    return api === undefined ? undefined : Option.isSome(api)
  }
  return { find, require, peek } as const
}
