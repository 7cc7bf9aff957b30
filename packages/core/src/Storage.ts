/**
 * The Storage port, in parts that adapters provide together or apart:
 * - {@link VerificationStore}: verification events and their aggregation, pushed down to the
 *   adapter (a columnar scan, a SQL `GROUP BY`), never handed to core as raw events;
 * - {@link RatelimitStore}: rate-limit decisions, counted the same way (and kept where the
 *   verifications are);
 * - {@link Catalog}: workspaces, root keys, apis, namespaces, overrides, keys, identities and
 *   credits.
 * A SQLite file can hold both; a ClickHouse server can hold the events while the catalog stays in
 * SQLite.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { AggregationQuery, AggregationResult } from "./Aggregation.js"
import type { Api } from "./Api.js"
import type { CatalogPart } from "./CatalogPart.js"
import type { IdempotencyKeyInUse, QueryTooLarge, StorageError } from "./Errors.js"
import type { RatelimitColumns, ScanScope, VerificationColumns } from "./EventScan.js"
import type { Receipt } from "./Idempotency.js"
import type { Credits, Identity, Key } from "./Key.js"
import type { Namespace } from "./Namespace.js"
import type { Override } from "./Override.js"
import type { OverrideHits, RatelimitEvent } from "./RatelimitEvent.js"
import type { KeyPermission, Role } from "./Role.js"
import type { RootKey } from "./RootKey.js"
import type { Verification } from "./Verification.js"
import type { Workspace } from "./Workspace.js"

export { StorageError } from "./Errors.js"

/** Where verifications are kept and aggregated. */
export class VerificationStore extends Context.Tag("@keymeter/core/VerificationStore")<
  VerificationStore,
  {
    /**
     * Stores a batch. It completes once the batch is durable for the adapter's promise (committed
     * for SQLite) and is all or nothing: on failure none of the batch is stored. With a `receipt`,
     * the receipt is stored with the batch: both or neither (SQLite: one transaction; memory: one
     * step; ClickHouse: claimed before the insert and settled after, see its adapter). Callers
     * check {@link findReceipt} first, under a lock per key; should a live receipt for the key
     * exist all the same (another process), the append fails and stores nothing.
     */
    readonly append: (events: ReadonlyArray<Verification>, receipt?: Receipt) => Effect.Effect<void, StorageError>
    /**
     * The receipt of `key` in the workspace, unless it expired by `now`. Fails with
     * `IdempotencyKeyInUse` when a write under the key was begun and its outcome is not known
     * (only adapters that cannot store a receipt with its batch atomically).
     */
    readonly findReceipt: (
      workspaceId: string,
      key: string,
      now: number
    ) => Effect.Effect<Option.Option<Receipt>, StorageError | IdempotencyKeyInUse>
    /** Counts matching events per (time bucket, group); see `Aggregation` for the contract. */
    readonly aggregate: (query: AggregationQuery) => Effect.Effect<AggregationResult, StorageError | QueryTooLarge>
    /**
     * The scope's verifications as raw columns, for SQL analytics (see `EventScan`). Fails with
     * `QueryTooLarge` when the scope holds more than `scope.maxRows` rows.
     */
    readonly scan?: (
      scope: ScanScope
    ) => Effect.Effect<ReadonlyArray<VerificationColumns>, StorageError | QueryTooLarge>
    /**
     * Bytes each row of `scan`'s answer holds in this process, where the store builds the batches
     * for the scan (SQLite's pages, ClickHouse's answer); absent where they are views of rows it
     * holds anyway (memory). SQL analytics bound a scan's rows by the query's memory budget with it.
     */
    readonly scanRowBytes?: number | undefined
    /**
     * Where `aggregate` counts exactly the events `scan` reads, from the time this gives on (unix
     * ms; memory: all, SQLite: its raw events' retention), SQL analytics read counts in place of
     * events for the questions counts answer. Absent: they always read events (ClickHouse, which
     * runs the queries itself).
     */
    readonly scanCountsFrom?: Effect.Effect<number> | undefined
    /**
     * The apis of a workspace it holds counts of (`scanCountsFrom`): SQL analytics over every api
     * read their counts api by api. Absent: such queries read events.
     */
    readonly countedIn?: ((workspaceId: string) => Effect.Effect<ReadonlyArray<string>>) | undefined
    /**
     * Whether `aggregate` sums spent credits when asked (`AggregationQuery.sumCredits`): SQL
     * analytics then read counts for sums of credits too. Absent: never asked.
     */
    readonly sumsCredits?: boolean | undefined
    /**
     * A number that changes whenever what `aggregate` answers may change (each stored batch), so
     * callers can reuse an answer while it holds. Only adapters that alone write their data have
     * it (memory, SQLite); it is absent where other processes write too (ClickHouse).
     */
    readonly revision?: (() => number) | undefined
  }
