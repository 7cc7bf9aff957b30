/**
 * The thread of `MemorySqlWorker`: a replica of the serving thread's memory stores, fed every batch
 * they append (`Feed`), in order with the queries, so a query sees what was appended before it was
 * asked. `SqlWorker.serve` runs the queries at the lowest priority, together, keeping to the
 * lane's share while the serving thread's hot paths run; this thread's heap and collector are its
 * own.
 */
import { Engine } from "@keymeter/engine"
import * as SqlQuery from "@keymeter/sql/SqlQuery"
import * as SqlWorker from "@keymeter/sql/SqlWorker"
import * as Effect from "effect/Effect"
import { workerData } from "node:worker_threads"
import * as MemoryRatelimitStore from "../MemoryRatelimitStore.js"
import * as MemoryVerificationStore from "../MemoryVerificationStore.js"
import type { Feed } from "./Feed.js"
import { ratelimitBatches, verificationBatches } from "./Feed.js"

/** What the thread is started with. */
export interface Setup {
  /** The stores' tuning, as the serving thread's. */
  readonly options: MemoryRatelimitStore.Options
  /** The serving thread's marks (`Foreground.shared`). */
  readonly foreground: SharedArrayBuffer
}

const setup = workerData as Setup
const verifications = MemoryVerificationStore.make(new Engine.Engine(setup.options))
const ratelimits = MemoryRatelimitStore.make(setup.options)
const stores = SqlQuery.storesOf(verifications, ratelimits)

SqlWorker.serve({
  foreground: setup.foreground,
  // The serving thread caps how many run at once (`SqlLimits.concurrent`); here, as there, the
  // lane interleaves their slices, so a quick query is not queued behind a heavy one.
  concurrent: true,
  run: (request, signal) =>
    Effect.runPromiseExit(
      SqlQuery.run(request.text, {
        family: request.family,
        workspaceId: request.workspaceId,
        within: request.within,
        ...stores,
        limits: request.limits,
        now: request.now
      }),
      { signal }
    ),
  receive: (message) => {
    const feed = message as Feed
    if (feed.feed === "verifications") {
      for (const batch of verificationBatches(feed)) Effect.runSync(verifications.append(batch, undefined))
    } else {
      for (const batch of ratelimitBatches(feed)) Effect.runSync(ratelimits.append(batch))
    }
  }
})
