import { describe, expect, it } from "@effect/vitest"
import type { RatelimitEvent } from "@keymeter/core/RatelimitEvent"
import { RatelimitStore, VerificationStore } from "@keymeter/core/Storage"
import * as Verification from "@keymeter/core/Verification"
import { SqlRunner } from "@keymeter/sql/SqlRunner"
import type { Request } from "@keymeter/sql/SqlRunner"
import { MemorySqlWorker } from "@keymeter/storage-memory"
import { SqlWorkerFixture } from "@keymeter/testing"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import { ratelimitBatches, Sender, verificationBatches } from "../src/internal/Feed.js"
import type { Feed } from "../src/internal/Feed.js"

const MIN = 60_000
const NOW = Date.now()
const T0 = NOW - 3 * 24 * 60 * MIN

const verifications = Array.from({ length: 900 }, (_, i) =>
  Verification.make({
    time: T0 + i * 5 * MIN + (i % 977),
    workspaceId: i % 10 === 9 ? "ws_other" : "ws",
    apiId: i % 3 === 0 ? "api_a" : "api_b",
    keyId: `key_${i % 13}`,
    identity: i % 2 === 0 ? { id: `id_${i % 4}`, externalId: `user_${i % 4}` } : undefined,
    outcome: i % 7 === 0 ? "rateLimited" : i % 11 === 0 ? "usageExceeded" : "valid",
    tags: i % 4 === 0 ? ["a", "b"] : i % 4 === 1 ? ["b"] : [],
    spentCredits: i % 3,
    latency: (i % 10) / 4,
    region: i % 2 === 0 ? "fra" : "iad"
  }))

const decision = (i: number): RatelimitEvent => ({
  time: T0 + i * 7 * MIN,
  workspaceId: i % 9 === 8 ? "ws_other" : "ws",
  namespaceId: i % 2 === 0 ? "ns_a" : "ns_b",
  identifier: `user_${i % 5}`,
  passed: i % 4 !== 0,
  limit: 10,
  duration: 60_000,
  remaining: i % 10,
  cost: 1,
  overrideId: i % 3 === 0 ? `ovr_${i % 2}` : undefined,
  source: i % 5 === 0 ? "verifyKey" : "limit",
  latency: (i % 8) / 8,
  detail: i % 6 === 0 ? `{"meta":{"n":${i}}}` : undefined
})

const QUERIES: ReadonlyArray<readonly [Request["family"], string]> = [
  [
    "verifications",
    "SELECT key_id, count() AS n, countIf(outcome = 'VALID') AS v FROM key_verifications_v1 GROUP BY key_id ORDER BY n DESC, key_id LIMIT 5"
  ],
  [
    "verifications",
    "SELECT toStartOfHour(time) AS h, sum(spent_credits) AS c, uniq(identity_id) AS u FROM key_verifications_v1 WHERE key_space_id = 'api_b' GROUP BY h ORDER BY h"
  ],
  [
    "verifications",
    "SELECT arrayJoin(tags) AS tag, count() AS n FROM key_verifications_per_day_v1 GROUP BY tag ORDER BY tag"
  ],
  [
    "verifications",
    "SELECT external_id, sum(count) AS n FROM key_verifications_per_hour_v1 GROUP BY external_id HAVING n > 10 ORDER BY external_id"
  ],
  [
    "verifications",
    "SELECT region, avg(latency) AS l, max(time) AS t FROM key_verifications_v1 GROUP BY region ORDER BY region"
  ],
  [
    "ratelimits",
    "SELECT identifier, countIf(passed) AS ok, countIf(NOT passed) AS blocked, avg(latency) AS l FROM ratelimits_v1 GROUP BY identifier ORDER BY identifier"
  ],
  [
    "ratelimits",
    "SELECT namespace_id, toStartOfDay(time) AS d, sum(total) AS n, sum(passed) AS p FROM ratelimits_per_hour_v1 GROUP BY namespace_id, d ORDER BY namespace_id, d"
  ]
]

const request = SqlWorkerFixture.requestsAt(NOW)

