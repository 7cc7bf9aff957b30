/**
 * Unkey's official v1 clients (`@unkey/api@0.38.0`, `@unkey/ratelimit@0.5.5`) pointed at the
 * standalone server: what they send is what keymeter must take, and what keymeter answers must be
 * what they read. Their own encoders judge (comma-joined array parameters, bare 2xx bodies, the
 * error envelope read as `result.error.code`). The routes Unkey's v1 has that keymeter does not
 * serve yet (identities, permissions and roles, migrations) are issue 28's work; this suite grows
 * with them.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Ratelimit } from "@unkey/ratelimit"
import { createHash } from "node:crypto"
import { Unkey } from "unkey-v1"
import type { Running } from "./Spawn.js"
import { serveKeymeter, stop } from "./Spawn.js"

const ADMIN = "sk_acme_admin_8f3e1c7a9b2d4e6f0a1c"
const READER = "sk_acme_reader_5d2b9e4f7c1a3e8b6d0f"

let server: Running
let base = ""

beforeAll(async () => {
  const started = await serveKeymeter({ KEYMETER_PROVISION: "examples/provision.json" })
  server = started.server
  base = started.base
})
afterAll(async () => {
  await stop(server)
})

/** The v1 client as a user would make it, with no retries so that a failure shows at once. */
const client = (rootKey: string) =>
  new Unkey({ rootKey, baseUrl: base, disableTelemetry: true, retry: { attempts: 0 } })

