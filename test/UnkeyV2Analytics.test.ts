/**
 * SQL analytics through Unkey's official v2 client (`@unkey/api@2.5.1`): `analytics.getVerifications`
 * and `analytics.getRatelimits` against the standalone server on SQLite, and with its events in
 * ClickHouse (where the queries run in ClickHouse), the SDK's own schemas judging every answer and
 * error. And the isolation argument, tried from the outside: no text of a
 * query reaches another workspace's rows, an api the key may not read, or anything but the public
 * tables.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { ClickhouseTestServer } from "@keymeter/testing"
import * as Effect from "effect/Effect"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Unkey } from "unkey-v2"
import * as errors from "unkey-v2/models/errors"
import type { Running } from "./Spawn.js"
import { serveKeymeter, stop } from "./Spawn.js"

const ADMIN = "sk_sql_admin_4b1e7c9a2d5f8e0a3c6b"
/** May read api_one's analytics only. */
const ONE_READER = "sk_sql_one_reader_9e2c4a6b8d0f1e3a5c7b"
/** May read the rate-limit analytics of namespace rlns_sql only. */
const NAMESPACE_READER = "sk_sql_ns_reader_3f5a7c9e1b2d4f6a8c0e"
/** May verify keys, read nothing. */
const VERIFIER = "sk_sql_verifier_7a9c1e3b5d7f9a1c3e5b"
/** The other workspace's admin. */
const OTHER = "sk_other_admin_1c3e5a7b9d1f3a5c7e9b"

let server: Running | undefined
let base = ""
let database: string | undefined

/** Serves a fresh server for each suite below; `analytics`: where its events go. */
const serve = async (analytics: "sqlite" | "clickhouse") => {
  const dir = mkdtempSync(join(tmpdir(), "keymeter-sql-"))
  const provision = join(dir, "provision.json")
  writeFileSync(
    provision,
    JSON.stringify({
      workspaces: [
        {
          id: "ws_sql",
          name: "SQL",
          rootKeys: [
            { key: ADMIN, permissions: ["*"] },
            { key: ONE_READER, permissions: ["api.api_one.read_api"] },
            { key: NAMESPACE_READER, permissions: ["ratelimit.rlns_sql.read_analytics"] },
            { key: VERIFIER, permissions: ["api.*.verify_key"] }
          ],
          apis: [{ id: "api_one", name: "one" }, { id: "api_two", name: "two" }],
          namespaces: [{ id: "rlns_sql", name: "sql" }, { id: "rlns_other", name: "other" }]
        },
        {
          id: "ws_other",
          name: "Other",
          rootKeys: [{ key: OTHER, permissions: ["*"] }],
          apis: [{ id: "api_secret", name: "secret" }],
          namespaces: []
        }
      ]
    })
  )
  const started = await serveKeymeter({
    KEYMETER_PROVISION: provision,
    KEYMETER_STORAGE: `sqlite:${join(dir, "k.db")}`,
    ...(analytics === "clickhouse"
      ? {
        KEYMETER_ANALYTICS: `clickhouse:${ClickhouseTestServer.url}/${database = ClickhouseTestServer.databaseName()}`
      }
      : {})
  })
  server = started.server
  base = started.base
  seeded = undefined
}
const stopServer = async () => {
  if (server !== undefined) await stop(server)
  server = undefined
  if (database !== undefined) await Effect.runPromise(ClickhouseTestServer.dropDatabase(database))
  database = undefined
}

const client = (rootKey: string) => new Unkey({ rootKey, serverURL: base, retryConfig: { strategy: "none" } })

const thrown = async (call: Promise<unknown>) => {
  try {
    await call
  } catch (error) {
    return error
  }
  throw new Error("the call did not fail")
}

/** Keys made and verified through the SDK: what the analytics must count. */
const seed = async () => {
  const admin = client(ADMIN)
  const made = await Promise.all([
    admin.keys.createKey({ apiId: "api_one", credits: { remaining: 2 } }),
    admin.keys.createKey({ apiId: "api_one" }),
    admin.keys.createKey({ apiId: "api_two" })
  ])
  const [credited, plain, two] = made.map((m) => m.data)
  const verify = (key: string, tags?: Array<string>) =>
    client(VERIFIER).keys.verifyKey({ key, ...(tags ? { tags } : {}) })
  // Two credits, then usage exceeded; five valid on the plain key; three on api_two.
  for (let i = 0; i < 3; i++) await verify(credited!.key, ["path=/a"])
  for (let i = 0; i < 5; i++) await verify(plain!.key, ["path=/b"])
  for (let i = 0; i < 3; i++) await verify(two!.key)
  // The other workspace verifies too: never seen from ws_sql.
  const other = await client(OTHER).keys.createKey({ apiId: "api_secret" })
  for (let i = 0; i < 4; i++) await client(OTHER).keys.verifyKey({ key: other.data.key })
  return { credited: credited!.keyId, plain: plain!.keyId, two: two!.keyId }
}

