/**
 * SQL analytics as a service: `getVerifications` and `getRatelimits` run a query of the subset
 * (`SqlQuery`) for an authenticated root key. The scope is decided here, from the key alone: its
 * workspace, and the apis (namespaces) its permissions name, or all of the workspace's for a
 * wildcard. Events recorded before the query are flushed first, so it sees them.
 */
import { Busy, InsufficientPermissions, ValidationError } from "@keymeter/core/Errors"
import type { StorageError } from "@keymeter/core/Errors"
import type { Principal } from "@keymeter/core/Permission"
import * as Permission from "@keymeter/core/Permission"
import { RatelimitRecorder } from "@keymeter/core/RatelimitRecorder"
import { Recorder } from "@keymeter/core/Recorder"
import { RatelimitStore, VerificationStore } from "@keymeter/core/Storage"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { SqlEngine } from "./SqlEngine.js"
import type { InvalidQuery, QueryBudgetExceeded } from "./SqlError.js"
import * as SqlQuery from "./SqlQuery.js"
import { SqlRunner } from "./SqlRunner.js"
import type { Family } from "./Tables.js"

/** Budgets of every query, and how many run at once (more are refused as busy). */
export class SqlLimits extends Context.Reference<SqlLimits>()("@keymeter/sql/SqlAnalytics/SqlLimits", {
  defaultValue: (): SqlQuery.Limits & { readonly concurrent: number } => ({ ...SqlQuery.DEFAULT_LIMITS, concurrent: 4 })
}) {}

/** Longest query text accepted. */
export const MAX_QUERY_LENGTH = 100_000

/** The body both routes take. */
export const SqlRequest = Schema.Struct({
  query: Schema.String.pipe(
    Schema.minLength(1, { message: () => "must be a non-empty SQL query" }),
    Schema.maxLength(MAX_QUERY_LENGTH, { message: () => `must be at most ${MAX_QUERY_LENGTH} characters` })
  ).annotations({ description: "A SELECT of the SQL subset (see the README's SQL analytics)" })
}).annotations({ identifier: "SqlRequest" })

/** How the caller takes the answer. */
export interface Options {
  /** It writes the rows out as JSON: a runner may hand them back encoded (`Answer.json`). */
  readonly json?: boolean | undefined
}

/** How a query fails. */
export type SqlFailure = InvalidQuery | QueryBudgetExceeded | InsufficientPermissions | StorageError | Busy

export class SqlAnalytics extends Effect.Service<SqlAnalytics>()("@keymeter/sql/SqlAnalytics", {
  effect: Effect.gen(function*() {
    const verifications = yield* VerificationStore
    const ratelimits = yield* RatelimitStore
    const recorder = yield* Recorder
    const ratelimitRecorder = yield* RatelimitRecorder
    const limits = yield* SqlLimits
    // A store that runs queries itself (ClickHouse), when the storage layer provides one.
    const engine = Option.getOrUndefined(yield* Effect.serviceOption(SqlEngine))
    // A thread that runs queries off this event loop (SQLite's worker), when the storage provides one.
    const runner = Option.getOrUndefined(yield* Effect.serviceOption(SqlRunner))
    let running = 0

    const stores = SqlQuery.storesOf(verifications, ratelimits)

    const run = (principal: Principal, family: Family, query: string, options: Options | undefined) =>
      Effect.gen(function*() {
        const required = family === "verifications"
          ? Permission.required.readVerificationAnalytics
          : Permission.required.readRatelimitAnalytics
        const within = Permission.idsGranted(principal.permissions, required)
        if (within !== undefined && within.length === 0) return yield* InsufficientPermissions.anyOf(required("*"))
        if (running >= limits.concurrent) {
          return yield* new Busy({
            message:
              `${limits.concurrent} SQL analytics queries are running on this server, as many as it runs at once; retry shortly`
          })
        }
        running++
        return yield* Effect.gen(function*() {
          yield* family === "verifications" ? recorder.flush : ratelimitRecorder.flush
          const now = yield* Clock.currentTimeMillis
          const elsewhere = runner?.run({
            text: query,
            family,
            workspaceId: principal.workspaceId,
            within,
            now,
            limits,
            json: options?.json
          })
          if (elsewhere !== undefined) return yield* elsewhere
          return yield* SqlQuery.run(query, {
            family,
            workspaceId: principal.workspaceId,
            within,
            ...stores,
            limits,
            now,
            engine
          })
        }).pipe(Effect.ensuring(Effect.sync(() => running--)))
      }).pipe(Effect.withSpan(`SqlAnalytics.${family}`))

    const decode = Schema.decodeUnknown(SqlRequest)
    const withQuery = (family: Family) => (principal: Principal, input: unknown, options?: Options) =>
      Effect.flatMap(
        Effect.mapError(decode(input), () =>
          new ValidationError({
            message: typeof (input as { query?: unknown } | undefined)?.query === "string"
              ? `query: must be 1 to ${MAX_QUERY_LENGTH} characters`
              : "query: is required, a SQL SELECT as a string"
          })),
        ({ query }) => run(principal, family, query, options)
      )

    return {
      /** Runs a query over the caller's verifications (`key_verifications_v1` and its rollups). */
      getVerifications: withQuery("verifications"),
      /** Runs a query over the caller's rate-limit decisions (`ratelimits_v1` and its rollups). */
      getRatelimits: withQuery("ratelimits")
    } as const
  })
}) {}
