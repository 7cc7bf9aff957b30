/**
 * The types of the promise facade: what `createKeymeter` (see `Embed`) takes, and the running
 * keymeter it resolves with, method by method.
 */
import type { CreateApiInput } from "@keymeter/core/Api"
import type { Apis } from "@keymeter/core/Apis"
import type { Datapoint } from "@keymeter/core/Datapoint"
import type { Identities } from "@keymeter/core/Identities"
import type {
  CreateIdentityInput,
  IdentityRefInput,
  ListIdentitiesInput,
  UpdateIdentityInput
} from "@keymeter/core/IdentityInput"
import type {
  CreateKeyInput,
  KeyIdInput,
  KeyPermissionsInput,
  KeyRolesInput,
  ListKeysInput,
  MigrateKeysInput,
  UpdateCreditsInput,
  UpdateKeyInput
} from "@keymeter/core/Key"
import type { Keys } from "@keymeter/core/Keys"
import type { KeyVerifier, VerifyKeyInput } from "@keymeter/core/KeyVerifier"
import type { LimitInput } from "@keymeter/core/Limit"
import type {
  DeleteOverrideInput,
  GetOverrideInput,
  ListOverridesInput,
  SetOverrideInput
} from "@keymeter/core/Override"
import type { Overrides } from "@keymeter/core/Overrides"
import type * as Provisioning from "@keymeter/core/Provisioning"
import type { RateLimiter } from "@keymeter/core/RateLimiter"
import type { RatelimitDatapoint, RatelimitQueryInput } from "@keymeter/core/RatelimitQuery"
import type { Rbac } from "@keymeter/core/Rbac"
import type { CreatePermissionInput, CreateRoleInput, PermissionIdInput, RoleIdInput } from "@keymeter/core/Role"
import type { Storage } from "@keymeter/core/Storage"
import type { VerificationInput } from "@keymeter/core/Verification"
import type { VerificationQueryInput } from "@keymeter/core/VerificationQuery"
import type { Verifications } from "@keymeter/core/Verifications"
import type * as Server from "@keymeter/http/Server"
import type * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type * as Schema from "effect/Schema"
import type { IncomingMessage, ServerResponse } from "node:http"

/** What `createKeymeter` accepts. */
export interface KeymeterOptions {
  /**
   * `"memory"` (the default), `"sqlite:<path>"`, `"postgres://user:pass@host:port/db"` (the catalog
   * servers share; with `analytics`), or an Effect layer providing the Storage port.
   */
  readonly storage?: string | Layer.Layer<Storage, unknown> | undefined
  /** `"clickhouse:http://host:8123/<database>"`: verifications there, the catalog in `storage` (a string). */
  readonly analytics?: string | undefined
  /**
   * With `analytics`: a local folder where recorded verifications are stored durably and
   * acknowledged, then shipped to ClickHouse together each second (ingest several times faster;
   * ClickHouse's answers lag by up to that second). Calls with an idempotency key go straight to ClickHouse.
   */
  readonly analyticsSpool?: string | undefined
  /**
   * With a storage string: whether SQL analytics asked while verifications and limits run go to a
   * thread of their own (default true; on memory it keeps a replica of the events, twice their memory).
   */
  readonly sqlWorker?: boolean | undefined
  /**
   * `"redis://host:port/db"`: rate-limit windows shared with every server naming the same Redis
   * (default: this process's own).
   */
  readonly ratelimit?: string | undefined
  /** When Redis fails: `"closed"` (default) rejects with SERVICE_UNAVAILABLE, `"local"` decides alone. */
  readonly ratelimitFallback?: "closed" | "local" | undefined
  /** The workspace the library methods act in; created if missing. Default `ws_default`. */
  readonly workspaceId?: string | undefined
  /** A provisioning document applied at creation (workspaces, root keys, apis, namespaces). */
  readonly provision?: Provisioning.ProvisioningDocument | undefined
  /** Limits of the request handler. */
  readonly http?: Server.Options | undefined
}

/** What a route takes from a caller: the encoded form of its input struct in core. */
type InputOf<S extends Schema.Schema.Any> = Schema.Schema.Encoded<S>

/** What a core service's method answers: the library's promise resolves with it. */
type Answer<F> = F extends (...args: ReadonlyArray<any>) => Effect.Effect<infer A, infer _E, infer _R> ? A : never

/** Array fields also take a single value. */
type OneOrMany<T> = {
  readonly [K in keyof T]: NonNullable<T[K]> extends ReadonlyArray<infer A> ? A | T[K] : T[K]
}

/** An analytics query as the library takes it: single values or arrays. */
export type VerificationsQuery = OneOrMany<InputOf<typeof VerificationQueryInput>>

