/**
 * Unkey's official v2 client (`@unkey/api@2.5.1`) pointed at the standalone server on SQLite:
 * every route it calls in scope, through its own zod schemas, which throw on any answer that is
 * not exactly Unkey v2's (a field missing or mistyped, a null where absence is due, a wrong media
 * type). One domain under two dialects: what /v1 makes, /v2 reads, and the other way round.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import type { UnkeyContext } from "@unkey/hono"
import { unkey as unkeyMiddleware } from "@unkey/hono"
import { Hono } from "hono"
import { createHash } from "node:crypto"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Unkey as UnkeyV1 } from "unkey-v1"
import { Unkey } from "unkey-v2"
import * as errors from "unkey-v2/models/errors"
import type { Running } from "./Spawn.js"
import { root, serveKeymeter, stop } from "./Spawn.js"

const ADMIN = "sk_acme_admin_8f3e1c7a9b2d4e6f0a1c"
const READER = "sk_acme_reader_5d2b9e4f7c1a3e8b6d0f"
/** May verify the keys of api_main only. */
const VERIFIER = "sk_acme_verifier_main_0c4f9a2e7b1d3c5e"
/** May read and update keys, and nothing of RBAC. */
const KEY_EDITOR = "sk_acme_key_editor_6e1b3d5f7a9c2e4b"

let server: Running
let base = ""

beforeAll(async () => {
  // The example workspace, with narrower root keys beside its own.
  const provision = JSON.parse(readFileSync(join(root, "examples/provision.json"), "utf8"))
  provision.workspaces[0].apis.push({ id: "api_other", name: "other" })
  provision.workspaces[0].rootKeys.push(
    { key: VERIFIER, permissions: ["api.api_main.verify_key"] },
    { key: KEY_EDITOR, permissions: ["api.*.update_key", "api.*.read_key", "api.*.create_key"] }
  )
  const dir = mkdtempSync(join(tmpdir(), "keymeter-v2-"))
  const file = join(dir, "provision.json")
  writeFileSync(file, JSON.stringify(provision))
  // The embedded default storage, as `npm start` runs it.
  const started = await serveKeymeter({ KEYMETER_PROVISION: file, KEYMETER_STORAGE: `sqlite:${join(dir, "k.db")}` })
  server = started.server
  base = started.base
})
afterAll(async () => {
  if (server !== undefined) await stop(server)
})

/** The v2 client as a user would make it, with no retries so that a failure shows at once. */
const client = (rootKey: string) => new Unkey({ rootKey, serverURL: base, retryConfig: { strategy: "none" } })

/** The v1 client, for what one dialect makes and the other reads. */
const clientV1 = (rootKey: string) =>
  new UnkeyV1({ rootKey, baseUrl: base, disableTelemetry: true, retry: { attempts: 0 } })

/** Every page of a list, walked with the SDK's own iterator (which follows the cursor alone). */
const walk = async <T>(first: AsyncIterable<{ readonly result: { readonly data: ReadonlyArray<T> } }>) => {
  const pages: Array<ReadonlyArray<T>> = []
  for await (const page of first) pages.push(page.result.data)
  return pages
}

/** The error a call throws, for its class and fields to be checked. */
const thrown = async (call: Promise<unknown>) => {
  try {
    await call
  } catch (error) {
    return error
  }
  throw new Error("the call did not fail")
}

