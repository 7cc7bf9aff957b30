import { afterEach, describe, expect, it } from "@effect/vitest"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Running } from "./Spawn.js"
import { serveKeymeter, stop } from "./Spawn.js"

const running: Array<Running> = []
afterEach(async () => {
  for (const process of running.splice(0)) await stop(process, "SIGKILL")
})

const PER_BATCH = 200
const ADMIN = "sk_acme_admin_8f3e1c7a9b2d4e6f0a1c"

const serve = async (db: string) => {
  const started = await serveKeymeter({
    KEYMETER_STORAGE: `sqlite:${db}`,
    KEYMETER_PROVISION: "examples/provision.json"
  })
  running.push(started.server)
  return started
}

/**
 * Serves `db` and runs `clients` copies of `client` on it (each until told the server is gone);
 * once `enough()`, kills the server with SIGKILL while they are at it: the next server on `db`.
 */
const killAmid = async (
  db: string,
  clients: number,
  client: (base: string, alive: () => boolean) => Promise<void>,
  enough: () => boolean
) => {
  const first = await serve(db)
  let killed = false
  const working = Array.from({ length: clients }, () => client(first.base, () => !killed))
  while (!enough()) await new Promise((resolve) => setTimeout(resolve, 5))
  first.server.child.kill("SIGKILL")
  killed = true
  await Promise.all(working)
  await first.server.exited
  running.pop()
  return serve(db)
}

const record = (base: string, batch: number) =>
  fetch(`${base}/v1/analytics.recordVerifications`, {
    method: "POST",
    headers: { authorization: "Bearer sk_acme_admin_8f3e1c7a9b2d4e6f0a1c", "content-type": "application/json" },
    body: JSON.stringify({
      verifications: Array.from({ length: PER_BATCH }, (_, i) => ({
        apiId: "api_main",
        keyId: `batch_${batch}`,
        outcome: i % 10 === 0 ? "rateLimited" : "valid",
        tags: [`t${i % 7}`]
      }))
    })
  }).then((r) => r.status, () => 0)

describe("durability on SQLite", () => {
  it("after SIGKILL mid-stream, every acknowledged batch is there exactly once, and nothing partial", async () => {
    const db = join(mkdtempSync(join(tmpdir(), "keymeter-kill-")), "keymeter.db")
    const acknowledged = new Set<number>()
    const sent = new Set<number>()
    let next = 0
    // Four clients send batches back to back; the server is killed while they are at it.
    const second = await killAmid(db, 4, async (base, alive) => {
      while (alive()) {
        const batch = next++
        sent.add(batch)
        if ((await record(base, batch)) === 200) acknowledged.add(batch)
      }
    }, () => acknowledged.size >= 150)
    const reply = await fetch(`${second.base}/v1/analytics.getVerifications?apiId=api_main&start=0&groupBy=key`, {
      headers: { authorization: "Bearer sk_acme_reader_5d2b9e4f7c1a3e8b6d0f" }
    })
    expect(reply.status).toBe(200)
    const counted = new Map(
      ((await reply.json()) as Array<{ keyId: string; total: number }>).map((p) => [p.keyId, p.total])
    )
    for (const batch of acknowledged) expect(counted.get(`batch_${batch}`), `batch ${batch}`).toBe(PER_BATCH)
    for (const [keyId, total] of counted) {
      const batch = Number(keyId.slice("batch_".length))
      expect(sent.has(batch), keyId).toBe(true)
      // A batch killed in flight may have committed or not, but never in part.
      expect(total, keyId).toBe(PER_BATCH)
    }
    expect(acknowledged.size).toBeGreaterThanOrEqual(150)
  })

  it("after SIGKILL amid catalog writes sharing commits, every acknowledged key and override is there", async () => {
    const db = join(mkdtempSync(join(tmpdir(), "keymeter-kill-catalog-")), "keymeter.db")
    const post = (base: string, route: string, body: object) =>
      fetch(`${base}/v1/${route}`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
        body: JSON.stringify(body)
      }).then(async (r) => r.status === 200 ? (await r.json()) as Record<string, string> : undefined, () => undefined)
    const keys: Array<{ keyId: string; key: string }> = []
    const overrides = new Map<string, number>()
    let next = 0
    // Sixteen clients at once, so writes share commits; each client's writes in turn.
    const second = await killAmid(db, 16, async (base, alive) => {
      while (alive()) {
        const n = next++
        if (n % 2 === 0) {
          const created = await post(base, "keys.createKey", { apiId: "api_main", name: `kill ${n}` })
          if (created !== undefined) keys.push({ keyId: created.keyId!, key: created.key! })
        } else {
          const set = await post(base, "ratelimits.setOverride", {
            namespaceName: "email",
            identifier: `user_${n}`,
            limit: n,
            duration: 60_000
          })
          if (set !== undefined) overrides.set(`user_${n}`, n)
        }
      }
    }, () => keys.length + overrides.size >= 400)
    const get = (path: string) =>
      fetch(`${second.base}/v1/${path}`, { headers: { authorization: `Bearer ${ADMIN}` } })
        .then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }))
    for (const { key, keyId } of keys) {
      const verified = await fetch(`${second.base}/v1/keys.verifyKey`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
        body: JSON.stringify({ apiId: "api_main", key })
      }).then((r) => r.json() as Promise<{ valid: boolean; keyId: string }>)
      expect(verified, keyId).toMatchObject({ valid: true, keyId })
    }
    for (const [identifier, limit] of overrides) {
      const found = await get(`ratelimits.getOverride?namespaceName=email&identifier=${identifier}`)
      expect(found, identifier).toMatchObject({ status: 200, body: { identifier, limit } })
    }
    expect(keys.length).toBeGreaterThan(100)
    expect(overrides.size).toBeGreaterThan(100)
  }, 120_000)

  it("a server killed with SIGKILL is replaced at once, twenty times in a row", async () => {
    const db = join(mkdtempSync(join(tmpdir(), "keymeter-restart-")), "keymeter.db")
    for (let round = 0; round < 20; round++) {
      const started = await serve(db)
      expect(await record(started.base, round)).toBe(200)
      started.server.child.kill("SIGKILL")
      await started.server.exited
      running.pop()
    }
    const last = await serve(db)
    const reply = await fetch(`${last.base}/v1/analytics.getVerifications?apiId=api_main&start=0&groupBy=key`, {
      headers: { authorization: "Bearer sk_acme_reader_5d2b9e4f7c1a3e8b6d0f" }
    })
    expect(((await reply.json()) as Array<unknown>).length).toBe(20)
  }, 120_000)

  it("of two servers racing for one file, one serves and the other says why it cannot", async () => {
    const db = join(mkdtempSync(join(tmpdir(), "keymeter-race-")), "keymeter.db")
    const outcomes = await Promise.allSettled([serve(db), serve(db)])
    const served = outcomes.filter((o) => o.status === "fulfilled")
    const refused = outcomes.flatMap((o) => o.status === "rejected" ? [String(o.reason)] : [])
    expect(served.length).toBe(1)
    expect(refused).toEqual([
      expect.stringMatching(
        new RegExp(`exited with 1 before it was ready[^]*Another keymeter server is writing to ${db}`)
      )
    ])
  }, 60_000)
})
