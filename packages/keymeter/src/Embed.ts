/**
 * keymeter for Node services that do not use Effect: `createKeymeter()` returns promise methods
 * and a request handler to mount in an existing `node:http` or Express server.
 *
 * ```ts
 * const keymeter = await createKeymeter({ storage: "memory" })
 * const { apiId } = await keymeter.createApi({ name: "main" })
 * await keymeter.record([{ apiId, keyId: "key_1", outcome: "valid" }])
 * const perDay = await keymeter.getVerifications({ apiId, groupBy: "day" })
 * ```
 */
import { Analytics } from "@keymeter/core/Analytics"
import type { CreateApiInput } from "@keymeter/core/Api"
import { Apis } from "@keymeter/core/Apis"
import * as Auth from "@keymeter/core/Auth"
import type { Datapoint } from "@keymeter/core/Datapoint"
import * as Decision from "@keymeter/core/Decision"
import { Identities } from "@keymeter/core/Identities"
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
import { Keys } from "@keymeter/core/Keys"
import type { VerifyKeyInput } from "@keymeter/core/KeyVerifier"
import { KeyVerifier } from "@keymeter/core/KeyVerifier"
import type { LimitInput } from "@keymeter/core/Limit"
import type {
  DeleteOverrideInput,
  GetOverrideInput,
  ListOverridesInput,
  SetOverrideInput
} from "@keymeter/core/Override"
import { Overrides } from "@keymeter/core/Overrides"
import * as Provisioning from "@keymeter/core/Provisioning"
import { RatelimitAnalytics } from "@keymeter/core/RatelimitAnalytics"
import { RateLimiter } from "@keymeter/core/RateLimiter"
import type { RatelimitDatapoint } from "@keymeter/core/RatelimitQuery"
import { RatelimitQueryInput } from "@keymeter/core/RatelimitQuery"
import { Rbac } from "@keymeter/core/Rbac"
import type { CreatePermissionInput, CreateRoleInput, PermissionIdInput, RoleIdInput } from "@keymeter/core/Role"
import * as RootKey from "@keymeter/core/RootKey"
import type { Storage } from "@keymeter/core/Storage"
import { Catalog } from "@keymeter/core/Storage"
import { fieldKinds } from "@keymeter/core/Validation"
import type { VerificationInput } from "@keymeter/core/Verification"
import { VerificationQueryInput } from "@keymeter/core/VerificationQuery"
import { Verifications } from "@keymeter/core/Verifications"
import { Workspace } from "@keymeter/core/Workspace"
import { Dashboard } from "@keymeter/dashboard"
import * as Errors from "@keymeter/http/Errors"
import * as RequestContext from "@keymeter/http/RequestContext"
import * as SafeHeaders from "@keymeter/http/SafeHeaders"
import * as Server from "@keymeter/http/Server"
import { SqlAnalytics } from "@keymeter/sql/SqlAnalytics"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import type { IncomingMessage, ServerResponse } from "node:http"
import * as StorageSpec from "./StorageSpec.js"

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

/** Wraps single values of `struct`'s array fields in arrays. */
const oneOrMany = (struct: Schema.Schema.AnyNoContext) => {
  const arrays = Object.entries(fieldKinds(struct)).filter(([, kind]) => kind === "array").map(([name]) => name)
  return (input: object): object => {
    const out: Record<string, unknown> = { ...input }
    for (const name of arrays) {
      const value = out[name]
      if (value !== undefined && !Array.isArray(value)) out[name] = [value]
    }
    return out
  }
}

const verificationsQuery = oneOrMany(VerificationQueryInput)
const ratelimitsQuery = oneOrMany(RatelimitQueryInput)

/** A failure of a library call, with the code and status the HTTP API would answer. */
export class KeymeterError extends Error {
  override readonly name = "KeymeterError"
  constructor(readonly code: Errors.Code, message: string, options?: { readonly cause?: unknown }) {
    super(message, options)
  }
  /** The HTTP status of {@link code}. */
  get status(): number {
    return Errors.Codes[this.code].status
  }
}

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

const toError = (cause: Cause.Cause<unknown>): KeymeterError => {
  const failure = Cause.failureOption(cause)
  if (Option.isNone(failure)) {
    return new KeymeterError("INTERNAL_SERVER_ERROR", "keymeter failed unexpectedly", { cause: Cause.squash(cause) })
  }
  const error = failure.value as { readonly _tag?: string; readonly message?: string } | null
  if (typeof error === "object" && error !== null && Object.hasOwn(Errors.DomainCodes, error._tag ?? "")) {
    const wire = Errors.toWire(error as Errors.DomainError)
    return new KeymeterError(wire.code, wire.message, { cause: error })
  }
  // A storage string naming an adapter that is not installed, or a bad URL in it, is the caller's.
  if (error instanceof StorageSpec.InvalidStorageSpec) {
    return new KeymeterError("BAD_REQUEST", error.message, { cause: error })
  }
  // Failures outside the domain (a storage that cannot be opened, say) keep their own message.
  return new KeymeterError("INTERNAL_SERVER_ERROR", error?.message ?? String(error), { cause: error })
}

