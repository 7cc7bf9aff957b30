import { SqliteClient } from "@effect/sql-sqlite-node"
import * as SqlClient from "@effect/sql/SqlClient"
import { afterEach, describe, expect, it } from "@effect/vitest"
import { ClickhouseTestServer } from "@keymeter/testing"
import * as Effect from "effect/Effect"
import { execFile, spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { request as httpRequest } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Running } from "./Spawn.js"
import { freePort, nodeArgs, root, serveKeymeter, start, stop } from "./Spawn.js"

const MAIN = "packages/keymeter/src/main.ts"
const LISTENING = /Listening on (http:\/\/127\.0\.0\.1:\d+)/

const running: Array<Running> = []
afterEach(async () => {
  for (const process of running.splice(0)) await stop(process, "SIGKILL")
})

const serve = async (env: Record<string, string> = {}) => {
  const started = await serveKeymeter(env)
  running.push(started.server)
  return started
}

const batch = (n: number) =>
  JSON.stringify({
    verifications: Array.from({ length: n }, (_, i) => ({
      apiId: "api_main",
      keyId: `key_${i % 100}`,
      outcome: "valid",
      tags: ["a", "b"]
    }))
  })

describe("standalone server (npm start)", () => {
  it("on an empty store, prints one root key holding * that works", async () => {
    const { base, server } = await serve()
    const key = server.output().match(/^\s+(sk_[A-Za-z0-9_-]{43})$/m)?.[1]
    expect(key).toBeDefined()
    const created = await fetch(`${base}/v1/apis.createApi`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "main" })
    })
    expect(created.status).toBe(200)
    expect(await stop(running.pop()!)).toBe(0)
  })

  it("keeps its data by default in ./.keymeter/keymeter.db: the key is printed once and survives restarts", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "keymeter-default-"))
    const { KEYMETER_STORAGE: _, ...env } = process.env
    const boot = async () => {
      const port = await freePort()
      const server = await start(MAIN, {
        cwd,
        env: { ...env, PORT: String(port) } as Record<string, string>,
        ready: LISTENING
      })
      running.push(server)
      return { server, base: server.match[1]! }
    }
    const first = await boot()
    const key = first.server.output().match(/^\s+(sk_[A-Za-z0-9_-]{43})$/m)?.[1]
    expect(key).toBeDefined()
    const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" }
    const { apiId } = await (await fetch(`${first.base}/v1/apis.createApi`, {
      method: "POST",
      headers: auth,
      body: "{\"name\":\"main\"}"
    })).json() as { apiId: string }
    await fetch(`${first.base}/v1/analytics.recordVerifications`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ verifications: [{ apiId, keyId: "k", outcome: "valid" }] })
    })
    expect(await stop(running.pop()!)).toBe(0)
    expect(existsSync(join(cwd, ".keymeter", "keymeter.db"))).toBe(true)
    const second = await boot()
    expect(second.server.output()).not.toMatch(/sk_[A-Za-z0-9_-]{43}/)
    const read = await fetch(`${second.base}/v1/analytics.getVerifications?apiId=${apiId}&start=0`, { headers: auth })
    expect(((await read.json()) as Array<{ total: number }>)[0]!.total).toBe(1)
  })

  it("applies the provisioning file and prints no bootstrap key", async () => {
    const { base, server } = await serve({ KEYMETER_PROVISION: "examples/provision.json" })
    expect(server.output()).not.toMatch(/sk_[A-Za-z0-9_-]{43}/)
    expect(server.output()).toMatch(/Provisioned 1 workspace\(s\), 2 root key\(s\), 1 api\(s\), 1 namespace\(s\)/)
    const reply = await fetch(`${base}/v1/analytics.getVerifications?apiId=api_main`, {
      headers: { authorization: "Bearer sk_acme_reader_5d2b9e4f7c1a3e8b6d0f" }
    })
    expect(reply.status).toBe(200)
  })

  it("lets in-flight requests finish on SIGTERM, then exits 0", async () => {
    const { base, server } = await serve({ KEYMETER_PROVISION: "examples/provision.json" })
    const body = Buffer.from(batch(10_000))
    const half = body.length >> 1
    // Each request sends its headers and half its body, so the server has accepted all of them;
    // then the rest follows and the signal comes while the server is busy with them.
    const open = Array.from({ length: 12 }, () => {
      const req = httpRequest(`${base}/v1/analytics.recordVerifications`, {
        method: "POST",
        headers: {
          authorization: "Bearer sk_acme_admin_8f3e1c7a9b2d4e6f0a1c",
          "content-type": "application/json",
          "transfer-encoding": "chunked"
        }
      })
      const status = new Promise<number | string>((resolve) => {
        req.on("response", (res) => {
          res.resume()
          res.on("end", () => resolve(res.statusCode!))
        })
        req.on("error", (error) => resolve(`failed: ${error.message}`))
      })
      req.write(body.subarray(0, half))
      return { req, status }
    })
    await new Promise((resolve) => setTimeout(resolve, 1000))
    for (const { req } of open) req.end(body.subarray(half))
    await new Promise((resolve) => setTimeout(resolve, 50))
    const exit = stop(running.pop()!)
    expect(await Promise.all(open.map((o) => o.status))).toEqual(new Array(12).fill(200))
    expect(await exit).toBe(0)
    expect(server.output()).not.toMatch(/Error|defect/i)
  })

  it("refuses another application's SQLite file with one line, leaving it byte-identical", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "keymeter-foreign-")), "theirs.db")
    await Effect.runPromise(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => Effect.all([sql`CREATE TABLE apis (name TEXT)`, sql`INSERT INTO apis (name) VALUES ('theirs')`])
      ).pipe(
        Effect.provide(SqliteClient.layer({ filename: file, disableWAL: true }))
      )
    )
    const sha256 = () => createHash("sha256").update(readFileSync(file)).digest("hex")
    const before = sha256()
    const result = spawnSync(process.execPath, nodeArgs(MAIN), {
      cwd: root,
      env: { ...process.env, PORT: "0", KEYMETER_STORAGE: `sqlite:${file}` },
      encoding: "utf8",
      timeout: 20_000
    })
    expect(result.status).toBe(1)
    expect(result.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(
        /^keymeter: .*theirs\.db is not a keymeter database \(it holds tables of another application: apis\)/
      )
    ])
    expect(sha256()).toBe(before)
    expect(existsSync(`${file}-wal`)).toBe(false)
  })

  it("refuses bad configuration with a clear message and exit code 1", async () => {
    const dir = mkdtempSync(join(tmpdir(), "keymeter-"))
    writeFileSync(join(dir, "bad.json"), "{\"workspaces\": [{\"id\": \"w\"}]}")
    const cases: ReadonlyArray<readonly [Record<string, string>, RegExp]> = [
      [{ KEYMETER_STORAGE: "mysql://x" }, /keymeter: KEYMETER_STORAGE must be "memory", "sqlite:<path>" or "postgres:/],
      [{ KEYMETER_STORAGE: "postgres://x" }, /keymeter: KEYMETER_STORAGE: not a usable PostgreSQL URL/],
      // Malformed settings holding a password: at most their scheme and host are shown.
      [
        { KEYMETER_STORAGE: "postgres://keymeter:secret@/keymeter" },
        /keymeter: KEYMETER_STORAGE: not a usable PostgreSQL URL .*got "postgres:…"/
      ],
      [{ KEYMETER_STORAGE: "mysql://root:secret@db:3306/x" }, /got "mysql:\/\/db:3306"/],
      [{ KEYMETER_STORAGE: "memory", KEYMETER_RATELIMIT: "redis//:secret@cache" }, /got "\(not a URL\)"/],
      [
        { KEYMETER_STORAGE: "memory", KEYMETER_ANALYTICS: "clickhouse:ftp://u:secret@ch:21/x" },
        /KEYMETER_ANALYTICS: A ClickHouse URL must be http:\/\/ or https:\/\/, got "ftp:\/\/ch"/
      ],
      [
        { KEYMETER_STORAGE: "memory", KEYMETER_ANALYTICS: "clickhouse:u:secret@ch" },
        /KEYMETER_ANALYTICS: (Not a ClickHouse URL|A ClickHouse URL must be)/
      ],
      [{ KEYMETER_STORAGE: "memory", KEYMETER_ANALYTICS: "cockroach://u:secret@h" }, /got "cockroach:\/\/h"/],
      [
        { KEYMETER_STORAGE: "memory", KEYMETER_RATELIMIT: "memcached://127.0.0.1:1" },
        /keymeter: KEYMETER_RATELIMIT must be "redis:\/\/<host>:<port>\/<db>"/
      ],
      [
        { KEYMETER_STORAGE: "memory", KEYMETER_RATELIMIT: "redis://:secret@127.0.0.1:1/0" },
        /keymeter: Redis is unreachable at redis:\/\/127\.0\.0\.1:1: /
      ],
      [
        {
          KEYMETER_STORAGE: "memory",
          KEYMETER_RATELIMIT: "redis://127.0.0.1:1/0",
          KEYMETER_RATELIMIT_FALLBACK: "open"
        },
        /keymeter: KEYMETER_RATELIMIT_FALLBACK must be "closed" or "local", got "open"/
      ],
      [
        { KEYMETER_STORAGE: "postgres://keymeter:secret@127.0.0.1:1/keymeter" },
        /keymeter: KEYMETER_STORAGE=postgres:\/\/ holds the catalog that servers share; set KEYMETER_ANALYTICS/
      ],
      [{ KEYMETER_STORAGE: "memory", KEYMETER_HOT_DAYS: "-1" }, /^keymeter: KEYMETER_HOT_DAYS: must be 0 or more$/m],
      [
        { KEYMETER_STORAGE: "memory", KEYMETER_MAX_IN_FLIGHT: "0" },
        /^keymeter: KEYMETER_MAX_IN_FLIGHT: must be at least 1$/m
      ],
      [
        { KEYMETER_STORAGE: "memory", KEYMETER_IDEMPOTENCY_WINDOW_MS: "1000" },
        /^keymeter: KEYMETER_IDEMPOTENCY_WINDOW_MS: must be from 60000 \(a minute\) to 2592000000 \(30 days\)$/m
      ],
      [
        { KEYMETER_STORAGE: "memory", PORT: "http" },
        /^keymeter: PORT: Expected an integer value but received "http"$/m
      ],
      [
        { KEYMETER_STORAGE: "memory", KEYMETER_ANALYTICS: "duckdb:x" },
        /^keymeter: KEYMETER_ANALYTICS must be "clickhouse:http:\/\/<host>:<port>\/<database>"/m
      ],
      [
        { KEYMETER_STORAGE: "memory", KEYMETER_ANALYTICS: "clickhouse:http://127.0.0.1:1/no-dashes" },
        /^keymeter: KEYMETER_ANALYTICS: Not a usable ClickHouse database name: "no-dashes"/m
      ],
      [
        { KEYMETER_STORAGE: "memory", KEYMETER_ANALYTICS_SPOOL: join(dir, "spool") },
        /^keymeter: KEYMETER_ANALYTICS_SPOOL goes with KEYMETER_ANALYTICS$/m
      ],
      [
        { KEYMETER_STORAGE: "memory", KEYMETER_ANALYTICS: "clickhouse:http://127.0.0.1:1/keymeter" },
        /^keymeter: ClickHouse is unreachable at http:\/\/127\.0\.0\.1:1: /m
      ],
      [
        { KEYMETER_STORAGE: "memory", KEYMETER_PROVISION: join(dir, "bad.json") },
        /keymeter: Invalid provisioning document: workspaces\[0\]\.name: is required/
      ],
      [
        { KEYMETER_STORAGE: "memory", KEYMETER_PROVISION: join(dir, "missing.json") },
        /Cannot read the provisioning file/
      ]
    ]
    // Four processes at a time: each start loads the whole server; one after another they took
    // longer than the test's time on a loaded machine, and all at once some took over 20 s each.
    const start = (env: Record<string, string>) =>
      new Promise<{ readonly status: number | null; readonly stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          nodeArgs(MAIN),
          { cwd: root, env: { ...process.env, PORT: "0", ...env }, encoding: "utf8", timeout: 60_000 },
          (error, _stdout, stderr) => resolve({ status: error === null ? 0 : (error.code as number | null), stderr })
        )
      })
    const results: Array<{ readonly status: number | null; readonly stderr: string }> = []
    let next = 0
    await Promise.all(Array.from({ length: 4 }, async () => {
      while (next < cases.length) {
        const i = next++
        results[i] = await start(cases[i]![0])
      }
    }))
    results.forEach((result, i) => {
      const [env, message] = cases[i]!
      expect(result.status, JSON.stringify(env)).toBe(1)
      expect(result.stderr, JSON.stringify(env)).toMatch(message)
      // A database password never reaches the log.
      expect(result.stderr, JSON.stringify(env)).not.toContain("secret")
    })
  }, 180_000)
})