describe("Unkey's v1 clients against keymeter", () => {
  it("@unkey/ratelimit limits with async, meta and resources, and overrides set through the SDK apply", async () => {
    const limiter = new Ratelimit({
      rootKey: ADMIN,
      namespace: "email",
      limit: 2,
      duration: "60s",
      baseUrl: base,
      async: true,
      disableTelemetry: true
    })
    const first = await limiter.limit("user_1", { meta: { plan: "free" }, resources: [{ type: "org", id: "org_1" }] })
    expect(first).toMatchObject({ success: true, limit: 2, remaining: 1 })
    await limiter.limit("user_1")
    expect(await limiter.limit("user_1")).toMatchObject({ success: false, limit: 2, remaining: 0 })
    expect(typeof first.reset).toBe("number")

    const unkey = client(ADMIN)
    const set = await unkey.ratelimits.setOverride({
      namespaceName: "email",
      identifier: "user_2",
      limit: 5,
      duration: 60_000
    })
    expect(set.error).toBeUndefined()
    expect(set.result?.overrideId).toMatch(/^rlor_/)
    expect(await limiter.limit("user_2")).toMatchObject({ success: true, limit: 5, remaining: 4 })
    const got = await unkey.ratelimits.getOverride({ namespaceName: "email", identifier: "user_2" })
    expect(got.result).toMatchObject({ id: set.result!.overrideId, identifier: "user_2", limit: 5, duration: 60_000 })
    const listed = await unkey.ratelimits.listOverrides({ namespaceName: "email" })
    expect(listed.result?.overrides.map((o) => o.identifier)).toEqual(["user_2"])
    expect((await unkey.ratelimits.deleteOverride({ namespaceName: "email", identifier: "user_2" })).error)
      .toBeUndefined()
    // Errors reach the SDK as result.error.code.
    const missing = await unkey.ratelimits.getOverride({ namespaceName: "email", identifier: "user_2" })
    expect(missing.error?.code).toBe("NOT_FOUND")
  })

  it("analytics.getVerifications counts what was recorded, filtered by a keyId array the SDK joins with commas", async () => {
    const recorded = await fetch(`${base}/v1/analytics.recordVerifications`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      body: JSON.stringify({
        verifications: ["k1", "k1", "k2", "k3"].map((keyId) => ({ apiId: "api_main", keyId, outcome: "valid" }))
      })
    })
    expect(recorded.status).toBe(200)
    const unkey = client(READER)
    const answer = await unkey.analytics.getVerifications({
      apiId: "api_main",
      keyId: ["k1", "k2"],
      groupBy: ["key", "day"],
      start: 0
    })
    expect(answer.error).toBeUndefined()
    const totals = Object.fromEntries((answer.result ?? []).map((row) => [row.keyId, row.total]))
    expect(totals).toEqual({ k1: 2, k2: 1 })
    const refused = await client("sk_not_a_key_of_anyone_at_all_00000").analytics.getVerifications({
      apiId: "api_main"
    })
    expect(refused.error?.code).toBe("UNAUTHORIZED")
  })

  it("keys: created with remaining, refill and ratelimit, read, verified to each code, updated and deleted", async () => {
    const unkey = client(ADMIN)
    const api = await unkey.apis.create({ name: "sdk" })
    expect(api.error).toBeUndefined()
    const apiId = api.result!.apiId
    expect((await unkey.apis.get({ apiId })).result).toEqual({ id: apiId, workspaceId: "ws_acme", name: "sdk" })
    const created = await unkey.keys.create({
      apiId,
      prefix: "sdk",
      name: "first",
      ownerId: "customer_1",
      meta: { plan: "pro" },
      permissions: ["docs.read"],
      remaining: 2,
      refill: { interval: "monthly", amount: 100, refillDay: 15 },
      ratelimit: { limit: 10, duration: 60_000 },
      environment: "test"
    })
    expect(created.error).toBeUndefined()
    const { key, keyId } = created.result!
    expect(key).toMatch(/^sdk_/)

    const got = await unkey.keys.get({ keyId })
    expect(got.result).toMatchObject({
      id: keyId,
      start: key.slice(0, 8),
      workspaceId: "ws_acme",
      apiId,
      name: "first",
      ownerId: "customer_1",
      meta: { plan: "pro" },
      remaining: 2,
      refill: { interval: "monthly", amount: 100, refillDay: 15 },
      ratelimit: { async: true, type: "fast", limit: 10, duration: 60_000 },
      permissions: ["docs.read"],
      enabled: true,
      environment: "test",
      identity: { externalId: "customer_1" }
    })

    const verify = (request: Omit<Parameters<typeof unkey.keys.verify>[0], "key"> = {}) =>
      unkey.keys.verify({ key, ...request }).then((answer) => {
        expect(answer.error).toBeUndefined()
        return answer.result!
      })
    const valid = await verify({ apiId, tags: ["path=/docs"] })
    expect(valid).toMatchObject({
      valid: true,
      code: "VALID",
      keyId,
      name: "first",
      ownerId: "customer_1",
      remaining: 1,
      ratelimit: { limit: 10, remaining: 9 },
      environment: "test",
      permissions: ["docs.read"],
      identity: { externalId: "customer_1", meta: {} }
    })
    expect(valid.requestId).toMatch(/^req_/)
    expect((await verify({ authorization: { permissions: "docs.write" } })).code).toBe("INSUFFICIENT_PERMISSIONS")
    expect((await verify({ remaining: { cost: 0 } })).remaining).toBe(1)
    expect((await verify({ remaining: { cost: 2 } })).code).toBe("USAGE_EXCEEDED")
    expect((await verify({ ratelimits: [{ name: "default", cost: 20 }] })).code).toBe("RATE_LIMITED")
    const other = await unkey.apis.create({ name: "other" })
    expect((await verify({ apiId: other.result!.apiId })).code).toBe("FORBIDDEN")
    expect((await unkey.keys.verify({ key: "sdk_nope" })).result?.code).toBe("NOT_FOUND")

    // Credits: added, then unlimited (null), as the SDK's updateRemaining sends them.
    expect((await unkey.keys.updateRemaining({ keyId, op: "increment", value: 5 })).result).toEqual({ remaining: 6 })
    expect((await unkey.keys.updateRemaining({ keyId, op: "set", value: null })).result).toEqual({ remaining: null })
    expect((await verify()).remaining).toBeUndefined()

    expect((await unkey.keys.update({ keyId, enabled: false, ratelimit: null, remaining: 1 })).result).toEqual({})
    expect((await verify()).code).toBe("DISABLED")
    const updated = await unkey.keys.get({ keyId })
    expect(updated.result?.ratelimit).toBeUndefined()
    expect(updated.result?.remaining).toBe(1)
    await unkey.keys.update({ keyId, enabled: true, expires: Date.now() - 1 })
    expect((await verify()).code).toBe("EXPIRED")

    // A disabled identity (keymeter's extension of updateIdentity): UNAUTHORIZED.
    await unkey.keys.update({ keyId, expires: null })
    await unkey.identities.update({ externalId: "customer_1", enabled: false } as { externalId: string })
    expect((await verify()).code).toBe("UNAUTHORIZED")
    await unkey.identities.update({ externalId: "customer_1", enabled: true } as { externalId: string })
    // Routes the SDK types but has no method for: keys.whoami.
    const whoami = await fetch(`${base}/v1/keys.whoami`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      body: JSON.stringify({ key })
    })
    expect(await whoami.json()).toMatchObject({ id: keyId, name: "first", identity: { externalId: "customer_1" } })
    expect((await unkey.keys.setPermissions({ keyId, permissions: [{ slug: "docs.read" }] })).result)
      .toEqual([expect.objectContaining({ name: "docs.read" })])

    const listed = await unkey.apis.listKeys({ apiId, ownerId: "customer_1" })
    expect(listed.result).toMatchObject({ keys: [{ id: keyId }], total: 1 })
    expect((await unkey.keys.delete({ keyId })).result).toEqual({})
    expect((await verify()).code).toBe("NOT_FOUND")
    expect((await unkey.keys.get({ keyId })).error?.code).toBe("NOT_FOUND")

    // Errors in v1's names, read by the SDK.
    const bad = await unkey.keys.create({ apiId, refill: { interval: "daily", amount: 1 } })
    expect(bad.error?.code).toBe("BAD_REQUEST")
    expect(bad.error?.message).toMatch(/^refill: needs remaining/)
    const recoverable = await unkey.keys.create({ apiId, recoverable: true })
    expect(recoverable.error?.message).toMatch(/^recoverable: keymeter keeps only a hash/)
    expect((await client(READER).keys.create({ apiId })).error?.code).toBe("INSUFFICIENT_PERMISSIONS")

    // apis.deleteKeys (no SDK method): every key of the api, the api kept.
    await unkey.keys.create({ apiId })
    const deleted = await fetch(`${base}/v1/apis.deleteKeys`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      body: JSON.stringify({ apiId })
    })
    expect(await deleted.json()).toEqual({ deletedKeys: 1 })
    expect((await unkey.apis.listKeys({ apiId })).result).toMatchObject({ keys: [], total: 0 })
    expect((await unkey.apis.delete({ apiId })).result).toEqual({})
    expect((await unkey.apis.get({ apiId })).error?.code).toBe("NOT_FOUND")
  })

  it("identities: created with meta and shared limits, answered with their keys' verifications, listed, updated, deleted", async () => {
    const unkey = client(ADMIN)
    const created = await unkey.identities.create({
      externalId: "org_acme",
      meta: { tier: "gold" },
      ratelimits: [{ name: "tokens", limit: 3, duration: 60_000 }]
    })
    expect(created.error).toBeUndefined()
    const identityId = created.result!.identityId
    expect(identityId).toMatch(/^id_/)
    const duplicate = await unkey.identities.create({ externalId: "org_acme" })
    expect(duplicate.error?.code).toBe("CONFLICT")

    // Two keys of the identity share its limit when a verification names it.
    const keys = await Promise.all(
      [1, 2].map(() => unkey.keys.create({ apiId: "api_main", externalId: "org_acme" }).then((r) => r.result!.key))
    )
    const spend = (key: string, cost: number) =>
      unkey.keys.verify({ key, ratelimits: [{ name: "tokens", cost }] }).then((r) => r.result!)
    const first = await spend(keys[0]!, 2)
    expect(first).toMatchObject({
      valid: true,
      ratelimit: { limit: 3, remaining: 1 },
      identity: { id: identityId, externalId: "org_acme", meta: { tier: "gold" } }
    })
    expect((await spend(keys[1]!, 2)).code).toBe("RATE_LIMITED")
    expect((await spend(keys[1]!, 1)).code).toBe("VALID")
    // A name neither the key nor its identity has is the caller's mistake.
    const unknown = await unkey.keys.verify({ key: keys[0]!, ratelimits: [{ name: "nope" }] })
    expect(unknown.error?.code).toBe("BAD_REQUEST")

    expect((await unkey.identities.get({ externalId: "org_acme" })).result).toEqual({
      id: identityId,
      externalId: "org_acme",
      meta: { tier: "gold" },
      ratelimits: [{ name: "tokens", limit: 3, duration: 60_000 }],
      enabled: true
    })
    const listed = await unkey.identities.list({ limit: 100 })
    expect(listed.result?.identities).toContainEqual({
      id: identityId,
      externalId: "org_acme",
      ratelimits: [{ name: "tokens", limit: 3, duration: 60_000 }]
    })
    expect(listed.result?.total).toBeGreaterThanOrEqual(1)
    expect((await unkey.identities.list({ environment: "staging" })).result).toEqual({ identities: [], total: 0 })

    const updated = await unkey.identities.update({ identityId, meta: { tier: "silver" }, ratelimits: [] })
    expect(updated.result).toMatchObject({ id: identityId, meta: { tier: "silver" }, ratelimits: [] })
    expect((await unkey.keys.verify({ key: keys[0]! })).result?.identity?.meta).toEqual({ tier: "silver" })

    expect((await unkey.identities.delete({ identityId })).result).toEqual({})
    expect((await unkey.identities.get({ identityId })).error?.code).toBe("NOT_FOUND")
    const detached = (await unkey.keys.verify({ key: keys[0]! })).result!
    expect(detached.valid).toBe(true)
    expect(detached.identity).toBeUndefined()
  })

  it("permissions and roles: a key holds them directly and through roles; a deletion applies at the next verification", async () => {
    const unkey = client(ADMIN)
    const read = await unkey.permissions.createPermission({ name: "records.read", description: "read records" })
    const write = await unkey.permissions.createPermission({ name: "records.write" })
    expect(read.error).toBeUndefined()
    expect(read.result?.permissionId).toMatch(/^perm_/)
    expect((await unkey.permissions.createPermission({ name: "records.read" })).error?.code).toBe("CONFLICT")
    expect((await unkey.permissions.getPermission({ permissionId: read.result!.permissionId })).result).toEqual({
      id: read.result!.permissionId,
      name: "records.read",
      slug: "records.read",
      description: "read records"
    })
    // The role's permissions are a keymeter extension of createRole (v1 sets them in Unkey's dashboard).
    const editor = await unkey.permissions.createRole(
      { name: "editor", permissions: ["records.read", "records.write"] } as { name: string }
    )
    expect(editor.result?.roleId).toMatch(/^role_/)
    expect((await unkey.permissions.listRoles()).result).toContainEqual(
      expect.objectContaining({ id: editor.result!.roleId, name: "editor" })
    )
    expect((await unkey.permissions.listPermissions()).result?.map((p) => p.name)).toEqual(
      expect.arrayContaining(["records.read", "records.write"])
    )

    const created = await unkey.keys.create({ apiId: "api_main", roles: ["editor"], permissions: ["billing.read"] })
    expect(created.error).toBeUndefined()
    const { key, keyId } = created.result!
    const check = (authorization: { permissions: string | { and: Array<string> } }) =>
      unkey.keys.verify({ key, authorization }).then((r) => r.result!)
    const through = await check({ permissions: { and: ["records.write", "billing.read"] } })
    expect(through).toMatchObject({ code: "VALID", roles: ["editor"] })
    expect(through.permissions).toEqual(expect.arrayContaining(["billing.read", "records.read", "records.write"]))
    expect((await check({ permissions: "admin" })).code).toBe("INSUFFICIENT_PERMISSIONS")
    // billing.read did not exist: createKey made it, as the root key may create permissions.
    expect((await unkey.keys.get({ keyId })).result).toMatchObject({ roles: ["editor"], permissions: ["billing.read"] })

    // Key routes: add, remove, set.
    const added = await unkey.keys.addPermissions({ keyId, permissions: [{ name: "admin", create: true }] })
    expect(added.result?.map((p) => p.name).sort()).toEqual(["admin", "billing.read"])
    expect((await check({ permissions: "admin" })).code).toBe("VALID")
    expect((await unkey.keys.removePermissions({ keyId, permissions: [{ slug: "admin" }] })).result).toEqual({})
    expect((await check({ permissions: "admin" })).code).toBe("INSUFFICIENT_PERMISSIONS")
    const missing = await unkey.keys.addPermissions({ keyId, permissions: [{ name: "nothing.here" }] })
    expect(missing.error?.code).toBe("NOT_FOUND")
    expect((await unkey.keys.setRoles({ keyId, roles: [{ name: "viewer", create: true }] })).result?.map((r) => r.name))
      .toEqual(["viewer"])
    expect((await check({ permissions: "records.write" })).code).toBe("INSUFFICIENT_PERMISSIONS")
    await unkey.keys.addRoles({ keyId, roles: [{ id: editor.result!.roleId }] })
    expect((await check({ permissions: "records.write" })).code).toBe("VALID")

    // Deleting a permission takes it from the role (and so the key) at once; deleting the role too.
    expect((await unkey.permissions.deletePermission({ permissionId: write.result!.permissionId })).result).toEqual({})
    expect((await check({ permissions: "records.write" })).code).toBe("INSUFFICIENT_PERMISSIONS")
    expect((await check({ permissions: "records.read" })).code).toBe("VALID")
    expect((await unkey.permissions.deleteRole({ roleId: editor.result!.roleId })).result).toEqual({})
    expect((await check({ permissions: "records.read" })).code).toBe("INSUFFICIENT_PERMISSIONS")
    expect((await unkey.permissions.getRole({ roleId: editor.result!.roleId })).error?.code).toBe("NOT_FOUND")
    expect((await unkey.keys.removeRoles({ keyId, roles: [{ name: "viewer" }] })).result).toEqual({})
    expect((await unkey.keys.get({ keyId })).result?.roles).toEqual([])
    // A root key without rbac permissions is refused.
    const refused = await client(READER).keys.addRoles({ keyId, roles: [{ name: "viewer" }] })
    expect(refused.error?.code).toBe("INSUFFICIENT_PERMISSIONS")
  })

  it("migrations.createKeys imports keys by plaintext or hash; keys.getVerifications counts a key's days", async () => {
    const unkey = client(ADMIN)
    const secret = "legacy_9f8e7d6c5b4a39281716"
    const other = "legacy_0a1b2c3d4e5f60718293"
    const imported = await unkey.migrations.createKeys([
      { apiId: "api_main", plaintext: secret, prefix: "legacy", ownerId: "old_customer", remaining: 5 },
      {
        apiId: "api_main",
        hash: { value: createHash("sha256").update(other).digest("base64"), variant: "sha256_base64" },
        start: "legacy_0a1b",
        ratelimit: { limit: 1, refillRate: 1, refillInterval: 60_000 }
      }
    ])
    expect(imported.error).toBeUndefined()
    const [first, second] = imported.result!.keyIds
    expect((await unkey.keys.verify({ key: secret })).result).toMatchObject({
      valid: true,
      keyId: first,
      ownerId: "old_customer",
      remaining: 4
    })
    expect((await unkey.keys.verify({ key: other })).result).toMatchObject({ valid: true, keyId: second })
    expect((await unkey.keys.verify({ key: other })).result?.code).toBe("RATE_LIMITED")
    expect((await unkey.keys.get({ keyId: second! })).result).toMatchObject({
      start: "legacy_0a1b",
      ratelimit: { limit: 1, duration: 60_000 }
    })
    // The same secret again: nothing of the batch is imported.
    const again = await unkey.migrations.createKeys([
      { apiId: "api_main", plaintext: "legacy_new_key_aaaaaaaaaaaaaaaa" },
      { apiId: "api_main", plaintext: secret }
    ])
    expect(again.error?.code).toBe("CONFLICT")
    expect((await unkey.keys.verify({ key: "legacy_new_key_aaaaaaaaaaaaaaaa" })).result?.code).toBe("NOT_FOUND")

    // The older usage route: by key, and by owner across the apis the root key may read.
    const usage = await unkey.keys.getVerifications({ keyId: second! })
    expect(usage.error).toBeUndefined()
    const today = usage.result!.verifications.at(-1)!
    expect(today).toMatchObject({ success: 1, rateLimited: 1, usageExceeded: 0 })
    const owner = await unkey.keys.getVerifications({ ownerId: "old_customer", granularity: "day" })
    expect(owner.result!.verifications.at(-1)).toMatchObject({ success: 1, rateLimited: 0 })
    expect((await unkey.keys.getVerifications({})).error?.code).toBe("BAD_REQUEST")
  })

  it("credits count down and refill daily, a day later, as the SDK reads them", async () => {
    // A server of its own whose clock the test moves a day ahead (test/TimeTravel.mjs).
    const started = await serveKeymeter({
      KEYMETER_PROVISION: "examples/provision.json",
      NODE_OPTIONS: `--import ${new URL("./TimeTravel.mjs", import.meta.url).href}`
    })
    try {
      const unkey = new Unkey({ rootKey: ADMIN, baseUrl: started.base, disableTelemetry: true, retry: { attempts: 0 } })
      const { key, keyId } = (await unkey.keys.create({
        apiId: "api_main",
        remaining: 2,
        refill: { interval: "daily", amount: 3 }
      })).result!
      const verify = () => unkey.keys.verify({ key }).then((r) => r.result!)
      expect(await verify()).toMatchObject({ valid: true, remaining: 1 })
      expect(await verify()).toMatchObject({ valid: true, remaining: 0 })
      expect(await verify()).toMatchObject({ valid: false, code: "USAGE_EXCEEDED", remaining: 0 })
      const before = (await unkey.keys.get({ keyId })).result!.refill!.lastRefillAt!
      started.server.child.kill("SIGUSR2")
      await expect.poll(() => started.server.output()).toMatch(/time travelled: \+1 day/)
      // The first verification of the new day refills to 3, then spends one.
      expect(await verify()).toMatchObject({ valid: true, remaining: 2 })
      const after = (await unkey.keys.get({ keyId })).result!
      expect(after.remaining).toBe(2)
      expect(after.refill).toMatchObject({ interval: "daily", amount: 3, refillDay: null })
      expect(after.refill!.lastRefillAt!).toBeGreaterThan(before)
    } finally {
      await stop(started.server)
    }
  })

  it("liveness answers without a root key, in Unkey's shape", async () => {
    const reply = await fetch(`${base}/v1/liveness`)
    expect(reply.status).toBe(200)
    expect(reply.headers.get("x-request-id")).toMatch(/^req_/)
    expect(await reply.json()).toEqual({
      status: "ok",
      services: { metrics: "none", logger: "stderr", ratelimit: "local", usagelimit: "keymeter" }
    })
    const wrong = await fetch(`${base}/v1/liveness`, { method: "POST" })
    expect(wrong.status).toBe(405)
  })
})