/** Starts keymeter in this process. */
export const createKeymeter = async (options: KeymeterOptions = {}): Promise<Keymeter> => {
  let storage: Layer.Layer<Storage, unknown>
  if (options.storage === undefined || typeof options.storage === "string") {
    const spec = StorageSpec.parse(options.storage ?? "memory")
    if (spec instanceof StorageSpec.InvalidStorageSpec) throw new KeymeterError("BAD_REQUEST", spec.message)
    if (options.analyticsSpool !== undefined && options.analytics === undefined) {
      throw new KeymeterError("BAD_REQUEST", "analyticsSpool goes with analytics")
    }
    const analytics = options.analytics === undefined
      ? undefined
      : StorageSpec.parseAnalytics(options.analytics, options.analyticsSpool)
    if (analytics instanceof StorageSpec.InvalidStorageSpec) throw new KeymeterError("BAD_REQUEST", analytics.message)
    storage = StorageSpec.layer(spec, { analytics, sqlWorker: options.sqlWorker })
  } else {
    if (options.analytics !== undefined || options.analyticsSpool !== undefined) {
      throw new KeymeterError(
        "BAD_REQUEST",
        "analytics goes with a storage string; a storage layer provides both halves itself"
      )
    }
    storage = options.storage
  }
  let http = options.http
  if (options.ratelimit !== undefined) {
    const ratelimit = StorageSpec.parseRatelimit(options.ratelimit, options.ratelimitFallback)
    if (ratelimit instanceof StorageSpec.InvalidStorageSpec) throw new KeymeterError("BAD_REQUEST", ratelimit.message)
    http = { ...http, windows: StorageSpec.windowsLayer(ratelimit) }
  }
  // ClickHouse takes few large inserts better than many small ones: verifications batched a second.
  if (options.analytics !== undefined && http?.recordDelayMs === undefined) {
    http = { ...http, recordDelayMs: StorageSpec.CLICKHOUSE_RECORD_DELAY_MS }
  }
  http = { ...http, pages: http?.pages ?? Dashboard.make() }
  const workspaceId = options.workspaceId ?? Provisioning.DEFAULT_WORKSPACE_ID
  const principal = Auth.system(workspaceId)

  const AppLive = Server.AppLive(http).pipe(Layer.provideMerge(storage))
  const runtime = ManagedRuntime.make(AppLive)
  const run = async <A, E>(effect: Effect.Effect<A, E, Layer.Layer.Success<typeof AppLive>>): Promise<A> => {
    const exit = await runtime.runPromiseExit(effect)
    if (Exit.isSuccess(exit)) return exit.value
    throw toError(exit.cause)
  }

  let nodeHandler: (req: IncomingMessage, res: ServerResponse) => void
  let verifier: KeyVerifier
  let closed = false
  try {
    nodeHandler = await run(Effect.gen(function*() {
      const catalog = yield* Catalog
      if (Option.isNone(yield* catalog.getWorkspace(workspaceId))) {
        yield* catalog.putWorkspace(new Workspace({ id: workspaceId, name: workspaceId }))
      }
      if (options.provision !== undefined) {
        yield* Provisioning.apply(yield* Provisioning.decode(options.provision))
      }
      verifier = yield* KeyVerifier
      return yield* Server.makeNodeHandler(http)
    }))
  } catch (error) {
    await runtime.dispose()
    throw error
  }

  return {
    workspaceId,
    createApi: (input, options) => run(Effect.flatMap(Apis, (apis) => apis.create(principal, input, options))),
    listApis: () => run(Effect.flatMap(Apis, (apis) => apis.list(principal))),
    listNamespaces: () => run(Effect.flatMap(Overrides, (overrides) => overrides.namespaces(principal))),
    record: (verifications, options) =>
      run(Effect.flatMap(Verifications, (service) => service.record(principal, verifications, options))),
    getVerifications: (query) =>
      // A copy: a remembered answer is shared (and frozen), and callers may sort theirs.
      run(Effect.flatMap(Analytics, (analytics) => analytics.getVerifications(principal, verificationsQuery(query))))
        .then((answer) => Array.from(answer)),
    getRatelimits: (query) =>
      run(
        Effect.flatMap(RatelimitAnalytics, (analytics) => analytics.getRatelimits(principal, ratelimitsQuery(query)))
      ).then((answer) => Array.from(answer)),
    queryVerifications: (query) =>
      run(Effect.flatMap(SqlAnalytics, (sql) => sql.getVerifications(principal, { query })))
        .then((answer) => Array.from(answer.rows)),
    queryRatelimits: (query) =>
      run(Effect.flatMap(SqlAnalytics, (sql) => sql.getRatelimits(principal, { query })))
        .then((answer) => Array.from(answer.rows)),
    setOverride: (input, options) =>
      run(Effect.flatMap(Overrides, (overrides) => overrides.set(principal, input, options))),
    getOverride: (input) => run(Effect.flatMap(Overrides, (overrides) => overrides.get(principal, input))),
    listOverrides: (input) => run(Effect.flatMap(Overrides, (overrides) => overrides.list(principal, input))),
    deleteOverride: (input) =>
      run(Effect.asVoid(Effect.flatMap(Overrides, (overrides) => overrides.delete(principal, input)))),
    limit: (input) => run(Effect.flatMap(RateLimiter, (limiter) => limiter.limit(principal, input))),
    keys: {
      create: (input, options) => run(Effect.flatMap(Keys, (keys) => keys.create(principal, input, options))),
      verify: (input, options) => {
        if (closed) return run(verifier.verify(principal, input, options))
        // Most verifications are decided in memory: answered without running an effect.
        const answer = Decision.now(verifier.verify(principal, input, options))
        if (Decision.isDecided(answer) && Exit.isSuccess(answer)) return Promise.resolve(answer.value)
        return run(answer)
      },
      get: (input) => run(Effect.flatMap(Keys, (keys) => keys.get(principal, input))),
      list: (input) => run(Effect.flatMap(Keys, (keys) => keys.list(principal, input))),
      update: (input) => run(Effect.flatMap(Keys, (keys) => keys.update(principal, input))),
      delete: (input) => run(Effect.asVoid(Effect.flatMap(Keys, (keys) => keys.delete(principal, input)))),
      updateCredits: (input, options) =>
        run(Effect.flatMap(Keys, (keys) => keys.updateCredits(principal, input, options))),
      migrate: (input) => run(Effect.flatMap(Keys, (keys) => keys.migrate(principal, input))),
      changePermissions: (op, input) =>
        run(Effect.flatMap(Keys, (keys) => keys.changePermissions(principal, op, input))),
      changeRoles: (op, input) => run(Effect.flatMap(Keys, (keys) => keys.changeRoles(principal, op, input)))
    },
    rbac: {
      createPermission: (input) => run(Effect.flatMap(Rbac, (rbac) => rbac.createPermission(principal, input))),
      getPermission: (input) => run(Effect.flatMap(Rbac, (rbac) => rbac.getPermission(principal, input))),
      listPermissions: () => run(Effect.flatMap(Rbac, (rbac) => rbac.listPermissions(principal))),
      deletePermission: (input) =>
        run(Effect.asVoid(Effect.flatMap(Rbac, (rbac) => rbac.deletePermission(principal, input)))),
      createRole: (input) => run(Effect.flatMap(Rbac, (rbac) => rbac.createRole(principal, input))),
      getRole: (input) => run(Effect.flatMap(Rbac, (rbac) => rbac.getRole(principal, input))),
      listRoles: () => run(Effect.flatMap(Rbac, (rbac) => rbac.listRoles(principal))),
      deleteRole: (input) => run(Effect.asVoid(Effect.flatMap(Rbac, (rbac) => rbac.deleteRole(principal, input))))
    },
    identities: {
      create: (input) => run(Effect.flatMap(Identities, (identities) => identities.create(principal, input))),
      get: (input) => run(Effect.flatMap(Identities, (identities) => identities.get(principal, input))),
      list: (input = {}) => run(Effect.flatMap(Identities, (identities) => identities.list(principal, input))),
      update: (input) => run(Effect.flatMap(Identities, (identities) => identities.update(principal, input))),
      delete: (input) =>
        run(Effect.asVoid(Effect.flatMap(Identities, (identities) => identities.delete(principal, input))))
    },
    createRootKey: (input) =>
      run(Effect.gen(function*() {
        const catalog = yield* Catalog
        const now = yield* Clock.currentTimeMillis
        const { rootKey, secret } = RootKey.mint({
          workspaceId,
          name: input.name ?? "embedded",
          permissions: input.permissions,
          now
        })
        yield* catalog.putRootKey(rootKey)
        return { id: rootKey.id, key: secret }
      })),
    provision: (document) => run(Effect.flatMap(Provisioning.decode(document), Provisioning.apply)),
    handler: (handlerOptions) => {
      const prefix = handlerOptions?.prefix?.replace(/\/+$/, "") ?? ""
      const docsUrl = RequestContext.docsBase(options.http?.docsUrl)
      return (req, res, next) => {
        const url = req.url ?? "/"
        if (prefix === "") return nodeHandler(req, res)
        if (url === prefix || url.startsWith(prefix + "/") || url.startsWith(prefix + "?")) {
          req.url = url.slice(prefix.length) || "/"
          return nodeHandler(req, res)
        }
        if (next !== undefined) return next()
        const requestId = RequestContext.makeRequestId()
        res.writeHead(Errors.Codes.NOT_FOUND.status, {
          ...SafeHeaders.API,
          "content-type": "application/json",
          "x-request-id": requestId
        })
        res.end(JSON.stringify(Errors.body("NOT_FOUND", `No route for ${req.method} ${url}`, { docsUrl, requestId })))
      }
    },
    close: () => {
      closed = true
      return runtime.dispose()
    }
  }
}