describe.skipIf(ClickhouseTestServer.skip() !== undefined)("standalone server on ClickHouse", () => {
  it("stores verifications in ClickHouse and the catalog in SQLite, and both survive a restart", async () => {
    const database = ClickhouseTestServer.databaseName()
    const cwd = mkdtempSync(join(tmpdir(), "keymeter-clickhouse-"))
    const env = {
      KEYMETER_STORAGE: `sqlite:${join(cwd, "catalog.db")}`,
      KEYMETER_ANALYTICS: `clickhouse:${ClickhouseTestServer.url}/${database}`,
      KEYMETER_PROVISION: "examples/provision.json"
    }
    try {
      const auth = { authorization: "Bearer sk_acme_admin_8f3e1c7a9b2d4e6f0a1c", "content-type": "application/json" }
      const first = await serve(env)
      const recorded = await fetch(`${first.base}/v1/analytics.recordVerifications`, {
        method: "POST",
        headers: auth,
        body: batch(1000)
      })
      expect(recorded.status).toBe(200)
      const override = await fetch(`${first.base}/v1/ratelimits.setOverride`, {
        method: "POST",
        headers: auth,
        body: JSON.stringify({ namespaceName: "email", identifier: "user_*", limit: 3, duration: 60_000 })
      })
      expect(override.status).toBe(200)
      expect(await stop(running.pop()!)).toBe(0)
      const second = await serve(env)
      const read = await fetch(`${second.base}/v1/analytics.getVerifications?apiId=api_main&start=0&groupBy=tag`, {
        headers: auth
      })
      expect(await read.json()).toEqual([
        expect.objectContaining({ tag: "a", total: 1000, valid: 1000 }),
        expect.objectContaining({ tag: "b", total: 1000, valid: 1000 })
      ])
      const got = await fetch(`${second.base}/v1/ratelimits.getOverride?namespaceName=email&identifier=user_*`, {
        headers: auth
      })
      expect(((await got.json()) as { limit: number }).limit).toBe(3)
    } finally {
      await Effect.runPromise(ClickhouseTestServer.dropDatabase(database))
    }
  })

  it("with a spool, answers ingest once on local disk; killed before shipping, the next start ships it", async () => {
    const database = ClickhouseTestServer.databaseName()
    const cwd = mkdtempSync(join(tmpdir(), "keymeter-clickhouse-"))
    const env = {
      KEYMETER_STORAGE: `sqlite:${join(cwd, "catalog.db")}`,
      KEYMETER_ANALYTICS: `clickhouse:${ClickhouseTestServer.url}/${database}`,
      KEYMETER_ANALYTICS_SPOOL: join(cwd, "spool"),
      KEYMETER_PROVISION: "examples/provision.json"
    }
    const auth = { authorization: "Bearer sk_acme_admin_8f3e1c7a9b2d4e6f0a1c", "content-type": "application/json" }
    const totals = async (base: string) =>
      ((await (await fetch(`${base}/v1/analytics.getVerifications?apiId=api_main&start=0`, { headers: auth }))
        .json()) as Array<{ total: number }>).reduce((n, row) => n + row.total, 0)
    /** The total once it reaches `expected` (shipped each second), or the last seen after 15 s. */
    const eventually = async (base: string, expected: number) => {
      let seen = await totals(base)
      for (let i = 0; i < 150 && seen < expected; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100))
        seen = await totals(base)
      }
      return seen
    }
    try {
      const first = await serve(env)
      const record = (n: number) =>
        fetch(`${first.base}/v1/analytics.recordVerifications`, { method: "POST", headers: auth, body: batch(n) })
      expect((await record(500)).status).toBe(200)
      // Shipped within the interval, once.
      expect(await eventually(first.base, 500)).toBe(500)
      // Acknowledged, then killed at once: not yet in ClickHouse, but on disk.
      const answers = await Promise.all(Array.from({ length: 8 }, () => record(100)))
      expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200))
      await stop(running.pop()!, "SIGKILL")
      const second = await serve(env)
      expect(await eventually(second.base, 1300)).toBe(1300)
      await new Promise((resolve) => setTimeout(resolve, 1500))
      expect(await totals(second.base)).toBe(1300)
    } finally {
      await Effect.runPromise(ClickhouseTestServer.dropDatabase(database))
    }
  })
})
