/**
 * Rate-limit overrides: set (create or overwrite), read, list, delete, and resolve the one that
 * applies to an identifier. Resolution indexes are cached per namespace and updated in place by
 * this service's own writes, so a change applies to the very next resolution; another server's
 * changes (a shared catalog's `foreignOverridesRevision`) make them all be read again.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { Auth } from "./Auth.js"
import * as CatalogPart from "./CatalogPart.js"
import * as Checker from "./Checker.js"
import * as Cursor from "./Cursor.js"
import * as Decision from "./Decision.js"
import { Missing } from "./Decision.js"
import type { InsufficientPermissions, StorageError } from "./Errors.js"
import { NotFound, ValidationError } from "./Errors.js"
import { IdempotencyKeys, type KeyOptions } from "./IdempotencyKeys.js"
import * as Ids from "./Ids.js"
import { CatalogCache } from "./internal/CatalogCache.js"
import { NamespaceReads } from "./internal/NamespaceReads.js"
import * as Span from "./internal/Span.js"
import { Namespace } from "./Namespace.js"
import { Override } from "./Override.js"
import {
  DeleteOverrideInput,
  GetOverrideInput,
  ListOverridesInput,
  MAX_PAGE,
  SetOverrideInput,
  toView
} from "./Override.js"
import { matches, OverrideIndex, resolveAcross } from "./OverrideIndex.js"
import type { Principal } from "./Permission.js"
import * as Permission from "./Permission.js"
import { RatelimitRecorder } from "./RatelimitRecorder.js"
import { Catalog, RatelimitStore } from "./Storage.js"
import * as Validation from "./Validation.js"

/** The ids of overrides, as cursors hold them. */
const OVERRIDE_ID = /^rlor_[0-9A-Z]{26}$/

