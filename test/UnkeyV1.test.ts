/**
 * Unkey's official v1 clients (`@unkey/api@0.38.0`, `@unkey/ratelimit@0.5.5`) pointed at the
 * standalone server: what they send is what keymeter must take, and what keymeter answers must be
 * what they read. Their own encoders judge (comma-joined array parameters, bare 2xx bodies, the
 * error envelope read as `result.error.code`). The routes Unkey's v1 has that keymeter does not
 * serve yet are issue 28's work; this suite grows with them.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Ratelimit } from "@unkey/ratelimit"
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