/** A rate-limit analytics query as the library takes it: single values or arrays, the namespace by id or name. */
export type RatelimitsQuery = OneOrMany<ByNamespace<typeof RatelimitQueryInput>>

/** A namespace, by id or by name. */
export type NamespaceRef = { readonly namespaceId: string; readonly namespaceName?: string } | {
  readonly namespaceId?: string
  readonly namespaceName: string
}

/** The input of a route naming a namespace, which must be named one way or the other. */
type ByNamespace<S extends Schema.Schema.Any> = Omit<InputOf<S>, "namespaceId" | "namespaceName"> & NamespaceRef

/** Options of a write. */
export interface WriteOptions {
  /**
   * Makes the write safe to retry: a repeat with the same key and input within the window (24
   * hours by default) answers what the first answered and changes nothing; another input under
   * the key fails with `IDEMPOTENCY_KEY_REUSED`. 1 to 255 visible ASCII characters (no space, `"`
   * or `\`), scoped to the workspace.
   */
  readonly idempotencyKey?: string | undefined
}

/** A running keymeter. */
export interface Keymeter {
  /** The workspace the library methods act in. */
  readonly workspaceId: string
  /** The workspace's rate-limit namespaces, by name. */
  readonly listNamespaces: () => Promise<Answer<Overrides["namespaces"]>>
  /** The workspace's apis, by id. */
  readonly listApis: () => Promise<Answer<Apis["list"]>>
  /** Creates an api; verifications are recorded against it. */
  readonly createApi: (
    input: InputOf<typeof CreateApiInput>,
    options?: WriteOptions
  ) => Promise<Answer<Apis["create"]>>
  /**
   * Records 1 to 10,000 verifications, all or nothing; resolves once they are stored. With an
   * `idempotencyKey`, a retry of the same batch answers the same and stores nothing again.
   */
  readonly record: (
    verifications: ReadonlyArray<VerificationInput>,
    options?: WriteOptions
  ) => Promise<Answer<Verifications["record"]>>
  /** Keys this workspace issues and verifies, as the `keys.*` routes answer. */
  readonly keys: {
    /** A new key: its secret is in this answer only. */
    readonly create: (
      input: InputOf<typeof CreateKeyInput>,
      options?: WriteOptions
    ) => Promise<Answer<Keys["create"]>>
    /**
     * Verifies a key and records the verification (with `durable`, once it is stored). Answers
     * one of the nine codes; rejects only for a malformed request.
     */
    readonly verify: (
      input: InputOf<typeof VerifyKeyInput>,
      options?: { readonly durable?: boolean | undefined }
    ) => Promise<Answer<KeyVerifier["verify"]>>
    readonly get: (input: InputOf<typeof KeyIdInput>) => Promise<Answer<Keys["get"]>>
    readonly list: (input: InputOf<typeof ListKeysInput>) => Promise<Answer<Keys["list"]>>
    /** Changes the fields given; `null` clears one. */
    readonly update: (input: InputOf<typeof UpdateKeyInput>) => Promise<Answer<Keys["update"]>>
    readonly delete: (input: InputOf<typeof KeyIdInput>) => Promise<void>
    readonly updateCredits: (
      input: InputOf<typeof UpdateCreditsInput>,
      options?: WriteOptions
    ) => Promise<Answer<Keys["updateCredits"]>>
    /** Imports keys made elsewhere by their secret or its SHA-256 (hex), all or none. */
    readonly migrate: (input: InputOf<typeof MigrateKeysInput>) => Promise<Answer<Keys["migrate"]>>
    /** Gives (`add`), replaces (`set`) or takes (`remove`) permissions a key holds itself. */
    readonly changePermissions: (
      op: "add" | "set" | "remove",
      input: InputOf<typeof KeyPermissionsInput>
    ) => Promise<Answer<Keys["changePermissions"]>>
    /** Gives, replaces or takes a key's roles. */
    readonly changeRoles: (
      op: "add" | "set" | "remove",
      input: InputOf<typeof KeyRolesInput>
    ) => Promise<Answer<Keys["changeRoles"]>>
  }
  /** The workspace's permissions and roles (roles hold permissions; keys hold both). */
  readonly rbac: {
    readonly createPermission: (
      input: InputOf<typeof CreatePermissionInput>
    ) => Promise<Answer<Rbac["createPermission"]>>
    readonly getPermission: (input: InputOf<typeof PermissionIdInput>) => Promise<Answer<Rbac["getPermission"]>>
    readonly listPermissions: () => Promise<Answer<Rbac["listPermissions"]>>
    /** Deletes a permission: every key and role holding it loses it. */
    readonly deletePermission: (input: InputOf<typeof PermissionIdInput>) => Promise<void>
    readonly createRole: (input: InputOf<typeof CreateRoleInput>) => Promise<Answer<Rbac["createRole"]>>
    readonly getRole: (input: InputOf<typeof RoleIdInput>) => Promise<Answer<Rbac["getRole"]>>
    readonly listRoles: () => Promise<Answer<Rbac["listRoles"]>>
    /** Deletes a role: every key holding it loses it. */
    readonly deleteRole: (input: InputOf<typeof RoleIdInput>) => Promise<void>
  }
  /**
   * The end customers keys belong to (created here, or with the first key of an `externalId`),
   * named by `identityId` or `externalId`.
   */
  readonly identities: {
    /** Creates an identity; an `externalId` the workspace has already rejects with CONFLICT. */
    readonly create: (input: InputOf<typeof CreateIdentityInput>) => Promise<Answer<Identities["create"]>>
    readonly get: (input: InputOf<typeof IdentityRefInput>) => Promise<Answer<Identities["get"]>>
    /** A page of the workspace's identities; pass the returned `cursor` for the next. */
    readonly list: (input?: InputOf<typeof ListIdentitiesInput>) => Promise<Answer<Identities["list"]>>
    /**
     * Changes an identity's meta, shared limits or enabled flag: a disabled one's keys verify as
     * UNAUTHORIZED.
     */
    readonly update: (input: InputOf<typeof UpdateIdentityInput>) => Promise<Answer<Identities["update"]>>
    /** Deletes an identity; its keys stay, without it. */
    readonly delete: (input: InputOf<typeof IdentityRefInput>) => Promise<void>
  }
  /** Verification counts, exactly as `GET /v1/analytics.getVerifications` answers them. */
  readonly getVerifications: (query: VerificationsQuery) => Promise<Array<Datapoint>>
  /**
   * Rate-limit decision counts (passed, blocked) of a namespace, exactly as
   * `GET /v1/analytics.getRatelimits` answers them.
   */
  readonly getRatelimits: (query: RatelimitsQuery) => Promise<Array<RatelimitDatapoint>>
  /**
   * Runs a SQL query of the subset over the workspace's verifications (`key_verifications_v1` and
   * its rollups), as `POST /v2/analytics.getVerifications` does: its rows, keyed by column name.
   */
  readonly queryVerifications: (query: string) => Promise<Array<Record<string, unknown>>>
  /** Runs a SQL query over the workspace's rate-limit decisions (`ratelimits_v1` and its rollups). */
  readonly queryRatelimits: (query: string) => Promise<Array<Record<string, unknown>>>
  /** Creates or overwrites the override of an identifier in a namespace. */
  readonly setOverride: (
    input: InputOf<typeof SetOverrideInput>,
    options?: WriteOptions
  ) => Promise<Answer<Overrides["set"]>>
  /** The override of exactly an identifier, or with `resolve: true` the one that applies to it. */
  readonly getOverride: (input: ByNamespace<typeof GetOverrideInput>) => Promise<Answer<Overrides["get"]>>
  /** A page of a namespace's overrides; pass the returned `cursor` for the next. */
  readonly listOverrides: (input: ByNamespace<typeof ListOverridesInput>) => Promise<Answer<Overrides["list"]>>
  /** Deletes an override; it never applies again. */
  readonly deleteOverride: (input: ByNamespace<typeof DeleteOverrideInput>) => Promise<void>
  /** Takes `cost` (default 1) from an identifier's sliding window, applying the override that resolves. */
  readonly limit: (input: InputOf<typeof LimitInput>) => Promise<Answer<RateLimiter["limit"]>>
  /** Creates a root key for the HTTP API; the secret is returned here only. */
  readonly createRootKey: (input: {
    readonly permissions: ReadonlyArray<string>
    readonly name?: string | undefined
  }) => Promise<{ readonly id: string; readonly key: string }>
  /** Applies a provisioning document. */
  readonly provision: (document: Provisioning.ProvisioningDocument) => Promise<Provisioning.Applied>
  /**
   * A `(req, res)` handler serving the /v1 API, /docs and /openapi.json. With `prefix`, requests
   * outside it are answered 404 (or passed to `next` when given, as Express does), and the prefix is
   * stripped. Mount it before any body parser: it reads the body itself.
   */
  readonly handler: (options?: { readonly prefix?: string | undefined }) => (
    req: IncomingMessage,
    res: ServerResponse,
    next?: (error?: unknown) => void
  ) => void
  /** Stops accepting calls and releases the storage. */
  readonly close: () => Promise<void>
}