describe("Unkey's v2 client against keymeter", () => {
  it("creates, reads, updates, verifies and deletes keys with the SDK's own schemas judging every answer", async () => {
    const unkey = client(ADMIN)
    const api = await unkey.apis.createApi({ name: "v2-keys" })
    expect(api.meta.requestId).toMatch(/^req_/)
    const apiId = api.data.apiId
    expect(await unkey.apis.getApi({ apiId })).toMatchObject({ data: { id: apiId, name: "v2-keys" } })

    const created = await unkey.keys.createKey({
      apiId,
      prefix: "acme",
      name: "first",
      externalId: "user_v2",
      meta: { plan: "pro" },
      credits: { remaining: 3, refill: { interval: "daily", amount: 3 } },
      ratelimits: [{ name: "requests", limit: 10, duration: 60_000, autoApply: true }]
    })
    expect(created.data.key).toMatch(/^acme_/)
    const keyId = created.data.keyId

    const read = await unkey.keys.getKey({ keyId })
    expect(read.data).toMatchObject({
      keyId,
      start: created.data.key.slice(0, 9),
      enabled: true,
      name: "first",
      meta: { plan: "pro" },
      credits: { remaining: 3, refill: { interval: "daily", amount: 3 } },
      identity: { externalId: "user_v2" },
      ratelimits: [{ name: "requests", limit: 10, duration: 60_000, autoApply: true }]
    })
    expect((await unkey.keys.whoami({ key: created.data.key })).data.keyId).toBe(keyId)

    const valid = await unkey.keys.verifyKey({ key: created.data.key, tags: ["path=/v2"] })
    expect(valid.data).toMatchObject({
      valid: true,
      code: "VALID",
      keyId,
      credits: 2,
      identity: { externalId: "user_v2" },
      ratelimits: [{ name: "requests", limit: 10, remaining: 9, exceeded: false, autoApply: true, duration: 60_000 }]
    })
    expect(typeof valid.data.ratelimits![0]!.reset).toBe("number")

    await unkey.keys.updateKey({ keyId, name: null, enabled: false, meta: null })
    const disabled = await unkey.keys.verifyKey({ key: created.data.key })
    expect(disabled.data).toMatchObject({ valid: false, code: "DISABLED" })
    const after = await unkey.keys.getKey({ keyId })
    expect(after.data.name).toBeUndefined()
    expect(after.data.meta).toBeUndefined()
    await unkey.keys.updateKey({ keyId, enabled: true, credits: { remaining: null } })
    const unlimited = await unkey.keys.verifyKey({ key: created.data.key })
    expect(unlimited.data.valid).toBe(true)
    expect(unlimited.data.credits).toBeUndefined()

    await unkey.keys.deleteKey({ keyId })
    expect((await unkey.keys.verifyKey({ key: created.data.key })).data).toEqual({ valid: false, code: "NOT_FOUND" })
    const missing = await thrown(unkey.keys.getKey({ keyId }))
    expect(missing).toBeInstanceOf(errors.NotFoundErrorResponse)
    expect((missing as errors.NotFoundErrorResponse).error.status).toBe(404)
  })

  it("a key made through /v1 verifies through /v2 and the other way round, counted once each", async () => {
    const v1 = clientV1(ADMIN)
    const v2 = client(ADMIN)
    const made = await v1.keys.create({ apiId: "api_main", remaining: 5 })
    expect(made.error).toBeUndefined()
    expect((await v2.keys.verifyKey({ key: made.result!.key })).data).toMatchObject({ valid: true, credits: 4 })
    const madeV2 = await v2.keys.createKey({ apiId: "api_main", credits: { remaining: 5 } })
    const viaV1 = await v1.keys.verify({ apiId: "api_main", key: madeV2.data.key })
    expect(viaV1.result).toMatchObject({ valid: true, remaining: 4 })
    expect((await v2.keys.getKey({ keyId: made.result!.keyId })).data.credits).toEqual({ remaining: 4 })
  })

  it("errors reach the SDK as its typed errors, with v2's problem body", async () => {
    const unkey = client(ADMIN)
    const bad = await thrown(unkey.keys.createKey({ apiId: "api_main", byteLength: 4 }))
    expect(bad).toBeInstanceOf(errors.BadRequestErrorResponse)
    const details = (bad as errors.BadRequestErrorResponse).error
    expect(details.status).toBe(400)
    expect(details.errors[0]).toMatchObject({ location: "body.byteLength" })

    const unauthorized = await thrown(client("sk_nobody").apis.getApi({ apiId: "api_main" }))
    expect(unauthorized).toBeInstanceOf(errors.UnauthorizedErrorResponse)

    const forbidden = await thrown(client(READER).keys.createKey({ apiId: "api_main" }))
    expect(forbidden).toBeInstanceOf(errors.ForbiddenErrorResponse)

    const gone = await thrown(unkey.identities.deleteIdentity({ identity: "nobody" }))
    expect(gone).toBeInstanceOf(errors.NotFoundErrorResponse)

    const raw = await fetch(`${base}/v2/apps.listApps`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      body: "{}"
    })
    expect(raw.status).toBe(404)
    expect(await raw.json()).toMatchObject({ meta: { requestId: expect.any(String) }, error: { status: 404 } })
  })

  it("every verification code, and a key of an api the root key may not verify answered NOT_FOUND", async () => {
    const unkey = client(ADMIN)
    const make = async (fields: Partial<Parameters<typeof unkey.keys.createKey>[0]> = {}) =>
      (await unkey.keys.createKey({ apiId: "api_main", ...fields })).data.key
    const verify = async (key: string, extra: object = {}, rootKey = ADMIN) =>
      (await client(rootKey).keys.verifyKey({ key, ...extra })).data

    const plain = await make({ permissions: ["docs.read", "docs.write"] })
    expect(await verify(plain, { permissions: "docs.read AND (docs.write OR admin)" })).toMatchObject({
      valid: true,
      code: "VALID",
      permissions: ["docs.read", "docs.write"]
    })
    expect((await verify(plain, { permissions: "admin OR (docs.read AND billing)" })).code).toBe(
      "INSUFFICIENT_PERMISSIONS"
    )
    const malformed = await thrown(client(ADMIN).keys.verifyKey({ key: plain, permissions: "docs.read AND" }))
    expect(malformed).toBeInstanceOf(errors.BadRequestErrorResponse)
    expect((await verify(await make({ enabled: false }))).code).toBe("DISABLED")
    expect((await verify(await make({ expires: Date.now() - 1 }))).code).toBe("EXPIRED")
    const spent = await make({ credits: { remaining: 1 } })
    expect(await verify(spent)).toMatchObject({ code: "VALID", credits: 0 })
    expect(await verify(spent)).toMatchObject({ valid: false, code: "USAGE_EXCEEDED", credits: 0 })
    const limited = await make({ ratelimits: [{ name: "burst", limit: 1, duration: 60_000, autoApply: true }] })
    expect((await verify(limited)).code).toBe("VALID")
    expect(await verify(limited)).toMatchObject({
      code: "RATE_LIMITED",
      ratelimits: [{ name: "burst", exceeded: true, remaining: 0 }]
    })
    expect((await verify("acme_not_a_key")).code).toBe("NOT_FOUND")

    // The verifier may verify api_main's keys only: another api's key is not found, not forbidden.
    expect((await verify(plain, {}, VERIFIER)).code).toBe("VALID")
    const other = (await unkey.keys.createKey({ apiId: "api_other" })).data.key
    expect(await verify(other, {}, VERIFIER)).toEqual({ valid: false, code: "NOT_FOUND" })
    const refused = await thrown(client(READER).keys.verifyKey({ key: plain }))
    expect(refused).toBeInstanceOf(errors.ForbiddenErrorResponse)
  })

  it("credits set, incremented and decremented; reroll keeps the configuration and retires the old key", async () => {
    const unkey = client(ADMIN)
    const { key, keyId } = (await unkey.keys.createKey({
      apiId: "api_main",
      meta: { team: "a" },
      credits: { remaining: 10 }
    })).data
    expect((await unkey.keys.updateCredits({ keyId, operation: "decrement", value: 3 })).data).toEqual({ remaining: 7 })
    expect((await unkey.keys.updateCredits({ keyId, operation: "increment", value: 5 })).data).toEqual({
      remaining: 12
    })
    expect((await unkey.keys.updateCredits({ keyId, operation: "decrement", value: 50 })).data).toEqual({
      remaining: 0
    })
    expect((await unkey.keys.updateCredits({ keyId, operation: "set", value: 4 })).data).toEqual({ remaining: 4 })
    const bad = await thrown(unkey.keys.updateCredits({ keyId, operation: "increment" }))
    expect(bad).toBeInstanceOf(errors.BadRequestErrorResponse)

    const kept = (await unkey.keys.rerollKey({ keyId, expiration: 60_000 })).data
    expect(kept.keyId).not.toBe(keyId)
    expect((await unkey.keys.verifyKey({ key: kept.key })).data).toMatchObject({
      valid: true,
      meta: { team: "a" },
      credits: 3
    })
    expect((await unkey.keys.verifyKey({ key })).data).toMatchObject({ valid: true })
    expect((await unkey.keys.getKey({ keyId })).data.expires).toBeGreaterThan(Date.now())

    const now = (await unkey.keys.rerollKey({ keyId: kept.keyId, expiration: 0 })).data
    expect((await unkey.keys.verifyKey({ key: kept.key })).data.code).toBe("EXPIRED")
    expect((await unkey.keys.verifyKey({ key: now.key })).data.valid).toBe(true)
    expect((await unkey.keys.updateCredits({ keyId: now.keyId, operation: "set", value: null })).data).toEqual({
      remaining: null
    })
  })

  it("migrateKeys imports by hash (hex or base64), listing the hashes a key has already as failed", async () => {
    const unkey = client(ADMIN)
    const secrets = ["legacy_one_7f3a9c", "legacy_two_8e2b4d", "legacy_three_1c5e7a"]
    const hex = createHash("sha256").update(secrets[0]!).digest("hex")
    const b64 = createHash("sha256").update(secrets[1]!).digest("base64")
    const first = await unkey.keys.migrateKeys({
      migrationId: "legacy",
      apiId: "api_main",
      keys: [{ hash: hex, name: "one", credits: { remaining: 2 } }, { hash: b64, externalId: "legacy_user" }]
    })
    expect(first.data.failed).toEqual([])
    expect(first.data.migrated.map((m) => m.hash)).toEqual([hex, b64])
    expect((await unkey.keys.verifyKey({ key: secrets[0]! })).data).toMatchObject({ valid: true, credits: 1 })
    expect((await unkey.keys.verifyKey({ key: secrets[1]! })).data).toMatchObject({
      valid: true,
      identity: { externalId: "legacy_user" }
    })
    const hex3 = createHash("sha256").update(secrets[2]!).digest("hex")
    const again = await unkey.keys.migrateKeys({
      migrationId: "legacy",
      apiId: "api_main",
      keys: [{ hash: hex }, { hash: hex3 }, { hash: hex3 }]
    })
    expect(again.data.failed).toEqual([hex, hex3])
    expect(again.data.migrated.map((m) => m.hash)).toEqual([hex3])
  })

  it("pages through listKeys, listIdentities, listPermissions, listRoles and listOverrides with the SDK's iterator", async () => {
    const unkey = client(ADMIN)
    const apiId = (await unkey.apis.createApi({ name: "paged" })).data.apiId
    const made: Array<string> = []
    for (let i = 0; i < 5; i++) {
      made.push((await unkey.keys.createKey({ apiId, externalId: i % 2 === 0 ? "even" : "odd" })).data.keyId)
    }
    const keyPages = await walk(await unkey.apis.listKeys({ apiId, limit: 2 }))
    expect(keyPages.map((page) => page.length)).toEqual([2, 2, 1])
    expect(keyPages.flat().map((key) => key.keyId)).toEqual(made)
    const evens = await walk(await unkey.apis.listKeys({ apiId, externalId: "even" }))
    expect(evens.flat()).toHaveLength(3)

    for (const name of ["paged_a", "paged_b", "paged_c"]) await unkey.identities.createIdentity({ externalId: name })
    const identities = await walk(await unkey.identities.listIdentities({ limit: 2, search: "PAGED_" }))
    expect(identities.flat().map((identity) => identity.externalId)).toEqual(["paged_a", "paged_b", "paged_c"])

    for (const slug of ["p.one", "p.two", "p.three"]) {
      await unkey.permissions.createPermission({ name: slug, slug })
    }
    const permissions = await walk(await unkey.permissions.listPermissions({ limit: 2, search: "p." }))
    expect(permissions.flat().map((p) => p.slug).sort()).toEqual(["p.one", "p.three", "p.two"])
    for (const name of ["role.one", "role.two", "role.three"]) {
      await unkey.permissions.createRole({ name, permissions: ["p.one"] })
    }
    const roles = (await walk(await unkey.permissions.listRoles({ limit: 2, search: "role." }))).flat()
    expect(roles).toHaveLength(3)
    expect(roles[0]!.permissions).toEqual([expect.objectContaining({ slug: "p.one", name: "p.one" })])

    for (let i = 0; i < 3; i++) {
      await unkey.ratelimit.setOverride({ namespace: "paged", identifier: `user_${i}`, limit: 5, duration: 1000 })
    }
    const overrides = await walk(await unkey.ratelimit.listOverrides({ namespace: "paged", limit: 2 }))
    expect(overrides.map((page) => page.length)).toEqual([2, 1])
  })

  it("identities: made, read by id or externalId, updated, shared by keys, deleted", async () => {
    const unkey = client(ADMIN)
    const { identityId } = (await unkey.identities.createIdentity({
      externalId: "org_v2",
      meta: { tier: "gold" },
      ratelimits: [{ name: "org", limit: 2, duration: 60_000, autoApply: true }]
    })).data
    const conflict = await thrown(unkey.identities.createIdentity({ externalId: "org_v2" }))
    expect(conflict).toBeInstanceOf(errors.ConflictErrorResponse)
    const byExternal = await unkey.identities.getIdentity({ identity: "org_v2" })
    expect(byExternal.data).toMatchObject({
      id: identityId,
      externalId: "org_v2",
      meta: { tier: "gold" },
      ratelimits: [{ name: "org", limit: 2, duration: 60_000, autoApply: true }]
    })
    expect((await unkey.identities.getIdentity({ identity: identityId })).data.externalId).toBe("org_v2")

    // Two keys of the identity share its limit.
    const one = (await unkey.keys.createKey({ apiId: "api_main", externalId: "org_v2" })).data.key
    const two = (await unkey.keys.createKey({ apiId: "api_main", externalId: "org_v2" })).data.key
    expect((await unkey.keys.verifyKey({ key: one })).data.valid).toBe(true)
    expect((await unkey.keys.verifyKey({ key: two })).data.valid).toBe(true)
    expect((await unkey.keys.verifyKey({ key: one })).data.code).toBe("RATE_LIMITED")

    const updated = await unkey.identities.updateIdentity({ identity: "org_v2", meta: {}, ratelimits: [] })
    expect(updated.data.meta).toEqual({})
    expect(updated.data.ratelimits).toEqual([])
    expect((await unkey.keys.verifyKey({ key: one })).data.valid).toBe(true)
    const deleted = await unkey.identities.deleteIdentity({ identity: identityId })
    expect(deleted.meta.requestId).toMatch(/^req_/)
    expect((await unkey.keys.verifyKey({ key: one })).data.identity).toBeUndefined()
  })

  it("permissions and roles: created, read by id, slug or name, given to keys, checked by verifyKey, deleted", async () => {
    const unkey = client(ADMIN)
    const { permissionId } = (await unkey.permissions.createPermission({
      name: "Invoices read",
      slug: "invoices.read",
      description: "read invoices"
    })).data
    expect((await unkey.permissions.getPermission({ permission: permissionId })).data).toEqual({
      id: permissionId,
      name: "Invoices read",
      slug: "invoices.read",
      description: "read invoices"
    })
    const { roleId } = (await unkey.permissions.createRole({
      name: "billing",
      permissions: ["invoices.read", "invoices.write"]
    })).data
    const role = (await unkey.permissions.getRole({ role: "billing" })).data
    expect(role.id).toBe(roleId)
    expect(role.permissions?.map((p) => p.slug)).toEqual(["invoices.read", "invoices.write"])

    const { key, keyId } = (await unkey.keys.createKey({ apiId: "api_main" })).data
    const editor = client(KEY_EDITOR)
    expect((await editor.keys.addRoles({ keyId, roles: ["billing"] })).data).toEqual([
      { id: roleId, name: "billing" }
    ])
    expect((await unkey.keys.verifyKey({ key, permissions: "invoices.write" })).data).toMatchObject({
      valid: true,
      roles: ["billing"]
    })
    // Adding a permission the workspace has not needs rbac.*.create_permission, which the editor lacks.
    const denied = await thrown(editor.keys.addPermissions({ keyId, permissions: ["reports.read"] }))
    expect(denied).toBeInstanceOf(errors.ForbiddenErrorResponse)
    const added = await unkey.keys.addPermissions({ keyId, permissions: ["reports.read", "invoices.read"] })
    expect(added.data.map((p) => p.slug)).toEqual(["reports.read", "invoices.read"])
    expect((await editor.keys.removePermissions({ keyId, permissions: [permissionId] })).data.map((p) => p.slug))
      .toEqual(["reports.read"])
    expect((await editor.keys.setPermissions({ keyId, permissions: [] })).data).toEqual([])
    expect((await editor.keys.setRoles({ keyId, roles: [roleId] })).data).toEqual([{ id: roleId, name: "billing" }])
    expect((await editor.keys.removeRoles({ keyId, roles: ["billing"] })).data).toEqual([])
    const unknownRole = await thrown(editor.keys.addRoles({ keyId, roles: ["nope"] }))
    expect(unknownRole).toBeInstanceOf(errors.NotFoundErrorResponse)

    await unkey.keys.addRoles({ keyId, roles: ["billing"] })
    await unkey.permissions.deleteRole({ role: roleId })
    expect((await unkey.keys.verifyKey({ key, permissions: "invoices.write" })).data.code).toBe(
      "INSUFFICIENT_PERMISSIONS"
    )
    await unkey.permissions.deletePermission({ permission: "invoices.read" })
    const missing = await thrown(unkey.permissions.getPermission({ permission: permissionId }))
    expect(missing).toBeInstanceOf(errors.NotFoundErrorResponse)
  })

  it("ratelimit: limits, overrides by namespace name or id resolving through limit, multiLimit", async () => {
    const unkey = client(ADMIN)
    const limit = (identifier: string, namespace = "v2-api") =>
      unkey.ratelimit.limit({ namespace, identifier, limit: 2, duration: 60_000 })
    expect((await limit("u1")).data).toMatchObject({ success: true, limit: 2, remaining: 1 })
    await limit("u1")
    expect((await limit("u1")).data).toMatchObject({ success: false, remaining: 0 })

    const { overrideId } = (await unkey.ratelimit.setOverride({
      namespace: "v2-api",
      identifier: "vip_*",
      limit: 10,
      duration: 60_000
    })).data
    expect((await limit("vip_1")).data).toMatchObject({ success: true, limit: 10, remaining: 9, overrideId })
    expect((await unkey.ratelimit.getOverride({ namespace: "v2-api", identifier: "vip_*" })).data).toEqual({
      overrideId,
      identifier: "vip_*",
      limit: 10,
      duration: 60_000
    })
    // The example's namespace `email` has the id rlns_email: either names it.
    await unkey.ratelimit.setOverride({ namespace: "rlns_email", identifier: "xyz", limit: 1, duration: 1000 })
    expect((await unkey.ratelimit.getOverride({ namespace: "email", identifier: "xyz" })).data.limit).toBe(1)
    expect((await limit("xyz", "rlns_email")).data).toMatchObject({ limit: 1, success: true })
    expect((await limit("xyz", "email")).data).toMatchObject({ limit: 1, success: false })
    await unkey.ratelimit.deleteOverride({ namespace: "v2-api", identifier: "vip_*" })
    expect((await limit("vip_2")).data.limit).toBe(2)
    const gone = await thrown(unkey.ratelimit.getOverride({ namespace: "v2-api", identifier: "vip_*" }))
    expect(gone).toBeInstanceOf(errors.NotFoundErrorResponse)

    const multi = await unkey.ratelimit.multiLimit([
      { namespace: "v2-api", identifier: "m1", limit: 1, duration: 60_000 },
      { namespace: "v2-api", identifier: "u1", limit: 2, duration: 60_000 }
    ])
    expect(multi.data.passed).toBe(false)
    expect(multi.data.limits.map((l) => [l.identifier, l.passed])).toEqual([["m1", true], ["u1", false]])
  })

  it("multiLimit under concurrency takes exactly its limits' worth, each check independent", async () => {
    const unkey = client(ADMIN)
    const calls = Array.from({ length: 60 }, () =>
      unkey.ratelimit.multiLimit([
        { namespace: "burst", identifier: "a", limit: 25, duration: 60_000 },
        { namespace: "burst", identifier: "b", limit: 40, duration: 60_000 }
      ]))
    const answers = await Promise.all(calls)
    const passedOf = (i: number) => answers.filter((answer) => answer.data.limits[i]!.passed).length
    expect(passedOf(0)).toBe(25)
    expect(passedOf(1)).toBe(40)
    expect(answers.filter((answer) => answer.data.passed).length).toBe(25)
  })

  it("@unkey/hono@2 guards a Hono route with keys keymeter verifies (its fixed api.unkey.com pointed here)", async () => {
    const real = globalThis.fetch
    // The helper makes its client with no server option: Unkey's address is sent to keymeter's.
    globalThis.fetch = (input, init) =>
      real(
        input instanceof Request && input.url.startsWith("https://api.unkey.com/")
          ? new Request(input.url.replace("https://api.unkey.com", base), input)
          : input,
        init
      )
    try {
      const app = new Hono<{ Variables: { unkey: UnkeyContext } }>()
      app.use(
        "*",
        unkeyMiddleware({
          rootKey: ADMIN,
          permissions: "docs.read",
          handleInvalidKey: (c, result) => c.json({ code: result.data.code }, 403)
        })
      )
      app.get("/", (c) => c.json({ keyId: c.get("unkey").data.keyId }))
      const { key, keyId } =
        (await client(ADMIN).keys.createKey({ apiId: "api_main", permissions: ["docs.read"] })).data
      const ok = await app.request("/", { headers: { authorization: `Bearer ${key}` } })
      expect(ok.status).toBe(200)
      expect(await ok.json()).toEqual({ keyId })
      const without = (await client(ADMIN).keys.createKey({ apiId: "api_main" })).data.key
      const denied = await app.request("/", { headers: { authorization: `Bearer ${without}` } })
      expect(denied.status).toBe(403)
      expect(await denied.json()).toEqual({ code: "INSUFFICIENT_PERMISSIONS" })
      expect((await app.request("/")).status).toBe(401)
    } finally {
      globalThis.fetch = real
    }
  })
})
