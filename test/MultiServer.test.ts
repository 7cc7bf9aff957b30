/**
 * Three keymeter server processes sharing PostgreSQL (catalog), Redis (rate-limit windows) and
 * ClickHouse (verifications and rate-limit decisions), requests spread round-robin: they behave as
 * one server.
 */
import { ClickhouseTestServer, PostgresTestServer, RedisTestServer } from "@keymeter/testing"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { Unkey } from "unkey-v2"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Running, serveKeymeter, stop } from "./Spawn.js"

const skip = ClickhouseTestServer.skip() ?? PostgresTestServer.skip() ?? RedisTestServer.skip()

const AUTH = { authorization: "Bearer sk_acme_admin_8f3e1c7a9b2d4e6f0a1c", "content-type": "application/json" }
const run = `${process.pid}_${Date.now()}`

describe.skipIf(skip !== undefined)("three servers sharing PostgreSQL, Redis and ClickHouse", () => {
  const scope = Effect.runSync(Scope.make())
  const clickhouseDatabase = ClickhouseTestServer.databaseName()
  const servers: Array<{ server: Running; base: string }> = []
  let next = 0
  /** The next server, round-robin. */
  const any = () => servers[next++ % servers.length]!.base

  const post = (base: string, path: string, body: unknown) =>
    fetch(`${base}${path}`, { method: "POST", headers: AUTH, body: JSON.stringify(body) })
  const json = async (reply: Response) => {
    expect(reply.status, await reply.clone().text()).toBe(200)
    return reply.json() as Promise<any>
  }
  /** Waits until `check` holds (another server's change travels by notification); how long it took. */
  const eventually = async (check: () => Promise<boolean>, ms = 3_000) => {
    const started = performance.now()
    while (!(await check())) {
      if (performance.now() - started > ms) throw new Error(`not within ${ms} ms`)
      await new Promise((resolve) => setTimeout(resolve, 2))
    }
    return performance.now() - started
  }

  beforeAll(async () => {
    const postgres = await Effect.runPromise(Scope.extend(PostgresTestServer.freshDatabase(), scope))
    const env = {
      KEYMETER_STORAGE: postgres,
      KEYMETER_ANALYTICS: `clickhouse:${ClickhouseTestServer.url}/${clickhouseDatabase}`,
      KEYMETER_RATELIMIT: RedisTestServer.url!,
      KEYMETER_PROVISION: "examples/provision.json"
    }
    // Started together: they migrate and provision the same databases at once.
    for (const started of await Promise.all([1, 2, 3].map(() => serveKeymeter(env)))) servers.push(started)
  }, 120_000)

  afterAll(async () => {
    for (const { server } of servers) await stop(server, "SIGKILL")
    await Effect.runPromise(ClickhouseTestServer.dropDatabase(clickhouseDatabase))
    await Effect.runPromise(Scope.close(scope, Exit.void))
  })

  it("admits exactly 100 of 300 concurrent limit calls for one identifier with limit 100", async () => {
    const answers = await Promise.all(Array.from({ length: 300 }, () =>
      post(any(), "/v1/ratelimits.limit", {
        namespace: "email",
        identifier: `burst_${run}`,
        limit: 100,
        duration: 60_000
      }).then(json)))
    expect(answers.filter((answer) => answer.success)).toHaveLength(100)
    // Every decision of every server is counted in ClickHouse: each server reads them all (another
    // server's once its recorder has written them, within KEYMETER_RECORD_DELAY_MS).
    const counts = (base: string) =>
      fetch(`${base}/v1/analytics.getRatelimits?namespaceName=email&identifier=burst_${run}`, { headers: AUTH })
        .then(json)
    await eventually(async () => (await counts(servers[0]!.base))[0].total === 300, 10_000)
    for (const { base } of servers) expect(await counts(base)).toEqual([{ total: 300, passed: 100, blocked: 200 }])
  })

  it("async overrides: each server answers from its own view, reconciled through Redis (overshoot measured)", async () => {
    const pattern = `async_${run}_*`
    await json(
      await post(servers[0]!.base, "/v1/ratelimits.setOverride", {
        namespaceName: "email",
        identifier: pattern,
        limit: 100,
        duration: 60_000,
        async: true
      })
    )
    // Every server applies it (probes spend another identifier's budget).
    for (const { base } of servers) {
      await eventually(async () =>
        (await post(base, "/v1/ratelimits.limit", {
          namespace: "email",
          identifier: `async_${run}_probe`,
          limit: 1,
          duration: 60_000
        }).then(json)).limit === 100
      )
    }
    const admitted = async (identifier: string, perServer: number, concurrency: number) => {
      let count = 0
      await Promise.all(servers.flatMap(({ base }) =>
        Array.from({ length: concurrency }, async () => {
          for (let i = 0; i < perServer / concurrency; i++) {
            const answer = await post(base, "/v1/ratelimits.limit", {
              namespace: "email",
              identifier,
              limit: 1,
              duration: 60_000
            }).then(json)
            if (answer.success) count++
          }
        })
      ))
      return count
    }
    // A burst: 100 requests to each server at once, 10 at a time.
    const burst = await admitted(`async_${run}_burst`, 100, 10)
    // Steady: 200 requests to each server, one at a time.
    const steady = await admitted(`async_${run}_steady`, 200, 1)
    console.log(`async override, limit 100, three servers: burst admitted ${burst}, steady admitted ${steady}`)
    expect(burst).toBeGreaterThanOrEqual(100)
    expect(steady).toBeGreaterThanOrEqual(100)
    // A burst can at worst give each server the whole limit; a steady stream stays within 10% per
    // server (the bound Unkey's tests allow its own asynchronous limiter).
    expect(burst).toBeLessThanOrEqual(300)
    expect(steady).toBeLessThanOrEqual(130)
  })

  it("an override set through server 1 applies on server 3, and no longer once deleted through server 2", async () => {
    const [one, two, three] = servers.map((s) => s.base)
    const identifier = `vip_${run}`
    const limit = () =>
      post(three!, "/v1/ratelimits.limit", { namespace: "email", identifier, limit: 5, duration: 60_000 }).then(json)
    expect((await limit()).limit).toBe(5)
    const override = await json(
      await post(one!, "/v1/ratelimits.setOverride", {
        namespaceName: "email",
        identifier,
        limit: 50,
        duration: 60_000
      })
    )
    const applied = await eventually(async () => (await limit()).overrideId === override.overrideId)
    expect((await limit()).limit).toBe(50)
    await json(await post(two!, "/v1/ratelimits.deleteOverride", { namespaceName: "email", identifier }))
    const removed = await eventually(async () => (await limit()).overrideId === undefined)
    expect((await limit()).limit).toBe(5)
    console.log(
      `override seen by another server after ${applied.toFixed(1)} ms, its deletion after ${removed.toFixed(1)} ms`
    )
  })

  it("a key created through server 2 verifies through server 1; 50 credits, 200 parallel verifications: 50 VALID", async () => {
    const [one, two] = servers.map((s) => s.base)
    const created = await json(
      await post(two!, "/v1/keys.createKey", {
        apiId: "api_main",
        externalId: `customer_${run}`,
        remaining: 50
      })
    )
    expect(await json(await post(one!, "/v1/keys.verifyKey", { key: created.key, remaining: { cost: 0 } })))
      .toMatchObject({
        valid: true,
        keyId: created.keyId,
        remaining: 50
      })
    const answers = await Promise.all(
      Array.from({ length: 200 }, () => post(any(), "/v1/keys.verifyKey", { key: created.key }).then(json))
    )
    expect(answers.filter((answer) => answer.code === "VALID")).toHaveLength(50)
    expect(answers.filter((answer) => answer.code === "USAGE_EXCEEDED")).toHaveLength(150)
    // Every server's verifications, counted through any server (each stores its own within its delay).
    for (const { base } of servers) {
      await eventually(async () => {
        const counts = await json(
          await fetch(`${base}/v1/analytics.getVerifications?apiId=api_main&keyId=${created.keyId}&start=0`, {
            headers: AUTH
          })
        )
        return counts[0]?.total === 201 && counts[0]?.valid === 51 && counts[0]?.usageExceeded === 150
      }, 10_000)
    }
  })

  it("a key disabled, its identity disabled, then the key deleted through one server stops verifying on the others at once", async () => {
    const [one, two, three] = servers.map((s) => s.base)
    const externalId = `revoked_${run}`
    const created = await json(await post(one!, "/v1/keys.createKey", { apiId: "api_main", externalId }))
    const code = async (base: string) => (await json(await post(base, "/v1/keys.verifyKey", { key: created.key }))).code
    // Every server remembers the key as valid.
    for (const base of [one!, two!, three!]) expect(await code(base)).toBe("VALID")
    // Each change through one server: the others answer the new code within a notification's time.
    const seen = async (change: () => Promise<unknown>, expected: string) => {
      await change()
      return Math.max(
        ...(await Promise.all([two!, three!].map((base) => eventually(async () => (await code(base)) === expected))))
      )
    }
    const disabled = await seen(
      () => post(one!, "/v1/keys.updateKey", { keyId: created.keyId, enabled: false }).then(json),
      "DISABLED"
    )
    const enabled = await seen(
      () => post(three!, "/v1/keys.updateKey", { keyId: created.keyId, enabled: true }).then(json),
      "VALID"
    )
    const unauthorized = await seen(
      () => post(two!, "/v1/identities.updateIdentity", { externalId, enabled: false }).then(json),
      "UNAUTHORIZED"
    )
    const deleted = await seen(
      () => post(one!, "/v1/keys.deleteKey", { keyId: created.keyId }).then(json),
      "NOT_FOUND"
    )
    // The deleted key's secret is unknown everywhere, the server that deleted it included.
    for (const base of [one!, two!, three!]) expect(await code(base)).toBe("NOT_FOUND")
    console.log(
      `key changes seen by the other servers after: disabled ${disabled.toFixed(1)} ms, enabled ${
        enabled.toFixed(1)
      } ms, identity disabled ${unauthorized.toFixed(1)} ms, deleted ${deleted.toFixed(1)} ms`
    )
  })

  it("a role's permission deleted, then the role taken from the key, through one server applies on the others at once", async () => {
    const [one, two, three] = servers.map((s) => s.base)
    const suffix = String(run)
    await json(await post(one!, "/v1/permissions.createPermission", { name: `docs.write.${suffix}` }))
    const permission = await json(await post(one!, "/v1/permissions.createPermission", { name: `docs.read.${suffix}` }))
    const role = await json(
      await post(two!, "/v1/permissions.createRole", {
        name: `editor_${suffix}`,
        permissions: [`docs.read.${suffix}`, `docs.write.${suffix}`]
      })
    )
    const created = await json(
      await post(three!, "/v1/keys.createKey", { apiId: "api_main", roles: [`editor_${suffix}`] })
    )
    const code = async (base: string, permission: string) =>
      (await json(
        await post(base, "/v1/keys.verifyKey", { key: created.key, authorization: { permissions: permission } })
      )).code
    for (const base of [one!, two!, three!]) expect(await code(base, `docs.read.${suffix}`)).toBe("VALID")
    const seen = async (change: () => Promise<unknown>, permission: string, expected: string) => {
      await change()
      return Math.max(
        ...(await Promise.all(
          [two!, three!].map((base) => eventually(async () => (await code(base, permission)) === expected))
        ))
      )
    }
    const permissionDeleted = await seen(
      () => post(one!, "/v1/permissions.deletePermission", { permissionId: permission.permissionId }).then(json),
      `docs.read.${suffix}`,
      "INSUFFICIENT_PERMISSIONS"
    )
    expect(await code(one!, `docs.write.${suffix}`)).toBe("VALID")
    const roleRemoved = await seen(
      () => post(one!, "/v1/keys.removeRoles", { keyId: created.keyId, roles: [{ id: role.roleId }] }).then(json),
      `docs.write.${suffix}`,
      "INSUFFICIENT_PERMISSIONS"
    )
    console.log(
      `rbac changes seen by the other servers after: permission deleted ${permissionDeleted.toFixed(1)} ms, ` +
        `role removed ${roleRemoved.toFixed(1)} ms`
    )
  })

  it("Unkey's v2 client through the three servers: credits, multiLimit and overrides exact across them", async () => {
    const clients = servers.map(({ base }) =>
      new Unkey({ rootKey: AUTH.authorization.slice(7), serverURL: base, retryConfig: { strategy: "none" } })
    )
    let turn = 0
    const anyClient = () => clients[turn++ % clients.length]!
    // A key made through /v2 on one server, spent through both dialects on all three.
    const { key, keyId } = (await clients[1]!.keys.createKey({ apiId: "api_main", credits: { remaining: 40 } })).data
    const codes = await Promise.all(Array.from({ length: 120 }, async (_, i) =>
      i % 2 === 0
        ? (await anyClient().keys.verifyKey({ key })).data.code
        : (await post(any(), "/v1/keys.verifyKey", { key }).then(json)).code))
    expect(codes.filter((code) => code === "VALID")).toHaveLength(40)
    expect(codes.filter((code) => code === "USAGE_EXCEEDED")).toHaveLength(80)
    expect((await clients[2]!.keys.getKey({ keyId })).data.credits).toEqual({ remaining: 0 })

    // multiLimit from every server at once: each window admits exactly its limit.
    const namespace = `multi_${run}`
    const answers = await Promise.all(Array.from({ length: 90 }, () =>
      anyClient().ratelimit.multiLimit([
        { namespace, identifier: "a", limit: 30, duration: 60_000 },
        { namespace, identifier: "b", limit: 45, duration: 60_000 }
      ])))
    expect(answers.filter((answer) => answer.data.limits[0]!.passed)).toHaveLength(30)
    expect(answers.filter((answer) => answer.data.limits[1]!.passed)).toHaveLength(45)
    // Without ?atomic the two limits decide independently, so which requests pass both depends on
    // the order their two decisions reached Redis: each answer passes exactly when both limits did.
    for (const answer of answers) {
      expect(answer.data.passed).toBe(answer.data.limits.every((limit) => limit.passed))
    }
    expect(answers.filter((answer) => answer.data.passed).length).toBeLessThanOrEqual(30)

    // An override set through v2 on one server resolves through v2's limit on another.
    const { overrideId } = (await clients[0]!.ratelimit.setOverride({
      namespace,
      identifier: "vip_*",
      limit: 7,
      duration: 60_000
    })).data
    await eventually(async () =>
      (await clients[2]!.ratelimit.limit({ namespace, identifier: "vip_probe", limit: 1, duration: 60_000 })).data
        .overrideId === overrideId
    )
    const limited = await Promise.all(
      Array.from(
        { length: 21 },
        () => anyClient().ratelimit.limit({ namespace, identifier: "vip_1", limit: 1, duration: 60_000 })
      )
    )
    expect(limited.filter((answer) => answer.data.success)).toHaveLength(7)
  })

  it("a server killed with SIGKILL under load: the others keep answering, and acknowledged writes stay", async () => {
    const [one, two, three] = servers
    const survivors = [one!.base, two!.base]
    const created = await json(await post(three!.base, "/v1/keys.createKey", { apiId: "api_main" }))
    let failures = 0
    let answered = 0
    const load = Promise.all(Array.from({ length: 16 }, async (_, worker) => {
      for (let i = 0; i < 40; i++) {
        const reply = await post(survivors[(worker + i) % 2]!, "/v1/keys.verifyKey", { key: created.key })
          .catch(() => undefined)
        if (reply?.status === 200 && (await reply.json() as any).valid) answered++
        else failures++
      }
    }))
    await new Promise((resolve) => setTimeout(resolve, 50))
    three!.server.child.kill("SIGKILL")
    await load
    expect(failures).toBe(0)
    expect(answered).toBe(640)
    // The key the killed server acknowledged is there for the others.
    expect(await json(await fetch(`${one!.base}/v1/keys.getKey?keyId=${created.keyId}`, { headers: AUTH })))
      .toMatchObject({ id: created.keyId })
  })
})
