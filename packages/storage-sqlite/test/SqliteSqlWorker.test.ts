import { describe, expect, it } from "@effect/vitest"
import * as Foreground from "@keymeter/core/Foreground"
import type { RatelimitEvent } from "@keymeter/core/RatelimitEvent"
import { RatelimitStore, VerificationStore } from "@keymeter/core/Storage"
import * as Verification from "@keymeter/core/Verification"
import { SqlRunner } from "@keymeter/sql/SqlRunner"
import type { Request } from "@keymeter/sql/SqlRunner"
import { SqliteSqlWorker, SqliteStorage } from "@keymeter/storage-sqlite"
import { SqlWorkerFixture } from "@keymeter/testing"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const MIN = 60_000
const NOW = Date.now()
const T0 = NOW - 3 * 24 * 60 * MIN

const verifications = Array.from({ length: 900 }, (_, i) =>
  Verification.make({
    time: T0 + i * 5 * MIN,
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
  workspaceId: "ws",
  namespaceId: i % 2 === 0 ? "ns_a" : "ns_b",
  identifier: `user_${i % 5}`,
  passed: i % 4 !== 0,
  limit: 10,
  duration: 60_000,
  remaining: 9,
  cost: 1,
  overrideId: undefined,
  source: "limit",
  latency: 0.5,
  detail: undefined
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
  ["verifications", "SELECT region, avg(latency) AS l FROM key_verifications_v1 GROUP BY region ORDER BY region"],
  [
    "ratelimits",
    "SELECT identifier, countIf(passed) AS ok, countIf(NOT passed) AS blocked FROM ratelimits_v1 GROUP BY identifier ORDER BY identifier"
  ]
]

const request = SqlWorkerFixture.requestsAt(NOW)

const setup = (foregroundMs = Infinity) => {
  const filename = join(mkdtempSync(join(tmpdir(), "keymeter-sqlworker-")), "k.db")
  return Layer.merge(
    SqliteStorage.layer({ filename }),
    SqliteSqlWorker.layer({ filename, foregroundMs })
  )
}

describe("SqliteSqlWorker", () => {
  it.effect("answers what the writer's process answers, and sees what it commits later", () =>
    Effect.gen(function*() {
      const v = yield* VerificationStore
      const rl = yield* RatelimitStore
      yield* v.append(verifications.slice(0, 600))
      yield* rl.append(Array.from({ length: 200 }, (_, i) => decision(i)))
      for (const [family, text] of QUERIES) {
        const here = yield* SqlWorkerFixture.inProcess(request(family, text))
        expect(here.rows.length, text).toBeGreaterThan(0)
        expect(yield* SqlWorkerFixture.onWorker(request(family, text)), text).toEqual(here)
      }
      // A batch committed after the first queries: the next query's snapshot holds it.
      const [family, text] = QUERIES[0]!
      const before = yield* SqlWorkerFixture.onWorker(request(family, text))
      yield* v.append(verifications.slice(600))
      const after = yield* SqlWorkerFixture.onWorker(request(family, text))
      expect(after).toEqual(yield* SqlWorkerFixture.inProcess(request(family, text)))
      expect(after).not.toEqual(before)
    }).pipe(Effect.provide(setup())), SqlWorkerFixture.WORKER_TIMEOUT)

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
      }).pipe(Effect.provide(setup())),
    SqlWorkerFixture.WORKER_TIMEOUT
  )

  it.live("skips or stops the queries whose callers went away", () =>
    Effect.gen(function*() {
      const v = yield* VerificationStore
      const many = Array.from({ length: 30_000 }, (_, i) =>
        Verification.make({
          time: T0 + i * 2_000,
          workspaceId: "ws",
          apiId: "api_a",
          keyId: `key_${i % 5_000}`,
          identity: { id: `id_${i % 7_919}`, externalId: `user_${i % 7_919}` },
          outcome: i % 7 === 0 ? "rateLimited" : "valid",
          tags: [`t${i % 97}`],
          region: "fra"
        }))
      yield* v.append(many)
      const slow = request(
        "verifications",
        "SELECT key_id, identity_id, arrayJoin(tags) AS tag, count() AS n FROM key_verifications_v1 GROUP BY key_id, identity_id, tag ORDER BY n DESC, key_id, identity_id LIMIT 10"
      )
      const quick = request("verifications", "SELECT 1 AS one")
      yield* SqlWorkerFixture.onWorker(quick)
      const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        Effect.map(Effect.timed(effect), ([duration, value]) => [Duration.toMillis(duration), value] as const)
      // Eight slow queries queued, then a quick one: it waits for the eight, one after another.
      const kept = yield* Effect.forEach(Array.from({ length: 8 }), () => Effect.fork(SqlWorkerFixture.onWorker(slow)))
      yield* Effect.sleep(20)
      const [behindEight] = yield* timed(SqlWorkerFixture.onWorker(quick))
      for (const fiber of kept) expect((yield* Fiber.join(fiber)).rows).toHaveLength(10)
      // The same, their callers gone before the first is done: the quick one waits at most for the
      // one running (stopped at its next slice); the queued ones are skipped. Compared within the
      // same minute, as the thread's priority makes its speed follow the machine's load.
      const dropped = yield* Effect.forEach(
        Array.from({ length: 8 }),
        () => Effect.fork(SqlWorkerFixture.onWorker(slow))
      )
      yield* Effect.sleep(20)
      yield* Effect.forEach(dropped, Fiber.interrupt)
      const [waited, answer] = yield* timed(SqlWorkerFixture.onWorker(quick))
      expect(answer.rows).toEqual([{ one: 1 }])
      console.log(
        `quick query behind eight slow ones ${behindEight.toFixed(0)} ms, behind eight dropped ${waited.toFixed(0)} ms`
      )
      expect(waited).toBeLessThan(behindEight / 2)
      // The thread goes on answering.
      expect(yield* SqlWorkerFixture.onWorker(slow)).toEqual(yield* SqlWorkerFixture.inProcess(slow))
    }).pipe(Effect.provide(setup())), SqlWorkerFixture.WORKER_TIMEOUT)

  it.effect("takes a query only while the hot paths have run lately", () =>
    Effect.gen(function*() {
      const runner = yield* SqlRunner
      Foreground.mark(performance.now() - 120_000)
      expect(runner.run(request("verifications", "SELECT 1"))).toBeUndefined()
      Foreground.mark(performance.now())
      // The first query starts the thread and runs here, as do those until the thread is ready.
      expect(runner.run(request("verifications", "SELECT 1"))).toBeUndefined()
      expect((yield* SqlWorkerFixture.onWorker(request("verifications", "SELECT 1 AS one"))).rows).toEqual([{ one: 1 }])
      expect(runner.run(request("verifications", "SELECT 1"))).toBeDefined()
    }).pipe(Effect.provide(setup(60_000))), SqlWorkerFixture.WORKER_TIMEOUT)
})
