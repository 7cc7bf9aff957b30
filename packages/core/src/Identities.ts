/**
 * Identities: the end customers keys belong to, by their `externalId` in a workspace. Made by
 * `createIdentity`, or with the first key naming its externalId. Its `meta` is answered with its
 * keys' verifications, its limits are shared by all its keys, and disabling it makes all its keys
 * verify as UNAUTHORIZED from the next call.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Auth } from "./Auth.js"
import * as Cursor from "./Cursor.js"
import { Conflict, NotFound, ValidationError } from "./Errors.js"
import * as IdentityInput from "./IdentityInput.js"
import * as Ids from "./Ids.js"
import { KeyCache } from "./internal/KeyCache.js"
import * as Span from "./internal/Span.js"
import { Identity } from "./Key.js"
import type { Principal } from "./Permission.js"
import * as Permission from "./Permission.js"
import { Catalog } from "./Storage.js"
import * as Validation from "./Validation.js"

/** Creates, reads, lists, changes and deletes the identities of the caller's workspace. */
export class Identities extends Effect.Service<Identities>()("@keymeter/core/Identities", {
  effect: Effect.gen(function*() {
    const catalog = yield* Catalog
    const auth = yield* Auth
    const cache = yield* KeyCache
    const decodeCreate = Validation.decode(IdentityInput.CreateIdentityInput)
    const decodeRef = Validation.decode(IdentityInput.IdentityRefInput)
    const decodeUpdate = Validation.decode(IdentityInput.UpdateIdentityInput)
    const decodeList = Validation.decode(IdentityInput.ListIdentitiesInput)

    /** The identity of `externalId` in the workspace, made now when it has none. */
    const ensure = (workspaceId: string, externalId: string, now: number) =>
      cache.write(
        {},
        catalog.ensureIdentity(
          new Identity({
            id: Ids.make(Ids.Prefix.identity, now),
            workspaceId,
            externalId,
            enabled: true,
            createdAt: now
          })
        )
      )

    /**
     * Limits by these names take from the windows of the namespaces they name, shared with
     * everyone limiting the same identifier there. So whoever gives a key or an identity limits
     * (or attaches a limited key to an identity) must hold the limit permission of each namespace
     * named, or `ratelimit.*.limit` for a name that has none yet (verifications create it), as
     * `ratelimits.limit` would ask.
     */
    const authorizeLimits = (principal: Principal, names: Iterable<string>) =>
      Effect.forEach(
        new Set(names),
        (name) =>
          Effect.flatMap(catalog.findNamespaceByName(principal.workspaceId, name), (found) =>
            auth.authorize(
              principal,
              Permission.required.limit(Option.isSome(found) ? found.value.id : "*")
            )),
        { discard: true }
      )

    const missing = (ref: IdentityInput.IdentityRefInput) =>
      new NotFound({
        message: ref.identityId !== undefined
          ? `identityId: no identity ${JSON.stringify(ref.identityId)} in this workspace`
          : ref.externalId !== undefined
          ? `externalId: no identity ${JSON.stringify(ref.externalId)} in this workspace`
          : `identity: no identity ${JSON.stringify(ref.identity)} in this workspace`
      })

    /**
     * The identity an input names: by `identityId` when given, else by `externalId`, else by
     * `identity` (an id first; an externalId when no identity has that id).
     */
    const find = (principal: Principal, ref: IdentityInput.IdentityRefInput) =>
      Effect.flatMap(
        ref.identityId !== undefined
          ? catalog.getIdentity(principal.workspaceId, ref.identityId)
          : ref.externalId !== undefined
          ? catalog.findIdentityByExternalId(principal.workspaceId, ref.externalId)
          : Effect.flatMap(
            catalog.getIdentity(principal.workspaceId, ref.identity!),
            (byId) =>
              Option.isSome(byId)
                ? Effect.succeed(byId)
                : catalog.findIdentityByExternalId(principal.workspaceId, ref.identity!)
          ),
        (found) => Option.isNone(found) ? Effect.fail(missing(ref)) : Effect.succeed(found.value)
      )

    const limitsOf = (limits: IdentityInput.CreateIdentityInput["ratelimits"]) =>
      limits?.map((limit) => ({ ...limit, autoApply: limit.autoApply ?? false }))

    /** Creates an identity; an externalId the workspace has already is a conflict. */
    const create = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const request = yield* decodeCreate(input)
        yield* auth.authorize(principal, Permission.required.createIdentity())
        yield* authorizeLimits(principal, (request.ratelimits ?? []).map((limit) => limit.name))
        const now = yield* Clock.currentTimeMillis
        const ratelimits = limitsOf(request.ratelimits)
        const identity = new Identity({
          id: Ids.make(Ids.Prefix.identity, now),
          workspaceId: principal.workspaceId,
          externalId: request.externalId,
          enabled: request.enabled ?? true,
          ...(request.meta !== undefined ? { meta: request.meta } : {}),
          ...(ratelimits !== undefined && ratelimits.length > 0 ? { ratelimits } : {}),
          createdAt: now
        })
        const stored = yield* cache.write({}, catalog.ensureIdentity(identity))
        if (stored.id !== identity.id) {
          return yield* new Conflict({
            message: `externalId: the workspace has an identity ${JSON.stringify(request.externalId)} already`
          })
        }
        return IdentityInput.toIdentityView(stored)
      }).pipe(Span.span("Identities.create"))

    /** An identity, by id or external id. */
    const get = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const ref = yield* decodeRef(input)
        yield* auth.authorize(principal, Permission.required.readIdentity())
        return IdentityInput.toIdentityView(yield* find(principal, ref))
      }).pipe(Span.span("Identities.get"))

    /**
     * Up to `limit` identities after `after` (in id order) whose id or externalId contains
     * `search`, ignoring case, read from the catalog a batch at a time; and the workspace's total.
     */
    const matching = (workspaceId: string, search: string, after: string | undefined, limit: number) =>
      Effect.gen(function*() {
        const needle = search.toLowerCase()
        const found: Array<Identity> = []
        let total = 0
        let from = after
        while (found.length < limit) {
          const batch = yield* catalog.listIdentities(workspaceId, { after: from, limit: SEARCH_BATCH })
          total = batch.total
          for (const identity of batch.identities) {
            if (
              identity.id.toLowerCase().includes(needle) || identity.externalId.toLowerCase().includes(needle)
            ) {
              found.push(identity)
              if (found.length === limit) break
            }
          }
          if (batch.identities.length < SEARCH_BATCH) break
          from = batch.identities[batch.identities.length - 1]!.id
        }
        return { identities: found, total }
      })

    /**
     * The workspace's identities in creation order, a page at a time; with `search`, only those
     * whose id or externalId contains it, ignoring case. The catalog cannot search, so the matches
     * are found by paging through it (`matching`); cursors stay the last id answered.
     * `total` is always the workspace's count of identities, also with `search`: counting the
     * matches would mean reading every identity of the workspace on every page.
     */
    const list = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const request = yield* decodeList(input)
        yield* auth.authorize(principal, Permission.required.readIdentity())
        const cursor = request.cursor === undefined ? undefined : Cursor.decode(request.cursor, IDENTITY_ID)
        if (cursor === null || (cursor !== undefined && cursor.scope !== principal.workspaceId)) {
          return yield* new ValidationError({ message: "cursor: is not a cursor listIdentities returned" })
        }
        const limit = request.limit ?? IdentityInput.MAX_IDENTITY_PAGE
        const page = request.search === undefined
          ? yield* catalog.listIdentities(principal.workspaceId, { after: cursor?.after, limit: limit + 1 })
          : yield* matching(principal.workspaceId, request.search, cursor?.after, limit + 1)
        const identities = page.identities.slice(0, limit)
        return {
          identities: identities.map(IdentityInput.toIdentityView),
          total: page.total,
          ...(page.identities.length > limit
            ? { cursor: Cursor.encode(principal.workspaceId, identities[identities.length - 1]!.id) }
            : {})
        }
      }).pipe(Span.span("Identities.list"))

    /**
     * Changes an identity's meta, limits or enabled flag: its keys verify with them from the next
     * call (a disabled one's as UNAUTHORIZED).
     */
    const update = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const request = yield* decodeUpdate(input)
        yield* auth.authorize(principal, Permission.required.updateIdentity())
        if (request.ratelimits !== undefined) {
          yield* authorizeLimits(principal, request.ratelimits.map((limit) => limit.name))
        }
        const identity = yield* find(principal, request)
        const fields: Record<string, unknown> = { ...identity }
        if (request.enabled !== undefined) fields.enabled = request.enabled
        // `{}` clears, as null does: an identity's meta is answered as {} when it has none.
        if (request.meta === null || (request.meta !== undefined && Object.keys(request.meta).length === 0)) {
          delete fields.meta
        } else if (request.meta !== undefined) fields.meta = request.meta
        if (request.ratelimits !== undefined) {
          if (request.ratelimits.length === 0) delete fields.ratelimits
          else fields.ratelimits = limitsOf(request.ratelimits)
        }
        const updated = new Identity(fields as ConstructorParameters<typeof Identity>[0])
        const changed = yield* cache.write({ identityId: identity.id }, catalog.replaceIdentity(updated))
        if (!changed) return yield* missing(request)
        return IdentityInput.toIdentityView(updated)
      }).pipe(Span.span("Identities.update"))

    /** Deletes an identity; its keys stay, detached from it (their limits then count per key). */
    const remove = (principal: Principal, input: unknown) =>
      Effect.gen(function*() {
        const ref = yield* decodeRef(input)
        yield* auth.authorize(principal, Permission.required.deleteIdentity())
        const identity = yield* find(principal, ref)
        // Its keys change too: the catalog's revision makes every server forget what it remembers.
        if (!(yield* catalog.deleteIdentity(principal.workspaceId, identity.id))) return yield* missing(ref)
        return {}
      }).pipe(Span.span("Identities.delete"))

    return { ensure, authorizeLimits, create, get, list, update, delete: remove } as const
  })
}) {}

/** The ids of identities, as listIdentities cursors hold them. */
const IDENTITY_ID = /^id_[0-9A-Z]{26}$/

/** How many identities a search reads from the catalog at a time. */
const SEARCH_BATCH = 500
