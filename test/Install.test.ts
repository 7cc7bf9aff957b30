/**
 * keymeter as a user installs it: every publishable package built, packed with `npm pack`, and
 * installed from the tarballs into fresh projects that have never heard of this repository (a
 * plain package.json: no TypeScript, no tsx, no workspace links), then used the documented ways.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Tarballs } from "@keymeter/testing"
import { spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Running } from "./Spawn.js"
import { freePort, root, startNode, stop } from "./Spawn.js"

const work = mkdtempSync(join(tmpdir(), "keymeter-install-"))
const tarballs = join(work, "tarballs")
const tarball = (pkg: Tarballs.Published) => Tarballs.tarball(tarballs, pkg)
const project = (name: string, packages: ReadonlyArray<Tarballs.Published>, extra?: ReadonlyArray<string>) =>
  Tarballs.install(join(work, name), tarballs, packages, extra)
const { env, MEMORY, PUBLISHED, run } = Tarballs

/** Runs a command to its end and resolves with its exit code and everything it printed. */
const outcome = (command: string, args: ReadonlyArray<string>, cwd: string) =>
  new Promise<{ readonly status: number | null; readonly output: string }>((resolve) => {
    const child = spawn(command, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.once("close", (status) => resolve({ status, output }))
  })

const node = (dir: string, script: string, source: string) => {
  writeFileSync(join(dir, script), source)
  return run(process.execPath, [script], dir)
}

/**
 * Records verifications through `base` (the mounted API), reads them grouped by day, sets an
 * override and calls the limiter twice; prints the answers as one JSON line.
 */
const exercise = `
const exercise = async (base, key) => {
  const call = async (path, body) => {
    const response = await fetch(base + path, {
      method: body === undefined ? "GET" : "POST",
      headers: { authorization: "Bearer " + key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body)
    })
    return { status: response.status, body: await response.json() }
  }
  const api = await call("/v1/apis.createApi", { name: "main" })
  const apiId = api.body.apiId
  const recorded = await call("/v1/analytics.recordVerifications", { verifications: [
    { apiId, keyId: "key_1", outcome: "valid" },
    { apiId, keyId: "key_1", outcome: "rateLimited" },
    { apiId, keyId: "key_2", outcome: "valid" }
  ] })
  const days = await call("/v1/analytics.getVerifications?apiId=" + apiId + "&groupBy=day&start=" + (Date.now() - 86400000))
  const override = await call("/v1/ratelimits.setOverride", { namespaceName: "email", identifier: "user_*", limit: 1, duration: 60000 })
  const limit = { namespace: "email", identifier: "user_7", limit: 100, duration: 60000 }
  const first = await call("/v1/ratelimits.limit", limit)
  const second = await call("/v1/ratelimits.limit", limit)
  // The dashboard, its assets shipped in the package.
  const page = await (await fetch(base + "/dashboard")).text()
  const script = page.match(new RegExp("dashboard/assets/app-[0-9a-f]+[.]js"))?.[0]
  const asset = script === undefined ? 0 : (await fetch(base + "/" + script)).status
  return { api, recorded, days, override, first, second, dashboard: { script, asset } }
}
`

const expectExercised = (output: string) => {
  const answers = JSON.parse(output.trim().split("\n").pop()!)
  expect(answers.api.status).toBe(200)
  expect(answers.recorded.body).toEqual({ recorded: 3 })
  expect(answers.days.status).toBe(200)
  expect(answers.days.body.at(-1)).toMatchObject({ total: 3, valid: 2, rateLimited: 1 })
  expect(answers.override.body.overrideId).toMatch(/^rlor_/)
  expect(answers.first.body).toMatchObject({ success: true, limit: 1, remaining: 0 })
  expect(answers.first.body.overrideId).toBe(answers.override.body.overrideId)
  expect(answers.second.body).toMatchObject({ success: false, limit: 1 })
  expect(answers.dashboard.script).toBeDefined()
  expect(answers.dashboard.asset).toBe(200)
}

let memory: string
const running: Array<Running> = []

beforeAll(async () => {
  // The packages as published: built (tsc -b is quick when nothing changed), then packed.
  await Tarballs.packAll(root, tarballs)
  memory = await project("memory", MEMORY, ["express@^5"])
}, 300_000)

afterAll(async () => {
  for (const process of running.splice(0)) await stop(process, "SIGKILL")
  rmSync(work, { recursive: true, force: true })
})

describe("keymeter installed from tarballs", () => {
  it("passes publint and arethetypeswrong (ESM-only profile) for every package", async () => {
    for (const pkg of PUBLISHED) {
      const lint = await outcome(
        process.execPath,
        [join(root, "node_modules/.bin/publint"), "--strict"],
        join(root, "packages", pkg)
      )
      expect(lint.status, lint.output).toBe(0)
      expect(lint.output).toContain("All good!")
      const types = await outcome(
        process.execPath,
        [join(root, "node_modules/.bin/attw"), "--profile", "esm-only", "--format", "ascii", tarball(pkg)],
        root
      )
      expect(types.status, types.output).toBe(0)
    }
  }, 120_000)

  it("embeds on memory storage in node:http under a prefix, without native code or a ClickHouse client", async () => {
    const installed = readdirSync(join(memory, "node_modules"))
    expect(installed).not.toContain("better-sqlite3")
    expect(existsSync(join(memory, "node_modules/@clickhouse"))).toBe(false)
    expect(installed).not.toContain("pg")
    const output = await node(
      memory,
      "app.mjs",
      `import { createServer } from "node:http"
import { createKeymeter } from "keymeter"
${exercise}
const keymeter = await createKeymeter()
const { key } = await keymeter.createRootKey({ permissions: ["*"] })
const handler = keymeter.handler({ prefix: "/keymeter" })
const server = createServer((req, res) => req.url.startsWith("/keymeter") ? handler(req, res) : res.end("host"))
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve))
const answers = await exercise("http://127.0.0.1:" + server.address().port + "/keymeter", key)
server.close()
await keymeter.close()
console.log(JSON.stringify(answers))
`
    )
    expectExercised(output)
  })

  it("mounts in Express 5 with app.use", async () => {
    const output = await node(
      memory,
      "express.mjs",
      `import express from "express"
import { createKeymeter } from "keymeter"
${exercise}
const keymeter = await createKeymeter()
const { key } = await keymeter.createRootKey({ permissions: ["*"] })
const app = express()
app.use("/keymeter", keymeter.handler())
app.get("/", (_, res) => res.send("host"))
const server = await new Promise((resolve) => { const s = app.listen(0, "127.0.0.1", () => resolve(s)) })
const answers = await exercise("http://127.0.0.1:" + server.address().port + "/keymeter", key)
server.close()
await keymeter.close()
console.log(JSON.stringify(answers))
`
    )
    expectExercised(output)
  })

  it("loads from a CommonJS module with await import()", async () => {
    const output = await node(
      memory,
      "service.cjs",
      `(async () => {
  const { createKeymeter } = await import("keymeter")
  const keymeter = await createKeymeter()
  const { apiId } = await keymeter.createApi({ name: "main" })
  await keymeter.record([{ apiId, keyId: "key_1", outcome: "valid" }])
  const [point] = await keymeter.getVerifications({ apiId })
  await keymeter.close()
  console.log(JSON.stringify(point))
})()
`
    )
    expect(JSON.parse(output)).toMatchObject({ total: 1, valid: 1 })
  })

  it("names the package to install when a storage string needs a missing adapter", async () => {
    const output = await node(
      memory,
      "missing.mjs",
      `import { createKeymeter } from "keymeter"
try { await createKeymeter({ storage: "sqlite:./k.db" }) } catch (error) { console.log(JSON.stringify([error.code, error.message])) }
`
    )
    const [code, message] = JSON.parse(output)
    expect(code).toBe("BAD_REQUEST")
    expect(message).toContain("npm install @keymeter/storage-sqlite")
  })

  it("type-checks a TypeScript consumer under nodenext and bundler resolution, and reports a wrong groupBy", async () => {
    const dir = join(memory, "typed")
    mkdirSync(dir)
    writeFileSync(
      join(dir, "index.ts"),
      `import { createKeymeter, type Keymeter, KeymeterError } from "keymeter"
const keymeter: Keymeter = await createKeymeter({ storage: "memory" })
const points = await keymeter.getVerifications({ apiId: "api_1", groupBy: "day", keyId: ["a", "b"] })
const total: number = points[0]!.total
const { success }: { success: boolean } = await keymeter.limit({ namespace: "n", identifier: "u", limit: 1, duration: 1000 })
export const checked = [total, success, KeymeterError] as const
`
    )
    writeFileSync(
      join(dir, "wrong.ts"),
      `import { createKeymeter } from "keymeter"
const keymeter = await createKeymeter()
export const points = await keymeter.getVerifications({ apiId: "api_1", groupBy: "week" })
`
    )
    const tsc = (moduleResolution: string, files: ReadonlyArray<string>) =>
      outcome(process.execPath, [
        join(root, "node_modules/typescript/bin/tsc"),
        "--noEmit",
        "--strict",
        "--skipLibCheck",
        "--target",
        "es2022",
        "--module",
        moduleResolution === "bundler" ? "esnext" : "nodenext",
        "--moduleResolution",
        moduleResolution,
        "--types",
        "node",
        "--typeRoots",
        join(root, "node_modules/@types"),
        ...files
      ], dir)
    for (const resolution of ["nodenext", "bundler"]) {
      const good = await tsc(resolution, ["index.ts"])
      expect(good.output, resolution).toBe("")
      expect(good.status).toBe(0)
      const bad = await tsc(resolution, ["wrong.ts"])
      expect(bad.status).not.toBe(0)
      expect(bad.output).toMatch(/wrong\.ts\(3,[0-9]+\): error TS2322: Type '"week"'/)
    }
  })

  it("runs keymeter-server on SQLite, and the keymeter CLI makes a root key the server accepts", async () => {
    const dir = await project("sqlite", [...MEMORY, "storage-sql", "storage-sqlite"])
    const db = join(dir, "data", "keymeter.db")
    const port = await freePort()
    const server = await startNode([join(dir, "node_modules/.bin/keymeter-server")], "keymeter-server", {
      cwd: dir,
      env: { ...env, PORT: String(port), KEYMETER_STORAGE: `sqlite:${db}` },
      ready: /Listening on/
    })
    running.push(server)
    const cli = async (...args: Array<string>) =>
      JSON.parse(await run(process.execPath, [join(dir, "node_modules/.bin/keymeter"), ...args, "--db", db], dir))
    const { apiId: api } = await cli("api", "create", "--workspace", "ws_default", "--name", "main")
    const created = await cli("root-key", "create", "--workspace", "ws_default", "--permission", "api.*.read_api")
    const answer = await fetch(`http://127.0.0.1:${port}/v1/analytics.getVerifications?apiId=${api}`, {
      headers: { authorization: `Bearer ${created.key}` }
    })
    expect(answer.status).toBe(200)
    expect(((await answer.json()) as Array<{ total: number }>)[0]!.total).toBe(0)
    const refused = await fetch(`http://127.0.0.1:${port}/v1/analytics.getVerifications?apiId=${api}`, {
      headers: { authorization: "Bearer sk_not_a_key" }
    })
    expect(refused.status).toBe(401)
    expect(await stop(server)).toBe(0)
  }, 300_000)
})
