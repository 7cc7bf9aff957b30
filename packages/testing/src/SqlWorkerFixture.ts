/**
 * What the SQL worker suites share (SQLite's and memory's threads): a query as the serving thread
 * runs it over the stores in context, the same on the thread once it takes queries, and the time
 * their tests allow.
 */
import { RatelimitStore, VerificationStore } from "@keymeter/core/Storage"
import * as SqlQuery from "@keymeter/sql/SqlQuery"
import { SqlRunner } from "@keymeter/sql/SqlRunner"
import type { Request } from "@keymeter/sql/SqlRunner"
import * as Effect from "effect/Effect"

/**
 * The thread runs at nice 19: while CI runs every package's tests at once it gets little CPU, and
 * a query of a few ms here took minutes there.
 */
export const WORKER_TIMEOUT = 600_000

/**
 * Requests of workspace "ws" at `now`. No time budget unless given: on a loaded machine a query on
 * the thread takes many times its usual time, which these tests must not mistake for a budget.
 */
export const requestsAt =
  (now: number) => (family: Request["family"], text: string, limits: Partial<SqlQuery.Limits> = {}): Request => ({
    text,
    family,
    workspaceId: "ws",
    within: undefined,
    now,
    limits: { ...SqlQuery.DEFAULT_LIMITS, timeMs: 600_000, ...limits }
  })

/** The query as the serving thread runs it, over the stores in context. */
export const inProcess = (r: Request) =>
  Effect.gen(function*() {
    const v = yield* VerificationStore
    const rl = yield* RatelimitStore
    return yield* SqlQuery.run(r.text, {
      family: r.family,
      workspaceId: r.workspaceId,
      within: r.within,
      ...SqlQuery.storesOf(v, rl),
      limits: r.limits,
      now: r.now
    })
  })

type OnWorker = NonNullable<ReturnType<SqlRunner["Type"]["run"]>>

/** The query on the thread, once it takes queries: while it loads its modules, `run` declines. */
export const onWorker = (r: Request) =>
  Effect.flatMap(SqlRunner, (runner) => {
    const asked = (): OnWorker =>
      runner.run(r) ?? Effect.flatMap(Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10))), asked)
    return Effect.suspend(asked)
  })
