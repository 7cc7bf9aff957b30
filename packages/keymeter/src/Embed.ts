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
import { Apis } from "@keymeter/core/Apis"
import * as Auth from "@keymeter/core/Auth"
import * as Decision from "@keymeter/core/Decision"
import { Identities } from "@keymeter/core/Identities"
import { Keys } from "@keymeter/core/Keys"
import { KeyVerifier } from "@keymeter/core/KeyVerifier"
import { Overrides } from "@keymeter/core/Overrides"
import * as Provisioning from "@keymeter/core/Provisioning"
import { RatelimitAnalytics } from "@keymeter/core/RatelimitAnalytics"
import { RateLimiter } from "@keymeter/core/RateLimiter"
import { RatelimitQueryInput } from "@keymeter/core/RatelimitQuery"
import { Rbac } from "@keymeter/core/Rbac"
import * as RootKey from "@keymeter/core/RootKey"
import type { Storage } from "@keymeter/core/Storage"
import { Catalog } from "@keymeter/core/Storage"
import { fieldKinds } from "@keymeter/core/Validation"
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
import type { Keymeter, KeymeterOptions } from "./Keymeter.js"
import * as StorageSpec from "./StorageSpec.js"

export type {
  Keymeter,
  KeymeterOptions,
  NamespaceRef,
  RatelimitsQuery,
  VerificationsQuery,
  WriteOptions
} from "./Keymeter.js"

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
