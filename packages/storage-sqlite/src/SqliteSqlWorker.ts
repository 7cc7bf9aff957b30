/**
 * SQL analytics of a SQLite file off the event loop: the `SqlRunner` of `@keymeter/sql`, a worker
 * thread (`SqlWorker`) with a read-only connection to the file (`internal/SqlWorkerMain`). A query
 * that arrives while the hot paths are being asked for (`Foreground`: a verifyKey or limit in the
 * last second) runs there, so neither its slices nor its collector's pauses reach theirs. A query
 * on an idle server runs in-process, where the store's hot range answers counts at memory speed.
 * Both answer the same (WAL lets the thread read one committed state of the file while the writer
 * goes on).
 */
import * as Foreground from "@keymeter/core/Foreground"
import { SqlRunner } from "@keymeter/sql/SqlRunner"
import * as SqlWorker from "@keymeter/sql/SqlWorker"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { Setup } from "./internal/SqlWorkerMain.js"

/** How the worker reads the file: as the writer's stores do (see `SqliteStorage.Options`). */
export interface Options {
  readonly filename: string
  readonly eventDays?: number | undefined
  readonly decisionDays?: number | undefined
  readonly busyTimeoutMs?: number | undefined
  /** See `SqlWorker.Options.foregroundMs` (default 1,000 ms). */
  readonly foregroundMs?: number | undefined
}

/** The runner, its thread started at the first query it takes and stopped with the layer. */
export const layer = (options: Options): Layer.Layer<SqlRunner> =>
  Layer.scoped(
    SqlRunner,
    Effect.map(
      SqlWorker.make({
        start: () =>
          SqlWorker.spawn(
            import.meta.url,
            "./internal/SqlWorkerMain",
            {
              filename: options.filename,
              eventDays: options.eventDays,
              decisionDays: options.decisionDays,
              busyTimeoutMs: Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000)),
              foreground: Foreground.shared()
            } satisfies Setup
          ),
        foregroundMs: options.foregroundMs
      }),
      (host) => host.runner
    )
  )
