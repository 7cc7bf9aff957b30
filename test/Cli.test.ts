import { afterEach, describe, expect, it } from "@effect/vitest"
import { ClickhouseTestServer, PostgresTestServer } from "@keymeter/testing"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { spawnSync } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Running } from "./Spawn.js"
import { freePort, nodeArgs, root, start, stop } from "./Spawn.js"

const running: Array<Running> = []
afterEach(async () => {
  for (const process of running.splice(0)) await stop(process, "SIGKILL")
})

/** The CLI on the SQLite file `db`, or on the catalog a `--storage` in `args` names. */
const keymeter = (db: string | undefined, ...args: Array<string>) => {
  const result = spawnSync(process.execPath, [
    ...nodeArgs("packages/keymeter/src/cli.ts"),
    ...(db !== undefined ? ["--db", db] : []),
    ...args
  ], {
    cwd: root,
    encoding: "utf8",
    timeout: 20_000
  })
  return { status: result.status, stdout: result.stdout, stderr: result.stderr, json: () => JSON.parse(result.stdout) }
}

describe("keymeter admin CLI", () => {
  it("manages workspaces, root keys and apis on the file of a running server", async () => {
    const db = join(mkdtempSync(join(tmpdir(), "keymeter-cli-")), "keymeter.db")
    const port = await freePort()
    const server = await start("packages/keymeter/src/main.ts", {
      env: { PORT: String(port), KEYMETER_STORAGE: `sqlite:${db}` },
      ready: /Listening on (http:\S+)/
    })
    running.push(server)
    const base = server.match[1]!

    const workspace = keymeter(db, "workspace", "create", "--name", "Acme", "--id", "ws_acme")
    expect(workspace.status).toBe(0)
    expect(workspace.json()).toEqual({ id: "ws_acme", name: "Acme" })
    expect(keymeter(db, "workspace", "list").json().map((w: { id: string }) => w.id)).toEqual(["ws_acme", "ws_default"])

    const api = keymeter(db, "api", "create", "--workspace", "ws_acme", "--name", "main")
    const { apiId } = api.json()
    expect(apiId).toMatch(/^api_/)

    const created = keymeter(
      db,
      "root-key",
      "create",
      "--workspace",
      "ws_acme",
      "--permission",
      "api.*.read_api",
      "--permission",
      "api.*.record_verifications"
    )
    expect(created.status).toBe(0)
    const { id, key } = created.json()
    expect(key).toMatch(/^sk_/)
    const listed = keymeter(db, "root-key", "list", "--workspace", "ws_acme").json()
    expect(listed.map((k: { id: string }) => k.id)).toEqual([id])
    expect(JSON.stringify(listed)).not.toContain(key)
    expect(JSON.stringify(listed)).not.toContain("hash")

    // The running server sees the new key and api at once.
    const read = await fetch(`${base}/v1/analytics.getVerifications?apiId=${apiId}`, {
      headers: { authorization: `Bearer ${key}` }
    })
    expect(read.status).toBe(200)

    expect(keymeter(db, "root-key", "revoke", "--workspace", "ws_acme", "--id", id).json()).toEqual({
      id,
      revoked: true
    })
    const revoked = await fetch(`${base}/v1/analytics.getVerifications?apiId=${apiId}`, {
      headers: { authorization: `Bearer ${key}` }
    })
    expect(revoked.status).toBe(401)
  })

  it("reports errors on stderr with a non-zero exit", () => {
    const db = join(mkdtempSync(join(tmpdir(), "keymeter-cli-")), "keymeter.db")
    const missing = keymeter(db, "root-key", "create", "--workspace", "ws_nope", "--permission", "*")
    expect([missing.status, missing.stdout]).toEqual([1, ""])
    expect(missing.stderr).toMatch(/^keymeter: No workspace "ws_nope"/)
    const usage = keymeter(db, "root-key", "create", "--workspace", "ws_nope")
    expect(usage.status).toBe(2)
    expect(usage.stderr).toMatch(/--permission is required/)
    const unknown = keymeter(db, "frobnicate")
    expect(unknown.status).toBe(2)
    expect(unknown.stderr).toMatch(/Unknown command: frobnicate[\s\S]*Usage: keymeter/)
    const revoke = keymeter(db, "root-key", "revoke", "--workspace", "ws_x", "--id", "rk_x")
    expect(revoke.status).toBe(1)
    const storage = keymeter(undefined, "--storage", "mysql://somewhere", "workspace", "list")
    expect(storage.status).toBe(2)
    expect(storage.stderr).toMatch(/^keymeter: --storage must be sqlite:<path> or a postgres:\/\/ URL, got "mysql/)
  })

  it.skipIf((PostgresTestServer.skip() ?? ClickhouseTestServer.skip()) !== undefined)(
    "works on a PostgreSQL catalog: a root key it makes serves at once, and stops once revoked",
    async () => {
      const scope = Effect.runSync(Scope.make())
      // A server on PostgreSQL records verifications in ClickHouse.
      const clickhouseDatabase = ClickhouseTestServer.databaseName()
      try {
        const url = await Effect.runPromise(Scope.extend(PostgresTestServer.freshDatabase(), scope))
        const port = await freePort()
        const server = await start("packages/keymeter/src/main.ts", {
          env: {
            PORT: String(port),
            KEYMETER_STORAGE: url,
            KEYMETER_ANALYTICS: `clickhouse:${ClickhouseTestServer.url}/${clickhouseDatabase}`
          },
          ready: /Listening on (http:\S+)/
        })
        running.push(server)
        const base = server.match[1]!
        const cli = (...args: Array<string>) => keymeter(undefined, "--storage", url, ...args)
        expect(cli("workspace", "create", "--name", "Acme", "--id", "ws_acme").json()).toEqual({
          id: "ws_acme",
          name: "Acme"
        })
        expect(cli("workspace", "list").json().map((w: { id: string }) => w.id)).toEqual(["ws_acme", "ws_default"])
        const { apiId } = cli("api", "create", "--workspace", "ws_acme", "--name", "main").json()
        const { id, key } = cli("root-key", "create", "--workspace", "ws_acme", "--permission", "api.*.read_api")
          .json()
        const read = () =>
          fetch(`${base}/v1/analytics.getVerifications?apiId=${apiId}`, { headers: { authorization: `Bearer ${key}` } })
            .then((reply) => reply.status)
        expect(await read()).toBe(200)
        expect(cli("root-key", "revoke", "--workspace", "ws_acme", "--id", id).json()).toEqual({ id, revoked: true })
        // The server hears of it by notification.
        const started = performance.now()
        while ((await read()) !== 401) {
          if (performance.now() - started > 3_000) throw new Error("the revoked key still served after 3 s")
          await new Promise((resolve) => setTimeout(resolve, 5))
        }
      } finally {
        for (const process of running.splice(0)) await stop(process, "SIGKILL")
        await Effect.runPromise(ClickhouseTestServer.dropDatabase(clickhouseDatabase))
        await Effect.runPromise(Scope.close(scope, Exit.void))
      }
    },
    60_000
  )

  it("says why when the PostgreSQL catalog cannot be reached", () => {
    const bad = keymeter(undefined, "--storage", "postgres://127.0.0.1:1/keymeter", "workspace", "list")
    expect(bad.status).toBe(1)
    // The setting is shown by its scheme and host only: a URL may hold a password.
    expect(bad.stderr).toMatch(/^keymeter: PostgreSQL at postgres:\/\/127\.0\.0\.1:1 could not be used/)
  })
})