describe("MemorySqlWorker", () => {
  it.effect(
    "answers what the serving thread's stores answer, and sees what they append after",
    () =>
      Effect.gen(function*() {
        const v = yield* VerificationStore
        const rl = yield* RatelimitStore
        for (let i = 0; i < 600; i += 50) yield* v.append(verifications.slice(i, i + 50))
        yield* rl.append(Array.from({ length: 200 }, (_, i) => decision(i)))
        for (const [family, text] of QUERIES) {
          const here = yield* SqlWorkerFixture.inProcess(request(family, text))
          expect(here.rows.length, text).toBeGreaterThan(0)
          expect(yield* SqlWorkerFixture.onWorker(request(family, text)), text).toEqual(here)
        }
        // Appended in the same turn as the query is asked: the query sees them.
        const [family, text] = QUERIES[0]!
        const before = yield* SqlWorkerFixture.onWorker(request(family, text))
        yield* v.append(verifications.slice(600))
        yield* rl.append(Array.from({ length: 100 }, (_, i) => decision(200 + i)))
        const after = yield* SqlWorkerFixture.onWorker(request(family, text))
        expect(after).toEqual(yield* SqlWorkerFixture.inProcess(request(family, text)))
        expect(after).not.toEqual(before)
        const [rfamily, rtext] = QUERIES[5]!
        expect(yield* SqlWorkerFixture.onWorker(request(rfamily, rtext))).toEqual(
          yield* SqlWorkerFixture.inProcess(request(rfamily, rtext))
        )
      }).pipe(Effect.provide(MemorySqlWorker.layer())),
    SqlWorkerFixture.WORKER_TIMEOUT
  )

  it.effect(
    "hands the rows back as JSON when asked: the text the serving thread would write, decoded on demand",
    () =>
      Effect.gen(function*() {
        const v = yield* VerificationStore
        yield* v.append(verifications)
        yield* (yield* RatelimitStore).append(Array.from({ length: 200 }, (_, i) => decision(i)))
        for (const [family, text] of QUERIES) {
          const here = yield* SqlWorkerFixture.inProcess(request(family, text))
          const there = yield* SqlWorkerFixture.onWorker({ ...request(family, text), json: true })
          expect(there.json, text).toBeInstanceOf(Uint8Array)
          expect(new TextDecoder().decode(there.json), text).toBe(JSON.stringify(here.rows))
          expect(there.columns, text).toEqual(here.columns)
          expect(there.rows, text).toEqual(JSON.parse(JSON.stringify(here.rows)))
          expect(there.rows, text).toBe(there.rows)
        }
        // Not asked, the rows come as they are.
        const [family, text] = QUERIES[0]!
        expect((yield* SqlWorkerFixture.onWorker(request(family, text))).json).toBeUndefined()
      }).pipe(Effect.provide(MemorySqlWorker.layer())),
    SqlWorkerFixture.WORKER_TIMEOUT
  )

  it.effect(
    "refuses as the process does: the construct and its place, the budget it names",
    () =>
      Effect.gen(function*() {
        yield* (yield* VerificationStore).append(verifications)
        const bad = request("verifications", "SELECT count() FROM system.tables")
        const refused = yield* Effect.exit(SqlWorkerFixture.onWorker(bad))
        expect(refused).toEqual(yield* Effect.exit(SqlWorkerFixture.inProcess(bad)))
        expect(Exit.isFailure(refused)).toBe(true)
        const big = request("verifications", "SELECT key_id, time FROM key_verifications_v1", { resultRows: 10 })
        const over = yield* Effect.exit(SqlWorkerFixture.onWorker(big))
        expect(over).toEqual(yield* Effect.exit(SqlWorkerFixture.inProcess(big)))
        expect(JSON.stringify(over)).toContain("QueryBudgetExceeded")
      }).pipe(Effect.provide(MemorySqlWorker.layer())),
    SqlWorkerFixture.WORKER_TIMEOUT
  )

  it.live("runs queries together: a quick one is not queued behind heavy ones", () =>
    Effect.gen(function*() {
      const v = yield* VerificationStore
      yield* v.append(Array.from({ length: 8_000 }, (_, i) =>
        Verification.make({
          time: T0 + i * 2_000,
          workspaceId: "ws",
          apiId: "api_a",
          keyId: `key_${i % 2_000}`,
          identity: { id: `id_${i % 7_919}`, externalId: `user_${i % 7_919}` },
          outcome: i % 7 === 0 ? "rateLimited" : "valid",
          tags: [`t${i % 97}`]
        })))
      const slow = request(
        "verifications",
        "SELECT key_id, identity_id, arrayJoin(tags) AS tag, count() AS n FROM key_verifications_v1 GROUP BY key_id, identity_id, tag ORDER BY n DESC, key_id, identity_id LIMIT 10"
      )
      const heavy = yield* Effect.forEach(Array.from({ length: 3 }), () => Effect.fork(SqlWorkerFixture.onWorker(slow)))
      const quick = yield* SqlWorkerFixture.onWorker(request("verifications", "SELECT 1 AS one"))
      expect(quick.rows).toEqual([{ one: 1 }])
      const done = yield* Effect.forEach(heavy, (fiber) => Effect.map(Fiber.poll(fiber), Option.isSome))
      expect(done.filter((d) => d)).not.toHaveLength(heavy.length)
      for (const fiber of heavy) expect((yield* Fiber.join(fiber)).rows).toHaveLength(10)
    }).pipe(Effect.provide(MemorySqlWorker.layer())), SqlWorkerFixture.WORKER_TIMEOUT)

  it.effect("takes none with foregroundMs 0 while no hot path runs", () =>
    Effect.gen(function*() {
      const runner = yield* SqlRunner
      expect(runner.run(request("verifications", "SELECT 1"))).toBeUndefined()
    }).pipe(Effect.provide(MemorySqlWorker.layer({ foregroundMs: 0 }))))

  it("feeds the batches as they were appended, every field", () => {
    const feeds: Array<Feed> = []
    const sender = new Sender((feed) => feeds.push(feed) > 0)
    const decisions = Array.from({ length: 40 }, (_, i) => decision(i))
    sender.appendVerifications(verifications.slice(0, 7))
    sender.appendRatelimits(decisions.slice(0, 30))
    sender.appendVerifications([])
    sender.appendVerifications(verifications.slice(7, 20))
    sender.appendRatelimits(decisions.slice(30))
    sender.flush()
    expect(feeds.map((feed) => feed.feed)).toEqual(["verifications", "ratelimits"])
    expect(verificationBatches(feeds[0]!)).toEqual([verifications.slice(0, 7), verifications.slice(7, 20)])
    expect(ratelimitBatches(feeds[1]!)).toEqual([decisions.slice(0, 30), decisions.slice(30)])
    sender.flush()
    expect(feeds).toHaveLength(2)
  })
})
