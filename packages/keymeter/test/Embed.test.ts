import { describe, expect, it } from "@effect/vitest"
import { ClickhouseTestServer } from "@keymeter/testing"
import * as Effect from "effect/Effect"
import { createKeymeter, KeymeterError } from "keymeter"
import { mkdtempSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"

const T0 = Date.parse("2025-01-01T00:00:00Z")
const HOUR = 3_600_000

const rejection = async (promise: Promise<unknown>) => {
  try {
    await promise
  } catch (error) {
    return error as KeymeterError
  }
  throw new Error("expected a rejection")
}

describe("createKeymeter", () => {
  it("records, queries and sets overrides through promises", async () => {
    const keymeter = await createKeymeter()
    try {
      const { apiId } = await keymeter.createApi({ name: "main" })
      await keymeter.record([
        { apiId, keyId: "k1", outcome: "valid", time: T0 },
        { apiId, keyId: "k1", outcome: "usageExceeded", time: T0 + 25 * HOUR },
        { apiId, keyId: "k2", outcome: "valid", time: T0 + 25 * HOUR, tags: ["paid"] }
      ])
      const days = await keymeter.getVerifications({ apiId, groupBy: "day", start: T0, end: T0 + 30 * HOUR })
      expect(days.map((p) => [p.time, p.total, p.usageExceeded])).toEqual([[T0, 1, 0], [T0 + 24 * HOUR, 2, 1]])
      const [paid] = await keymeter.getVerifications({ apiId, tag: "paid", start: 0 })
      expect(paid!.total).toBe(1)
      const first = await keymeter.setOverride({
        namespaceName: "email",
        identifier: "user_1",
        limit: 5,
        duration: 60_000
      })
      const second = await keymeter.setOverride({
        namespaceName: "email",
        identifier: "user_1",
        limit: 9,
        duration: 60_000
      })
      expect(second.id).toBe(first.id)
      expect(second.limit).toBe(9)
    } finally {
      await keymeter.close()
    }
  })

  it("runs SQL analytics over what it recorded, refusing what is outside the subset", async () => {
    const keymeter = await createKeymeter()
    try {
      const { apiId } = await keymeter.createApi({ name: "main" })
      await keymeter.record([
        { apiId, keyId: "k1", outcome: "valid", time: T0, spentCredits: 3, latency: 1.5, region: "fra" },
        { apiId, keyId: "k1", outcome: "rateLimited", time: T0 + HOUR, latency: 0.5 },
        { apiId, keyId: "k2", outcome: "valid", time: T0 + 2 * HOUR, spentCredits: 1 }
      ])
      expect(
        await keymeter.queryVerifications(
          "SELECT key_id, count() AS total, sum(spent_credits) AS credits, max(latency) AS slowest " +
            "FROM key_verifications_v1 GROUP BY key_id ORDER BY key_id"
        )
      ).toEqual([
        { key_id: "k1", total: 2, credits: 3, slowest: 1.5 },
        { key_id: "k2", total: 1, credits: 1, slowest: 0 }
      ])
      await keymeter.limit({ namespace: "email", identifier: "user_1", limit: 1, duration: 60_000 })
      await keymeter.limit({ namespace: "email", identifier: "user_1", limit: 1, duration: 60_000 })
      expect(await keymeter.queryRatelimits("SELECT sum(passed) AS passed, count() AS total FROM ratelimits_v1"))
        .toEqual([{ passed: 1, total: 2 }])
      const bad = await rejection(keymeter.queryVerifications("SELECT * FROM system.tables"))
      expect(bad).toBeInstanceOf(KeymeterError)
      expect(bad.code).toBe("INVALID_QUERY")
      expect(bad.status).toBe(400)
    } finally {
      await keymeter.close()
    }
  })

  it("takes idempotency keys on writes: a retry is answered and stored once, a reused key rejected", async () => {
    const keymeter = await createKeymeter({ http: { idempotencyWindowMs: 60_000 } })
    try {
      const { apiId } = await keymeter.createApi({ name: "main" }, { idempotencyKey: "api-1" })
      expect(await keymeter.createApi({ name: "main" }, { idempotencyKey: "api-1" })).toEqual({ apiId })
      const batch = [{ apiId, keyId: "k1", outcome: "valid" as const, time: T0 }]
      expect(await keymeter.record(batch, { idempotencyKey: "b-1" })).toEqual({ recorded: 1 })
      expect(await keymeter.record(batch, { idempotencyKey: "b-1" })).toEqual({ recorded: 1 })
      const [all] = await keymeter.getVerifications({ apiId, start: 0 })
      expect(all!.total).toBe(1)
      const reused = await rejection(keymeter.record([...batch, ...batch], { idempotencyKey: "b-1" }))
      expect([reused.code, reused.status]).toEqual(["IDEMPOTENCY_KEY_REUSED", 422])
      expect(reused.message).toMatch(/^idempotencyKey: this key was used with another request body/)
      const override = { namespaceName: "email", identifier: "user_1", limit: 5, duration: 60_000 }
      const set = await keymeter.setOverride(override, { idempotencyKey: "o-1" })
      const again = await keymeter.setOverride(override, { idempotencyKey: "o-1" })
      expect(again).toEqual(set)
      const bad = await rejection(keymeter.record(batch, { idempotencyKey: "" }))
      expect([bad.code, bad.message]).toEqual([
        "BAD_REQUEST",
        "idempotencyKey: must be 1 to 255 visible ASCII characters (no space, \" or \\), got \"\""
      ])
    } finally {
      await keymeter.close()
    }
  })

  it("reads, lists, deletes overrides and limits through promises", async () => {
    const keymeter = await createKeymeter()
    try {
      const set = await keymeter.setOverride({
        namespaceName: "email",
        identifier: "user_*",
        limit: 1,
        duration: 60_000
      })
      expect(await keymeter.limit({ namespace: "email", identifier: "user_9", limit: 100, duration: 1000 }))
        .toMatchObject({ success: true, limit: 1, remaining: 0, overrideId: set.id })
      expect((await keymeter.limit({ namespace: "email", identifier: "user_9", limit: 100, duration: 1000 })).success)
        .toBe(false)
      expect((await keymeter.getOverride({ namespaceName: "email", identifier: "user_9", resolve: true })).id).toBe(
        set.id
      )
      const page = await keymeter.listOverrides({ namespaceName: "email" })
      expect([page.total, page.overrides.map((o) => o.identifier), page.cursor]).toEqual([1, ["user_*"], undefined])
      await keymeter.deleteOverride({ namespaceName: "email", identifier: "user_*" })
      expect((await rejection(keymeter.deleteOverride({ namespaceName: "email", identifier: "user_*" }))).code).toBe(
        "NOT_FOUND"
      )
    } finally {
      await keymeter.close()
    }
  })

  it("spends exactly a key's credits under 200 parallel verifications answered from memory, on SQLite", async () => {
    const storage = `sqlite:${join(mkdtempSync(join(tmpdir(), "keymeter-credits-")), "keymeter.db")}`
    const keymeter = await createKeymeter({ storage, workspaceId: "ws_credits" })
    try {
      const { apiId } = await keymeter.createApi({ name: "main" })
      const { key } = await keymeter.keys.create({
        apiId,
        externalId: "user_1",
        credits: { remaining: 52 },
        ratelimits: [{ name: "calls", limit: 1000, duration: 60_000, autoApply: true }]
      })
      // Two verifications bring the key, its identity and its namespace into memory.
      for (let i = 0; i < 2; i++) expect((await keymeter.keys.verify({ key: key!, apiId })).code).toBe("VALID")
      const answers = await Promise.all(
        Array.from({ length: 200 }, () => keymeter.keys.verify({ key: key!, apiId, credits: { cost: 1 } }))
      )
      const codes = answers.map((answer) => answer.code)
      expect(codes.filter((code) => code === "VALID")).toHaveLength(50)
      expect(codes.filter((code) => code === "USAGE_EXCEEDED")).toHaveLength(150)
      expect(Math.min(...answers.map((answer) => answer.credits!.remaining))).toBe(0)
      // Refused calls gave their tokens back: 52 taken of the limit's 1000.
      expect(answers.find((answer) => answer.code === "USAGE_EXCEEDED")!.ratelimits![0]!.remaining).toBe(948)
      const [counts] = await keymeter.getVerifications({ apiId, start: 0 })
      expect(counts).toMatchObject({ total: 202, valid: 52, usageExceeded: 150 })
    } finally {
      await keymeter.close()
    }
  })

  it("issues and verifies keys through promises; SQLite keeps keys, credits and identities across a restart", async () => {
    const storage = `sqlite:${join(mkdtempSync(join(tmpdir(), "keymeter-keys-")), "keymeter.db")}`
    const first = await createKeymeter({ storage, workspaceId: "ws_keys" })
    let apiId: string
    let secret: string
    let keyId: string
    try {
      apiId = (await first.createApi({ name: "main" })).apiId
      const created = await first.keys.create({ apiId, externalId: "user_42", credits: { remaining: 5 } })
      keyId = created.keyId
      secret = created.key!
      const verified = await first.keys.verify({ key: secret, tags: ["path:/a"] }, { durable: true })
      expect(verified).toMatchObject({ valid: true, code: "VALID", keyId, credits: { remaining: 4 } })
    } finally {
      await first.close()
    }
    const second = await createKeymeter({ storage, workspaceId: "ws_keys" })
    try {
      const again = await second.keys.verify({ key: secret, credits: { cost: 3 } }, { durable: true })
      expect(again).toMatchObject({ code: "VALID", credits: { remaining: 1 }, identity: { externalId: "user_42" } })
      expect((await second.keys.verify({ key: secret, credits: { cost: 2 } }, { durable: true })).code).toBe(
        "USAGE_EXCEEDED"
      )
      const view = await second.keys.get({ keyId })
      expect(view).toMatchObject({ keyId, apiId, credits: { remaining: 1 }, identity: { externalId: "user_42" } })
      const [counts] = await second.getVerifications({ apiId, externalId: "user_42", start: 0 })
      expect(counts).toMatchObject({ total: 3, valid: 2, usageExceeded: 1 })
      await second.keys.delete({ keyId })
      expect((await second.keys.verify({ key: secret })).code).toBe("NOT_FOUND")
      const bad = await rejection(second.keys.create({ apiId, byteLength: 3 }))
      expect(bad.code).toBe("BAD_REQUEST")
    } finally {
      await second.close()
    }
  })

  it("manages permissions, roles and identities, and imports keys through promises", async () => {
    const keymeter = await createKeymeter({ workspaceId: "ws_rbac" })
    try {
      const { apiId } = await keymeter.createApi({ name: "main" })
      await keymeter.rbac.createPermission({ name: "docs.read" })
      const role = await keymeter.rbac.createRole({ name: "reader", permissions: ["docs.read"] })
      expect((await keymeter.rbac.listRoles()).map((r) => [r.name, r.permissions])).toEqual([["reader", ["docs.read"]]])
      const identity = await keymeter.identities.create({ externalId: "acme", meta: { plan: "pro" } })
      const secret = "imported_0123456789abcdefghij"
      const { keyIds } = await keymeter.keys.migrate([{ apiId, secret, externalId: "acme", roles: ["reader"] }])
      const verified = await keymeter.keys.verify({ key: secret, permissions: "docs.read" })
      expect(verified).toMatchObject({
        code: "VALID",
        keyId: keyIds[0],
        roles: ["reader"],
        identity: { id: identity.id, meta: { plan: "pro" } }
      })
      await keymeter.keys.changeRoles("remove", { keyId: keyIds[0]!, roles: [{ id: role.id }] })
      expect((await keymeter.keys.verify({ key: secret, permissions: "docs.read" })).code).toBe(
        "INSUFFICIENT_PERMISSIONS"
      )
      await keymeter.keys.changePermissions("add", { keyId: keyIds[0]!, permissions: [{ name: "docs.read" }] })
      expect((await keymeter.keys.verify({ key: secret, permissions: "docs.read" })).code).toBe("VALID")
      expect((await keymeter.identities.list()).identities.map((i) => i.externalId)).toEqual(["acme"])
      const conflict = await rejection(keymeter.identities.create({ externalId: "acme" }))
      expect([conflict.code, conflict.status]).toEqual(["CONFLICT", 409])
    } finally {
      await keymeter.close()
    }
  })

  it("rejects with KeymeterError carrying the HTTP code and status", async () => {
    const keymeter = await createKeymeter({ workspaceId: "ws_lib" })
    try {
      const bad = await rejection(keymeter.getVerifications({ apiId: "x", limit: 0 }))
      expect(bad).toBeInstanceOf(KeymeterError)
      expect([bad.code, bad.status, bad.message]).toEqual(["BAD_REQUEST", 400, "limit: must be an integer >= 1, got 0"])
      const missing = await rejection(keymeter.getVerifications({ apiId: "api_nope" }))
      expect([missing.code, missing.status]).toEqual(["NOT_FOUND", 404])
      const record = await rejection(keymeter.record([{ apiId: "api_nope", keyId: "k", outcome: "valid" }]))
      expect(record.code).toBe("NOT_FOUND")
      expect((await rejection(createKeymeter({ storage: "redis://x" }))).code).toBe("BAD_REQUEST")
      expect((await rejection(createKeymeter({ analytics: "clickhouse:ftp://x/db" }))).message).toMatch(/must be http/)
      expect((await rejection(createKeymeter({ analyticsSpool: "./spool" }))).message).toBe(
        "analyticsSpool goes with analytics"
      )
      expect((await rejection(createKeymeter({ analytics: "clickhouse:http://x/db", analyticsSpool: " " }))).message)
        .toBe("The analytics spool (KEYMETER_ANALYTICS_SPOOL, analyticsSpool) must name a folder")
    } finally {
      await keymeter.close()
    }
  })

  it("serves the HTTP API from an existing node:http server under a prefix", async () => {
    const keymeter = await createKeymeter()
    const { apiId } = await keymeter.createApi({ name: "main" })
    const { key } = await keymeter.createRootKey({ permissions: ["api.*.read_api"] })
    const mounted = keymeter.handler({ prefix: "/keymeter/" })
    const server = createServer((req, res) => {
      if (req.url === "/own") return res.end("own route")
      mounted(req, res)
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    try {
      await keymeter.record([{ apiId, keyId: "k", outcome: "valid" }])
      const reply = await fetch(`${base}/keymeter/v1/analytics.getVerifications?apiId=${apiId}`, {
        headers: { authorization: `Bearer ${key}` }
      })
      expect(reply.status).toBe(200)
      expect(((await reply.json()) as Array<{ total: number }>)[0]!.total).toBe(1)
      expect(reply.headers.get("x-request-id")).toMatch(/^req_/)
      const forbidden = await fetch(`${base}/keymeter/v1/apis.createApi`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: "{\"name\":\"x\"}"
      })
      expect(((await forbidden.json()) as { error: { code: string } }).error.code).toBe("INSUFFICIENT_PERMISSIONS")
      expect(await (await fetch(`${base}/own`)).text()).toBe("own route")
      const outside = await fetch(`${base}/elsewhere`)
      expect(outside.status).toBe(404)
      expect(((await outside.json()) as { error: { code: string } }).error.code).toBe("NOT_FOUND")
      // With a `next`, requests outside the prefix are passed on, as Express middleware.
      let passed = false
      mounted({ url: "/other" } as never, {} as never, () => {
        passed = true
      })
      expect(passed).toBe(true)
    } finally {
      await new Promise((resolve) => server.close(resolve))
      await keymeter.close()
    }
  })
})

describe.skipIf(ClickhouseTestServer.skip() !== undefined)("createKeymeter with ClickHouse analytics", () => {
  it("records into ClickHouse and reads back, the catalog in memory", async () => {
    const database = ClickhouseTestServer.databaseName()
    const keymeter = await createKeymeter({ analytics: `clickhouse:${ClickhouseTestServer.url}/${database}` })
    try {
      const { apiId } = await keymeter.createApi({ name: "main" })
      await keymeter.record([
        { apiId, keyId: "k1", outcome: "valid", time: T0 },
        { apiId, keyId: "k2", outcome: "expired", time: T0 + 2 * HOUR, identity: { id: "i1", externalId: "e1" } }
      ])
      expect(await keymeter.getVerifications({ apiId, groupBy: "key", start: T0, end: T0 + 3 * HOUR })).toEqual([
        expect.objectContaining({ keyId: "k1", total: 1, valid: 1 }),
        expect.objectContaining({ keyId: "k2", total: 1, expired: 1 })
      ])
    } finally {
      await keymeter.close()
      await Effect.runPromise(ClickhouseTestServer.dropDatabase(database))
    }
  })
})
