import { afterEach, describe, expect, it } from "@effect/vitest"
import type { Running } from "./Spawn.js"
import { freePort, start, stop } from "./Spawn.js"

const running: Array<Running> = []
afterEach(async () => {
  for (const process of running.splice(0)) await stop(process, "SIGKILL")
})

describe("examples", () => {
  it("embedded.ts: the host service records its verifications and mounts keymeter under /keymeter", async () => {
    const port = await freePort()
    const app = await start("examples/embedded.ts", {
      env: { PORT: String(port) },
      ready: /READY (\S+) apiId=(\S+) readerKey=(\S+)/
    })
    running.push(app)
    const [, base, apiId, readerKey] = app.match
    expect((await fetch(`${base}/hello`, { headers: { "x-api-key": "key_alice" } })).status).toBe(200)
    expect((await fetch(`${base}/hello`, { headers: { "x-api-key": "key_alice" } })).status).toBe(200)
    expect((await fetch(`${base}/hello`, { headers: { "x-api-key": "stolen" } })).status).toBe(401)
    const usage = (await (await fetch(`${base}/usage`)).json()) as Array<any>
    expect(usage.map((p: any) => [p.keyId, p.total, p.valid, p.notFound])).toEqual([
      ["key_alice", 2, 2, 0],
      ["stolen", 1, 0, 1]
    ])
    const mounted = await fetch(`${base}/keymeter/v1/analytics.getVerifications?apiId=${apiId}&groupBy=identity`, {
      headers: { authorization: `Bearer ${readerKey}` }
    })
    expect(mounted.status).toBe(200)
    expect(((await mounted.json()) as Array<any>).map((p) => [p.identity.externalId, p.total])).toEqual([["alice", 2]])
    expect((await fetch(`${base}/keymeter/docs`)).status).toBe(200)
    const unauthorized = await fetch(`${base}/keymeter/v1/analytics.getVerifications?apiId=${apiId}`)
    expect(unauthorized.status).toBe(401)
    expect(await stop(running.pop()!)).toBe(0)
  })

  it("standalone.ts: the standalone server with the example provisioning", async () => {
    const port = await freePort()
    const server = await start("examples/standalone.ts", { env: { PORT: String(port) }, ready: /READY (\S+)/ })
    running.push(server)
    const base = server.match[1]
    const record = await fetch(`${base}/v1/analytics.recordVerifications`, {
      method: "POST",
      headers: { authorization: "Bearer sk_acme_admin_8f3e1c7a9b2d4e6f0a1c", "content-type": "application/json" },
      body: JSON.stringify({ verifications: [{ apiId: "api_main", keyId: "key_1", outcome: "valid" }] })
    })
    expect(await record.json()).toEqual({ recorded: 1 })
    const read = await fetch(`${base}/v1/analytics.getVerifications?apiId=api_main&groupBy=day`, {
      headers: { authorization: "Bearer sk_acme_reader_5d2b9e4f7c1a3e8b6d0f" }
    })
    const days = (await read.json()) as Array<{ total: number }>
    expect(days.at(-1)!.total).toBe(1)
    expect(await stop(running.pop()!)).toBe(0)
  })
})