let seeded: ReturnType<typeof seed> | undefined
const seededOnce = () => (seeded ??= seed())

const clickhouseSkip = ClickhouseTestServer.skip()
const backends = clickhouseSkip === undefined ? ["sqlite", "clickhouse"] as const : ["sqlite"] as const

describe.each(backends)("SQL analytics through Unkey's v2 client, events in %s", (analytics) => {
  beforeAll(() => serve(analytics))
  afterAll(stopServer)

  it("getVerifications answers counts, credits and latency per key, as the SDK validates them", async () => {
    const keys = await seededOnce()
    const answer = await client(ADMIN).analytics.getVerifications({
      query: "SELECT key_id, outcome, count() AS total, sum(spent_credits) AS credits, max(latency) >= 0 AS timed " +
        "FROM key_verifications_v1 GROUP BY key_id, outcome ORDER BY key_id, outcome"
    })
    expect(answer.meta.requestId).toMatch(/^req_/)
    const expected = [
      { key_id: keys.credited, outcome: "USAGE_EXCEEDED", total: 1, credits: 0, timed: 1 },
      { key_id: keys.credited, outcome: "VALID", total: 2, credits: 2, timed: 1 },
      { key_id: keys.plain, outcome: "VALID", total: 5, credits: 0, timed: 1 },
      { key_id: keys.two, outcome: "VALID", total: 3, credits: 0, timed: 1 }
    ].sort((a, b) => a.key_id < b.key_id ? -1 : a.key_id > b.key_id ? 1 : a.outcome < b.outcome ? -1 : 1)
    expect(answer.data).toEqual(expected)

    const daily = await client(ADMIN).analytics.getVerifications({
      query: "SELECT time, key_space_id, sum(count) AS total FROM key_verifications_per_day_v1 " +
        "WHERE time >= now() - INTERVAL 1 DAY GROUP BY time, key_space_id ORDER BY key_space_id"
    })
    expect(daily.data.map((row) => [row.key_space_id, row.total])).toEqual([["api_one", 8], ["api_two", 3]])
    expect(daily.data[0]!.time % 86_400_000).toBe(0)

    const tags = await client(ADMIN).analytics.getVerifications({
      query: "SELECT arrayJoin(tags) AS tag, count() AS n FROM key_verifications_v1 GROUP BY tag ORDER BY tag"
    })
    expect(tags.data).toEqual([{ tag: "path=/a", n: 3 }, { tag: "path=/b", n: 5 }])
  })

  it("getRatelimits counts decisions per identifier", async () => {
    const limit = (identifier: string) =>
      client(ADMIN).ratelimit.limit({ namespace: "sql", identifier, limit: 2, duration: 60_000 })
    for (let i = 0; i < 4; i++) await limit("alice")
    await limit("bob")
    const answer = await client(ADMIN).analytics.getRatelimits({
      query: "SELECT identifier, count() AS total, countIf(passed = 0) AS blocked FROM ratelimits_v1 " +
        "GROUP BY identifier ORDER BY identifier"
    })
    expect(answer.data).toEqual([{ identifier: "alice", total: 4, blocked: 2 }, {
      identifier: "bob",
      total: 1,
      blocked: 0
    }])
    const scoped = await client(NAMESPACE_READER).analytics.getRatelimits({
      query: "SELECT namespace_id, sum(total) AS total FROM ratelimits_per_hour_v1 GROUP BY namespace_id"
    })
    expect(scoped.data).toEqual([{ namespace_id: "rlns_sql", total: 5 }])
  })

  it("refuses what is outside the subset with a 400 naming the construct and its place", async () => {
    await seededOnce()
    const bad = await thrown(
      client(ADMIN).analytics.getVerifications({ query: "SELECT key_id\nFROM key_verifications_v1 JOIN x ON 1" })
    )
    expect(bad).toBeInstanceOf(errors.BadRequestErrorResponse)
    const detail = (bad as errors.BadRequestErrorResponse).error.detail
    expect(detail).toBe("JOIN is not supported (line 2, column 27)")
    const denied = await thrown(
      client(VERIFIER).analytics.getVerifications({ query: "SELECT count() FROM key_verifications_v1" })
    )
    expect(denied).toBeInstanceOf(errors.ForbiddenErrorResponse)
    const family = await thrown(
      client(ADMIN).analytics.getRatelimits({ query: "SELECT count() FROM key_verifications_v1" })
    )
    expect((family as errors.BadRequestErrorResponse).error.detail).toContain("this route reads ratelimits only")
  })

  it("isolation: no query text reaches another workspace, an unreadable api, or anything but the public tables", async () => {
    const keys = await seededOnce()
    const admin = client(ADMIN)
    const rows = async (rootKey: string, query: string) =>
      (await client(rootKey).analytics.getVerifications({ query })).data
    // Only the caller's workspace, whatever the filter says.
    expect(await rows(ADMIN, "SELECT DISTINCT workspace_id FROM key_verifications_v1")).toEqual([{
      workspace_id: "ws_sql"
    }])
    expect(await rows(ADMIN, "SELECT count() AS n FROM key_verifications_v1 WHERE workspace_id = 'ws_other'")).toEqual([
      { n: 0 }
    ])
    expect(await rows(ADMIN, "SELECT count() AS n FROM key_verifications_v1 WHERE key_space_id = 'api_secret'"))
      .toEqual([
        { n: 0 }
      ])
    // A constant row naming the other workspace is only that constant: it reads nothing.
    expect(
      await rows(
        ADMIN,
        "SELECT 'ws_other' AS w, 0 AS n UNION ALL SELECT workspace_id, count() FROM key_verifications_v1 " +
          "WHERE workspace_id IN (SELECT 'ws_other') GROUP BY workspace_id"
      )
    ).toEqual([{ w: "ws_other", n: 0 }])
    // A key scoped to api_one sees api_one only, even when it names api_two.
    expect(
      await rows(ONE_READER, "SELECT key_space_id, count() AS n FROM key_verifications_v1 GROUP BY key_space_id")
    ).toEqual([{ key_space_id: "api_one", n: 8 }])
    expect(
      await rows(ONE_READER, `SELECT count() AS n FROM key_verifications_v1 WHERE key_id = '${keys.two}'`)
    ).toEqual([{ n: 0 }])
    expect(
      await rows(
        ONE_READER,
        "SELECT count() AS n, sum(count) AS events FROM (SELECT * FROM key_verifications_per_month_v1 " +
          "WHERE key_space_id IN ('api_two', 'api_one'))"
      )
    ).toEqual([{ n: 3, events: 8 }]) // api_one's keys, outcomes and tag sets: three rollup rows
    // The known escapes: every one refused as invalid, before anything is read.
    const escapes: Array<[string, string]> = [
      ["SELECT * FROM system.tables", "unknown table system.tables"],
      ["SELECT * FROM `system`.`tables`", "unknown table system.tables"],
      ["SELECT * FROM \"default\".\"key_verifications_raw_v2\"", "unknown table default.key_verifications_raw_v2"],
      ["SELECT * FROM default.key_verifications_v1", "unknown table default.key_verifications_v1"],
      ["SELECT * FROM file('/etc/passwd', 'CSV')", "table functions are not supported"],
      ["SELECT * FROM url('http://127.0.0.1/', 'JSON')", "table functions are not supported"],
      ["SELECT * FROM remote('127.0.0.1', system.one)", "table functions are not supported"],
      ["SELECT * FROM key_verifications_v1 /* */ UNION ALL SELECT * FROM system.one", "unknown table system.one"],
      ["SELECT count() FROM key_verifications_v1 -- \n, system.tables", "reading several tables"],
      // A Cyrillic 'е' in the table's name.
      ["SELECT count() FROM k\u0435y_verifications_v1", "unexpected character 'е' (U+0435)"],
      [
        "SELECT count() FROM key_verifications_v1 WHERE key_id IN (SELECT name FROM system.databases)",
        "unknown table system.databases"
      ],
      ["SELECT count() FROM (SELECT * FROM users)", "unknown table users"],
      ["SELECT count() FROM key_verifications_v1 SETTINGS readonly = 0", "SETTINGS is not supported"],
      ["SELECT currentDatabase()", "unknown function currentDatabase"],
      ["SELECT count() FROM key_verifications_v1 INTO OUTFILE 'x'", "INTO is not supported"],
      ["SELECT 1; DROP TABLE key_verifications_v1", "only one statement per query"],
      ["SHOW TABLES", "only SELECT queries are supported, found SHOW"],
      ["SELECT count() FROM ratelimits_v1", "this route reads verifications only"]
    ]
    for (const [query, message] of escapes) {
      const error = await thrown(admin.analytics.getVerifications({ query }))
      expect(error, query).toBeInstanceOf(errors.BadRequestErrorResponse)
      expect((error as errors.BadRequestErrorResponse).error.detail, query).toContain(message)
    }
  })
})
