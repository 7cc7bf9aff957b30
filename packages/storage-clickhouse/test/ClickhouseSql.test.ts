import { describe, expect, it } from "@effect/vitest"
import * as Verification from "@keymeter/core/Verification"
import { SqlEngine } from "@keymeter/sql/SqlEngine"
import type { Request } from "@keymeter/sql/SqlEngine"
import * as SqlQuery from "@keymeter/sql/SqlQuery"
import { ClickhouseRatelimitStore, ClickhouseSql, ClickhouseVerificationStore } from "@keymeter/storage-clickhouse"
import { ClickhouseTestServer } from "@keymeter/testing"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { translate } from "../src/internal/Translate.js"

const T0 = Date.parse("2025-01-01T00:00:00Z")
const NOW = T0 + 86_400_000

const noScan = () => Effect.die(new Error("the engine runs every query here"))

/** The plan the executor hands an engine for `text`, and what the engine answers. */
const planOf = (text: string) =>
  Effect.gen(function*() {
    let request: Request | undefined
    yield* SqlQuery.run(text, {
      family: "verifications",
      workspaceId: "ws",
      within: ["api_a"],
      verifications: noScan,
      ratelimits: noScan,
      limits: SqlQuery.DEFAULT_LIMITS,
      now: NOW,
      engine: SqlEngine.of({
        run: (r) => {
          request = r
          return Effect.succeed([])
        }
      })
    })
    return request!
  })

describe("ClickhouseSql's translation", () => {
  it.effect("writes only its own names and encoded values, reading each table as its source", () =>
    Effect.gen(function*() {
      const request = yield* planOf(
        "SELECT key_id AS evil, count() AS total /* comment */ FROM key_verifications_v1 AS kv " +
          "WHERE kv.outcome = 'it''s \\\\ ok' AND key_id LIKE '%x%' GROUP BY evil ORDER BY total DESC LIMIT 3"
      )
      const text = translate(request.plan, (table, hint) => `<${table.name} ${hint.from}..${hint.to}>`)
      expect(text).toBe(
        "SELECT key_id AS _r0_0, count() AS _r0_1 FROM (<key_verifications_v1 0..9007199254740991>) " +
          "WHERE ((outcome = 'it\\'s \\\\ ok') AND (key_id LIKE '%x%')) GROUP BY key_id " +
          "ORDER BY count() DESC LIMIT 0, 3"
      )
      for (const word of ["evil", "total", "comment", "kv"]) expect(text).not.toContain(word)
    }))

  it.effect("inlines CTEs and rollups' views, narrowing each source by its query's bounds", () =>
    Effect.gen(function*() {
      const request = yield* planOf(
        "WITH recent AS (SELECT key_id, time FROM key_verifications_v1 WHERE time >= now() - INTERVAL 1 HOUR) " +
          "SELECT count() FROM recent UNION ALL SELECT sum(count) FROM key_verifications_per_day_v1 " +
          "WHERE key_space_id = 'api_a'"
      )
      const sources: Array<string> = []
      const text = translate(request.plan, (table, hint) => {
        sources.push(`${table.name} ${hint.from} ${hint.within}`)
        return "<source>"
      })
      expect(sources).toEqual([
        `key_verifications_v1 ${NOW - 3_600_000} undefined`,
        "key_verifications_v1 0 api_a"
      ])
      expect(text).not.toContain("recent")
      expect(text).toContain("UNION ALL")
    }))
})

const skip = ClickhouseTestServer.skip()
describe.skipIf(skip !== undefined)("ClickhouseSql on a server", () => {
  const events = Array.from({ length: 40 }, (_, i) =>
    Verification.make({
      time: T0 + i * 60_000,
      workspaceId: i % 10 === 9 ? "ws_other" : "ws",
      apiId: i % 2 === 0 ? "api_a" : "api_b",
      keyId: `key_${i % 5}`,
      outcome: i % 4 === 0 ? "rateLimited" : "valid",
      tags: i % 3 === 0 ? ["t"] : []
    }))

  const withEngine = <A, E>(
    f: (
      query: (text: string, limits?: Partial<SqlQuery.Limits>) => ReturnType<typeof SqlQuery.run>
    ) => Effect.Effect<A, E>
  ) =>
    Effect.gen(function*() {
      const url = yield* ClickhouseTestServer.freshDatabase()
      const store = yield* ClickhouseVerificationStore.make({ url })
      yield* ClickhouseRatelimitStore.make({ url })
      yield* store.append(events)
      const engine = yield* ClickhouseSql.make({ url })
      return yield* f((text, limits) =>
        SqlQuery.run(text, {
          family: "verifications",
          workspaceId: "ws",
          within: undefined,
          verifications: noScan,
          ratelimits: noScan,
          limits: { ...SqlQuery.DEFAULT_LIMITS, ...limits },
          now: NOW,
          engine
        })
      )
    }).pipe(Effect.scoped)

  it.live("answers from the caller's workspace only", () =>
    withEngine((query) =>
      Effect.gen(function*() {
        const answer = yield* query(
          "SELECT key_space_id, countIf(outcome = 'RATE_LIMITED') AS limited, count() AS n, " +
            "uniqExact(workspace_id) AS workspaces FROM key_verifications_v1 GROUP BY key_space_id ORDER BY key_space_id"
        )
        expect(answer.rows).toEqual([
          { key_space_id: "api_a", limited: 10, n: 20, workspaces: 1 },
          { key_space_id: "api_b", limited: 0, n: 16, workspaces: 1 }
        ])
        expect(answer.columns.map((c) => c.type)).toEqual(["String", "Int", "Int", "Int"])
      })
    ), 60_000)

  it.live(
    "refuses past each budget with its name, and a division by zero as an invalid query",
    () =>
      withEngine((query) =>
        Effect.gen(function*() {
          const failure = (text: string, limits?: Partial<SqlQuery.Limits>) =>
            Effect.flip(query(text, limits)).pipe(Effect.map((e) => [e._tag, "budget" in e ? e.budget : e.message]))
          expect(yield* failure("SELECT count() FROM key_verifications_v1", { scannedRows: 5 }))
            .toEqual(["QueryBudgetExceeded", "scannedRows"])
          expect(yield* failure("SELECT key_id FROM key_verifications_v1", { resultRows: 10 }))
            .toEqual(["QueryBudgetExceeded", "resultRows"])
          expect(yield* failure("SELECT groupArray FROM key_verifications_v1")).toEqual([
            "InvalidQuery",
            "unknown column groupArray (line 1, column 8)"
          ])
          expect(
            yield* failure("SELECT key_id, intDiv(1, count() - count()) FROM key_verifications_v1 GROUP BY key_id")
          ).toEqual(["InvalidQuery", "the query met division by zero"])
          const exit = yield* Effect.exit(
            query("SELECT key_id, count() FROM key_verifications_v1 GROUP BY key_id", { memoryBytes: 1000 })
          )
          expect(Exit.isFailure(exit) && JSON.stringify(exit.cause)).toContain("memory")
        })
      ),
    60_000
  )
})