>() {}

/**
 * Where rate-limit decisions are kept and counted. Counts follow `RatelimitEvent`'s projection onto
 * verifications: `aggregate` takes and answers the projected query (namespace as api, identifier as
 * key, override as identity, passed/blocked as valid/rateLimited), so an adapter counts decisions
 * with the same machinery (and speed) as verifications.
 */
export class RatelimitStore extends Context.Tag("@keymeter/core/RatelimitStore")<
  RatelimitStore,
  {
    /** Stores a batch, all or nothing, durable for the adapter's promise (as `VerificationStore.append`). */
    readonly append: (events: ReadonlyArray<RatelimitEvent>) => Effect.Effect<void, StorageError>
    /** Counts matching decisions, in the projection's terms; see `Aggregation` for the contract. */
    readonly aggregate: (query: AggregationQuery) => Effect.Effect<AggregationResult, StorageError | QueryTooLarge>
    /**
     * Of the workspace's overrides `overrideIds`, those that decided anything: how many decisions,
     * and the last one's time (an override of a pattern namespace decides in the namespaces it matches).
     */
    readonly overrideHits: (
      workspaceId: string,
      overrideIds: ReadonlyArray<string>
    ) => Effect.Effect<ReadonlyMap<string, OverrideHits>, StorageError>
    /**
     * The namespace's latest decisions still held in full, newest first (of `identifier` only, when
     * given): adapters keep every decision's details for a bounded time or number, and counts for good.
     */
    readonly decisions: (
      workspaceId: string,
      namespaceId: string,
      options: { readonly limit: number; readonly identifier?: string | undefined }
    ) => Effect.Effect<ReadonlyArray<RatelimitEvent>, StorageError>
    /** The scope's decisions as raw columns, for SQL analytics (as `VerificationStore.scan`). */
    readonly scan?: (
      scope: ScanScope
    ) => Effect.Effect<ReadonlyArray<RatelimitColumns>, StorageError | QueryTooLarge>
    /** As `VerificationStore.scanRowBytes`. */
    readonly scanRowBytes?: number | undefined
    /** As `VerificationStore.scanCountsFrom`, for decisions. */
    readonly scanCountsFrom?: Effect.Effect<number> | undefined
    /** As `VerificationStore.countedIn`: the namespaces of a workspace it holds counts of. */
    readonly countedIn?: ((workspaceId: string) => Effect.Effect<ReadonlyArray<string>>) | undefined
    /** As `VerificationStore.revision`: changes with each stored batch; absent where others write too. */
    readonly revision?: (() => number) | undefined
  }
>() {}

/** Outcome of writing a catalog entry whose id or unique name may belong to someone else. */
export type PutResult = "created" | "updated" | "conflict"

/** Values an override upsert writes. */
export interface OverrideWrite {
  /** Used only when the (namespace, identifier) pair has no override yet. */
  readonly id: string
  readonly namespaceId: string
  readonly identifier: string
  readonly limit: number
  readonly duration: number
  readonly async: boolean
  readonly now: number
}

/**
 * Workspaces, root keys, apis, namespaces, overrides, keys, identities and credits. Reads are
 * scoped to a workspace (but a key's lookup by hash, which finds its workspace).
 */
