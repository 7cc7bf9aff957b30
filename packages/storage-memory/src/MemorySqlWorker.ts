/**
 * Memory storage whose SQL analytics run off the event loop: the stores of `MemoryStorage`, and a
 * worker thread holding a replica of their events (`internal/SqlWorkerMain`), fed each batch they
 * append. Queries run there, so neither their slices nor their collector's pauses reach the hot
 * paths'; they answer what the stores here would.
 *
 * The replica costs what the events cost twice over in memory, and the serving thread ~0.4 µs an
 * appended event to send it (`internal/Feed`); the thread starts with the layer, as the stores'
 * events are sent from the first. If it stops, queries run in-process from then on.
 */
import * as Foreground from "@keymeter/core/Foreground"
import { RatelimitStore, VerificationStore } from "@keymeter/core/Storage"
import type { Catalog } from "@keymeter/core/Storage"
import { Engine } from "@keymeter/engine"
import { SqlRunner } from "@keymeter/sql/SqlRunner"
import * as SqlWorker from "@keymeter/sql/SqlWorker"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Sender } from "./internal/Feed.js"
import type { Setup } from "./internal/SqlWorkerMain.js"
import * as MemoryCatalog from "./MemoryCatalog.js"
import * as MemoryRatelimitStore from "./MemoryRatelimitStore.js"
import * as MemoryVerificationStore from "./MemoryVerificationStore.js"

/**
 * The stores' tuning, and where queries go (see `SqlWorker.Options.foregroundMs`). By default every
 * query goes to the thread (`Infinity`): the replica answers as fast as the stores here, and a
 * query taken here on an idle server would go on here, sliced, once the hot paths resume.
 */
export interface Options extends MemoryRatelimitStore.Options {
  readonly foregroundMs?: number | undefined
}

/** Every part of the port, fresh and empty, with the runner of its replica thread (stopped with the layer). */
export const layer = (
  options: Options = {}
): Layer.Layer<VerificationStore | RatelimitStore | Catalog | SqlRunner> =>
  Layer.merge(
    Layer.scopedContext(Effect.gen(function*() {
      const tuning: MemoryRatelimitStore.Options = {
        lateMergeThreshold: options.lateMergeThreshold,
        details: options.details,
        // SQL reads decisions from their columns, never the latest held in full.
        heldDecisions: 0
      }
      const host = yield* SqlWorker.make({
        start: () =>
          SqlWorker.spawn(
            import.meta.url,
            "./internal/SqlWorkerMain",
            {
              options: tuning,
              foreground: Foreground.shared()
            } satisfies Setup
          ),
        foregroundMs: options.foregroundMs ?? Infinity,
        eager: true
      })
      const sender = new Sender((feed) => host.post(feed))
      const verifications = MemoryVerificationStore.make(new Engine.Engine(options))
      const ratelimits = MemoryRatelimitStore.make(options)
      return Context.make(
        VerificationStore,
        VerificationStore.of({
          ...verifications,
          append: (events, receipt) =>
            Effect.tap(
              verifications.append(events, receipt),
              () => Effect.sync(() => sender.appendVerifications(events))
            )
        })
      ).pipe(
        Context.add(
          RatelimitStore,
          RatelimitStore.of({
            ...ratelimits,
            append: (events) =>
              Effect.tap(ratelimits.append(events), () => Effect.sync(() => sender.appendRatelimits(events)))
          })
        ),
        Context.add(
          SqlRunner,
          SqlRunner.of({
            run: (request) => {
              const asked = host.runner.run(request)
              // What was appended before the query is posted before it.
              return asked === undefined ? undefined : Effect.zipRight(Effect.sync(() => sender.flush()), asked)
            }
          })
        )
      )
    })),
    MemoryCatalog.layer
  )