/** Manages overrides in the caller's workspace. */
export class Overrides extends Effect.Service<Overrides>()("@keymeter/core/Overrides", {
  effect: Effect.gen(function*() {
    const catalog = yield* Catalog
    const decisions = yield* RatelimitStore
    const recorder = yield* RatelimitRecorder
    /** The hits of the workspace's overrides `ids`, counting every decision made before this read. */
    const hitsOf = (workspaceId: string, ids: ReadonlyArray<string>) =>
      Effect.zipRight(recorder.flush, decisions.overrideHits(workspaceId, ids))
    const keys = yield* IdempotencyKeys
    const auth = yield* Auth
    const decodeSet = Checker.decode(SetOverrideInput)
    const decodeGet = Validation.decode(GetOverrideInput)
    const decodeList = Validation.decode(ListOverridesInput)
    const decodeDelete = Validation.decode(DeleteOverrideInput)

    // Resolution indexes per namespace id. `generation` counts writes per namespace, so a load
    // that raced with a write is thrown away rather than cached stale.
    const indexes = new Map<string, OverrideIndex>()
    const patternsOf = new CatalogCache<ReadonlyArray<Namespace>>(CatalogPart.revisionOf(catalog, "namespaces"))
    // Every override call names its namespace: by name or id, read once while the revision holds.
    const namespaces = new NamespaceReads(catalog)
    const generation = new Map<string, number>()
    // Another server changed overrides: what is remembered is forgotten, and loads begun before
    // are not kept (`epoch`).
    const foreign = catalog.foreignOverridesRevision
    let seen = foreign?.()
    let epoch = 0
    const fresh = () => {
      if (foreign === undefined) return
      const current = foreign()
      if (current !== seen) {
        seen = current
        indexes.clear()
        epoch++
      }
    }
    const written = (namespaceId: string, apply: (index: OverrideIndex) => void) =>
      Effect.sync(() => {
        generation.set(namespaceId, (generation.get(namespaceId) ?? 0) + 1)
        const index = indexes.get(namespaceId)
        if (index !== undefined) apply(index)
      })
    /** The resolution index of a namespace, as a lookup. */
    const indexOf = (namespaceId: string): OverrideIndex | Missing<StorageError> => {
      fresh()
      return indexes.get(namespaceId) ?? new Missing(load(namespaceId))
    }
    // A load that raced with a write of the namespace, or with another server's change, is not
    // kept: the lookup after it misses and loads again.
    const load = (namespaceId: string) => {
      const before = generation.get(namespaceId) ?? 0
      const began = epoch
      return Effect.map(catalog.allOverrides(namespaceId), (overrides) => {
        fresh()
        if ((generation.get(namespaceId) ?? 0) !== before || epoch !== began) return
        indexes.set(namespaceId, new OverrideIndex(overrides))
      })
    }

    /**
     * The override that applies to `identifier` in `namespace` (a lookup): its own best match, else
     * the best match of the namespace patterns matching its name (docs/behaviour.md §5).
     */
    const resolve = (namespace: Namespace, identifier: string): Override | undefined | Missing<StorageError> => {
      const own = indexOf(namespace.id)
      if (own instanceof Missing) return own
      const direct = own.resolve(identifier)
      if (direct !== undefined) return direct
      const all = patternsOf.lookup(namespace.workspaceId, () => catalog.namespacePatterns(namespace.workspaceId))
      if (all instanceof Missing) return all
      let found: Array<OverrideIndex> | undefined
      for (const pattern of all) {
        if (pattern.id === namespace.id || !matches(pattern.name, namespace.name)) continue
        const index = indexOf(pattern.id)
        if (index instanceof Missing) return index
        ;(found ??= []).push(index)
      }
      return found === undefined ? undefined : resolveAcross(undefined, found, identifier)
    }

    /**
     * The namespace an override call names, with the permission check, as a decision's turn:
     * decided at once when memory holds the namespace. A namespaceId must exist (404) and, with a
     * namespaceName too, carry that name (400). A namespaceName that does not exist is created when
     * `create` is set, which needs the workspace-wide permission.
     */
    const namespaceTurn = (
      principal: Principal,
      input: { readonly namespaceId?: string | undefined; readonly namespaceName?: string | undefined },
      required: (namespaceId: string) => ReadonlyArray<string>,
      create: boolean
    ): Decision.Turn<Namespace, NotFound | ValidationError | InsufficientPermissions | StorageError> => {
      const { namespaceId, namespaceName } = input
      if (namespaceId !== undefined) {
        const denied = Decision.failed(auth.authorize(principal, required(namespaceId)))
        if (denied !== undefined) return denied
        const found = namespaces.withId(principal.workspaceId, namespaceId)
        if (found instanceof Missing) return found
        if (Option.isNone(found)) {
          return Exit.fail(
            new NotFound({ message: `namespaceId: no namespace ${JSON.stringify(namespaceId)} in this workspace` })
          )
        }
        if (namespaceName !== undefined && namespaceName !== found.value.name) {
          return Exit.fail(
            new ValidationError({
              message: `namespaceName: ${JSON.stringify(namespaceName)} does not name namespace ${namespaceId}`
            })
          )
        }
        return Exit.succeed(found.value)
      }
      const name = namespaceName!
      const found = namespaces.namedOrWithId(principal.workspaceId, name)
      if (found instanceof Missing) return found
      if (Option.isSome(found)) {
        return Decision.failed(auth.authorize(principal, required(found.value.id))) ?? Exit.succeed(found.value)
      }
      if (!create) {
        // Same answer as for a namespace the key may not see, so names do not leak.
        return Decision.failed(auth.authorize(principal, required("*"))) ??
          Exit.fail(new NotFound({ message: `namespaceName: no namespace ${JSON.stringify(name)} in this workspace` }))
      }
      return Decision.failed(auth.authorize(principal, Permission.required.createNamespace())) ??
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          catalog.ensureNamespace(
            new Namespace({ id: Ids.make(Ids.Prefix.namespace, now), workspaceId: principal.workspaceId, name })
          ))
    }

    /** {@link namespaceTurn} as an effect. */
    const namespaceFor = (
      principal: Principal,
      input: { readonly namespaceId?: string | undefined; readonly namespaceName?: string | undefined },
      required: (namespaceId: string) => ReadonlyArray<string>,
      create: boolean
    ) => Decision.make(() => namespaceTurn(principal, input, required, create))

    const requireNamespace = (input: {
      readonly namespaceId?: string | undefined
      readonly namespaceName?: string | undefined
    }) =>
      input.namespaceId === undefined && input.namespaceName === undefined
        ? Effect.fail(new ValidationError({ message: "namespaceId: either namespaceId or namespaceName is required" }))
        : Effect.void

    /**
     * Creates the override of (namespace, identifier), or overwrites it keeping its id. A repeat converges by itself; with an idempotency key it is also answered from the
     * receipt, and another request under the key is refused.
     */
    const set = (principal: Principal, input: unknown, options?: KeyOptions) =>
      Effect.gen(function*() {
        // The compiled check first (primitives only: nothing of the caller's is kept by reference).
        const decoded = yield* decodeSet(input)
        yield* requireNamespace(decoded)
        const namespace = yield* namespaceFor(principal, decoded, Permission.required.setOverride, true)
        return yield* keys.once(
          {
            workspaceId: principal.workspaceId,
            key: options?.idempotencyKey,
            name: options?.idempotencyKeyName ?? "idempotencyKey",
            operation: "setOverride",
            canonical: () => [
              namespace.id,
              decoded.identifier,
              decoded.limit,
              decoded.duration,
              decoded.async ?? false
            ]
          },
          () =>
            Effect.gen(function*() {
              const now = yield* Clock.currentTimeMillis
              const override = yield* catalog.upsertOverride({
                id: Ids.make(Ids.Prefix.override, now),
                namespaceId: namespace.id,
                identifier: decoded.identifier,
                limit: decoded.limit,
                duration: decoded.duration,
                async: decoded.async ?? false,
                now
              })
              yield* written(namespace.id, (index) => index.set(override))
              return override
            }),
          { storeAfter: true, revive: (json) => new Override(json as Override) }
        )
      }).pipe(Span.span("Overrides.set"))

    /** The override of exactly the identifier, or with `resolve`, the one that would apply to it. */
    const get = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const decoded = yield* decodeGet(input)
        yield* requireNamespace(decoded)
        const namespace = yield* namespaceFor(principal, decoded, Permission.required.readOverride, false)
        const override = decoded.resolve === true
          ? yield* Decision.read(() => resolve(namespace, decoded.identifier))
          : Option.getOrUndefined(yield* catalog.getOverride(namespace.id, decoded.identifier))
        // Resolved in a pattern namespace: shown only to a caller that may read that one too.
        if (override !== undefined && override.namespaceId !== namespace.id) {
          yield* auth.authorize(principal, Permission.required.readOverride(override.namespaceId))
        }
        if (override === undefined) {
          return yield* new NotFound({
            message: decoded.resolve === true
              ? `identifier: no override applies to ${JSON.stringify(decoded.identifier)} in namespace ${namespace.id}`
              : `identifier: no override for ${JSON.stringify(decoded.identifier)} in namespace ${namespace.id}`
          })
        }
        const hits = yield* hitsOf(principal.workspaceId, [override.id])
        return toView(override, { hits: hits.get(override.id) })
      }).pipe(Span.span("Overrides.get"))

    /** A page of a namespace's overrides, in creation order; `cursor` continues after the last one. */
    const list = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const decoded = yield* decodeList(input)
        yield* requireNamespace(decoded)
        const cursor = decoded.cursor === undefined ? undefined : Cursor.decode(decoded.cursor, OVERRIDE_ID)
        if (cursor === null) {
          return yield* new ValidationError({ message: "cursor: is not a cursor this API returned" })
        }
        const namespace = yield* namespaceFor(principal, decoded, Permission.required.readOverride, false)
        if (cursor !== undefined && cursor.scope !== namespace.id) {
          return yield* new ValidationError({
            message: "cursor: was returned for another namespace; list this one from its first page"
          })
        }
        const after = cursor?.after
        const limit = decoded.limit ?? MAX_PAGE
        const page = yield* catalog.listOverrides(namespace.id, { after, limit: limit + 1 })
        const overrides = page.overrides.slice(0, limit)
        const hits = yield* hitsOf(principal.workspaceId, overrides.map((override) => override.id))
        return {
          overrides: overrides.map((override) => toView(override, { hits: hits.get(override.id) })),
          total: page.total,
          ...(page.overrides.length > limit
            ? { cursor: Cursor.encode(namespace.id, overrides[overrides.length - 1]!.id) }
            : {})
        }
      }).pipe(Span.span("Overrides.list"))

    /** Deletes the override of (namespace, identifier); it never applies again. */
    const remove = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const decoded = yield* decodeDelete(input)
        yield* requireNamespace(decoded)
        const namespace = yield* namespaceFor(principal, decoded, Permission.required.deleteOverride, false)
        if (!(yield* catalog.deleteOverride(namespace.id, decoded.identifier))) {
          return yield* new NotFound({
            message: `identifier: no override for ${JSON.stringify(decoded.identifier)} in namespace ${namespace.id}`
          })
        }
        yield* written(namespace.id, (index) => index.delete(decoded.identifier))
        return {}
      }).pipe(Span.span("Overrides.delete"))

    /** The workspace's namespaces whose overrides the caller may read, by name. */
    const listNamespaces = (principal: Principal) =>
      Effect.map(catalog.listNamespaces(principal.workspaceId), (all) => ({
        namespaces: all
          .filter((namespace) =>
            Permission.allows(principal.permissions, Permission.required.readOverride(namespace.id))
          )
          .map((namespace) => ({ namespaceId: namespace.id, name: namespace.name }))
      })).pipe(Span.span("Overrides.namespaces"))

    return {
      set,
      get,
      list,
      delete: remove,
      namespaces: listNamespaces,
      resolve,
      namespaceFor,
      namespaceTurn,
      requireNamespace
    } as const
  })
}) {}