export class Catalog extends Context.Tag("@keymeter/core/Catalog")<
  Catalog,
  {
    /** True when no workspace exists yet (first start). */
    readonly isEmpty: Effect.Effect<boolean, StorageError>
    /** Creates or renames a workspace. */
    readonly putWorkspace: (workspace: Workspace) => Effect.Effect<PutResult, StorageError>
    readonly getWorkspace: (id: string) => Effect.Effect<Option.Option<Workspace>, StorageError>
    /** Every workspace, by id (for the admin CLI). */
    readonly listWorkspaces: Effect.Effect<ReadonlyArray<Workspace>, StorageError>
    /** Creates a root key, or updates the one with the same hash (keeping its id); conflict in another workspace. */
    readonly putRootKey: (key: RootKey) => Effect.Effect<PutResult, StorageError>
    readonly findRootKeyByHash: (hash: string) => Effect.Effect<Option.Option<RootKey>, StorageError>
    readonly listRootKeys: (workspaceId: string) => Effect.Effect<ReadonlyArray<RootKey>, StorageError>
    /** Deletes a root key; false when the workspace has no such key. */
    readonly deleteRootKey: (workspaceId: string, id: string) => Effect.Effect<boolean, StorageError>
    /** Creates or renames an api; conflict when the id belongs to another workspace. */
    readonly putApi: (api: Api) => Effect.Effect<PutResult, StorageError>
    readonly getApi: (workspaceId: string, id: string) => Effect.Effect<Option.Option<Api>, StorageError>
    /** The workspace's apis, by id. */
    readonly listApis: (workspaceId: string) => Effect.Effect<ReadonlyArray<Api>, StorageError>
    /**
     * Creates or renames a namespace by id; conflict when the id belongs to another workspace or
     * the name to another namespace.
     */
    readonly putNamespace: (namespace: Namespace) => Effect.Effect<PutResult, StorageError>
    /** Returns the namespace named `namespace.name`, creating it with `namespace.id` if there is none. */
    readonly ensureNamespace: (namespace: Namespace) => Effect.Effect<Namespace, StorageError>
    readonly getNamespace: (workspaceId: string, id: string) => Effect.Effect<Option.Option<Namespace>, StorageError>
    readonly findNamespaceByName: (
      workspaceId: string,
      name: string
    ) => Effect.Effect<Option.Option<Namespace>, StorageError>
    /**
     * Creates the override of (namespace, identifier), or updates its limit, duration, async and
     * updatedAt keeping its id and createdAt. Atomic: concurrent calls leave exactly one override.
     */
    readonly upsertOverride: (write: OverrideWrite) => Effect.Effect<Override, StorageError>
    /** The override of exactly (namespace, identifier). */
    readonly getOverride: (
      namespaceId: string,
      identifier: string
    ) => Effect.Effect<Option.Option<Override>, StorageError>
    /** Deletes the override of (namespace, identifier); false when there was none. */
    readonly deleteOverride: (namespaceId: string, identifier: string) => Effect.Effect<boolean, StorageError>
    /**
     * A page of a namespace's overrides in id order (ids sort by creation), those with an id after
     * `after`; and how many the namespace holds.
     */
    readonly listOverrides: (
      namespaceId: string,
      page: { readonly after: string | undefined; readonly limit: number }
    ) => Effect.Effect<{ readonly overrides: ReadonlyArray<Override>; readonly total: number }, StorageError>
    /** Every override of a namespace, to build its resolution index. */
    readonly allOverrides: (namespaceId: string) => Effect.Effect<ReadonlyArray<Override>, StorageError>
    /** The namespaces of a workspace, by name. */
    readonly listNamespaces: (workspaceId: string) => Effect.Effect<ReadonlyArray<Namespace>, StorageError>
    /** The namespaces of a workspace whose names hold `*`. */
    readonly namespacePatterns: (workspaceId: string) => Effect.Effect<ReadonlyArray<Namespace>, StorageError>
    /** Returns the identity of (workspace, externalId), creating `identity` if there is none. */
    readonly ensureIdentity: (identity: Identity) => Effect.Effect<Identity, StorageError>
    readonly getIdentity: (workspaceId: string, id: string) => Effect.Effect<Option.Option<Identity>, StorageError>
    readonly findIdentityByExternalId: (
      workspaceId: string,
      externalId: string
    ) => Effect.Effect<Option.Option<Identity>, StorageError>
    /**
     * Replaces an identity's enabled flag, meta and limits (its external id stays); false when the
     * workspace has no such identity.
     */
    readonly replaceIdentity: (identity: Identity) => Effect.Effect<boolean, StorageError>
    /** A workspace's identities in id order after `after`, with how many it has. */
    readonly listIdentities: (
      workspaceId: string,
      page: { readonly after: string | undefined; readonly limit: number }
    ) => Effect.Effect<{ readonly identities: ReadonlyArray<Identity>; readonly total: number }, StorageError>
    /** Deletes an identity, its keys detached from it, in one step; false when the workspace has none such. */
    readonly deleteIdentity: (workspaceId: string, id: string) => Effect.Effect<boolean, StorageError>
    /** Stores a new permission; conflict when its id, name or slug is the workspace's already. */
    readonly putPermission: (permission: KeyPermission) => Effect.Effect<"created" | "conflict", StorageError>
    readonly getPermission: (
      workspaceId: string,
      id: string
    ) => Effect.Effect<Option.Option<KeyPermission>, StorageError>
    /** The workspace's permissions whose slug or name is one of `names`. */
    readonly findPermissions: (
      workspaceId: string,
      names: ReadonlyArray<string>
    ) => Effect.Effect<ReadonlyArray<KeyPermission>, StorageError>
    /** The workspace's permissions, by id. */
    readonly listPermissions: (workspaceId: string) => Effect.Effect<ReadonlyArray<KeyPermission>, StorageError>
    /**
     * Deletes a permission, taken from every key and role holding it, in one step; false when the
     * workspace has no such permission.
     */
    readonly deletePermission: (workspaceId: string, id: string) => Effect.Effect<boolean, StorageError>
    /** Stores a new role; conflict when its id or name is the workspace's already. */
    readonly putRole: (role: Role) => Effect.Effect<"created" | "conflict", StorageError>
    readonly getRole: (workspaceId: string, id: string) => Effect.Effect<Option.Option<Role>, StorageError>
    /** The workspace's roles whose name is one of `names`. */
    readonly findRoles: (
      workspaceId: string,
      names: ReadonlyArray<string>
    ) => Effect.Effect<ReadonlyArray<Role>, StorageError>
    /** The workspace's roles, by id. */
    readonly listRoles: (workspaceId: string) => Effect.Effect<ReadonlyArray<Role>, StorageError>
    /** Deletes a role, taken from every key holding it, in one step; false when the workspace has none such. */
    readonly deleteRole: (workspaceId: string, id: string) => Effect.Effect<boolean, StorageError>
    /**
     * Stores new keys, each with its first balance when it has credits, all or none: conflict (and
     * nothing stored) when an id or hash exists or repeats.
     */
    readonly insertKeys: (
      entries: ReadonlyArray<{ readonly key: Key; readonly credits: Credits | undefined }>
    ) => Effect.Effect<"created" | "conflict", StorageError>
    /** Stores a new key, with its first balance when it has credits; conflict when its id or hash exists. */
    readonly insertKey: (key: Key, credits: Credits | undefined) => Effect.Effect<"created" | "conflict", StorageError>
    /**
     * Replaces a key's configuration (same id, workspace and hash), and its balance: `keep` it, set
     * it, or `clear` it (a key without credits). False when the key no longer exists.
     */
    readonly replaceKey: (
      key: Key,
      credits: "keep" | "clear" | Credits
    ) => Effect.Effect<boolean, StorageError>
    /** The key whose secret hashes to `hash`, in any workspace. */
    readonly findKeyByHash: (hash: string) => Effect.Effect<Option.Option<Key>, StorageError>
    readonly getKey: (workspaceId: string, id: string) => Effect.Effect<Option.Option<Key>, StorageError>
    /**
     * A page of an api's keys in id order (ids sort by creation), after `after`, of one identity
     * when `identityId` is given; and how many match.
     */
    readonly listKeys: (
      workspaceId: string,
      apiId: string,
      page: { readonly after: string | undefined; readonly limit: number; readonly identityId?: string | undefined }
    ) => Effect.Effect<{ readonly keys: ReadonlyArray<Key>; readonly total: number }, StorageError>
    /** Deletes a key and its credits; false when the workspace has no such key. */
    readonly deleteKey: (workspaceId: string, id: string) => Effect.Effect<boolean, StorageError>
    /** Deletes an api's keys and their credits, in one step; how many there were. */
    readonly deleteKeysOfApi: (workspaceId: string, apiId: string) => Effect.Effect<number, StorageError>
    /** Deletes an api with its keys, in one step; false when the workspace has no such api. */
    readonly deleteApi: (workspaceId: string, id: string) => Effect.Effect<boolean, StorageError>
    /** A key's balance; none when it has no credits (or no longer exists). */
    readonly getCredits: (keyId: string) => Effect.Effect<Option.Option<Credits>, StorageError>
    /**
     * Takes `cost` from a key's balance if it holds that much, in one atomic step, after refilling
     * it when `refill` says a refill is due (a balance last refilled before `refill.since` is set
     * to `refill.amount`, refilled at `now`). The balance afterwards, and whether `cost` was taken;
     * none when the key has no credits. Not a catalog change: `revision` stays.
     */
    readonly spendCredits: (
      keyId: string,
      cost: number,
      refill: { readonly since: number; readonly amount: number } | undefined,
      now: number
    ) => Effect.Effect<Option.Option<{ readonly spent: boolean; readonly remaining: number }>, StorageError>
    /**
     * Sets, increments or decrements (not below 0) a key's balance in one atomic step; none when
     * the key has no credits.
     */
    readonly changeCredits: (
      keyId: string,
      op: "set" | "increment" | "decrement",
      value: number
    ) => Effect.Effect<Option.Option<Credits>, StorageError>
    /**
     * A number per part of the catalog (see `CatalogPart`) that changes whenever that part may have
     * changed (it may change more often), read without I/O, so what was read of it (root keys,
     * apis, namespaces, keys) can be reused while it holds; absent when the adapter cannot tell
     * (every read then goes to it). Override writes move no part, credits neither.
     */
    readonly revision?: ((part: CatalogPart) => number) | undefined
    /**
     * A number that changes when another process (another server) changed overrides or
     * namespaces, read without I/O: this process's `Overrides` applies its own changes to what it
     * remembers. Absent when the catalog is this process's alone.
     */
    readonly foreignOverridesRevision?: (() => number) | undefined
  }
>() {}

/** Every part of the port. */
export type Storage = VerificationStore | RatelimitStore | Catalog
