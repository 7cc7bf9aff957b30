/**
 * Keeps the hot range (`HotIndex`) filled: its first load after open and its rebuilds run in the
 * background, each read under `exclusive`, the lock the writer commits under; every committed
 * batch is handed to it, and the rebuild of an api whose oldest days aged out starts after a
 * commit that makes one due.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { Verification } from "@keymeter/core/Verification"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { Dictionaries } from "./Dictionaries.js"
import type { HotIndex } from "./HotIndex.js"

/** Runs `effect` alone with the writer's commits (and with the other reads of a load). */
export type Exclusive = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

/** Starts the first load of `index` (when there is one) in the scope's background. */
export const make = (options: {
  readonly index: HotIndex | undefined
  readonly dictionaries: Dictionaries
  readonly exclusive: Exclusive
}) =>
  Effect.gen(function*() {
    const { dictionaries, exclusive, index } = options
    const sql = yield* SqlClient.SqlClient
    const scope = yield* Effect.scope
    /** Completed when no load of the hot index is under way; replaced when one starts. */
    let loadsDone = yield* Deferred.make<void>()
    yield* Deferred.succeed(loadsDone, undefined)

    /** Runs the hot index's pending loads in the background (the first one, or a rebuild). */
    const startLoad = (hot: HotIndex, what: string) =>
      Effect.gen(function*() {
        const done = loadsDone = yield* Deferred.make<void>()
        yield* hot.load(exclusive).pipe(
          Effect.provideService(SqlClient.SqlClient, sql),
          Effect.timed,
          Effect.flatMap(([took, events]) =>
            events === 0
              ? Effect.void
              : Effect.logInfo(
                `Loaded ${what}: ${events} events in memory in ${(Duration.toMillis(took) / 1000).toFixed(1)} s`
              )
          ),
          Effect.catchAll((error) =>
            Effect.logError(`Loading ${what} failed; SQLite answers what it would have`, error)
          ),
          Effect.ensuring(Deferred.succeed(done, undefined)),
          Effect.forkIn(scope)
        )
      })
    if (index !== undefined) yield* startLoad(index, "the hot range")

    // Days that age out of the hot range are dropped by rebuilding an api once it holds an eighth
    // more days than hotDays: the rebuild costs a load of the api, so not every day.
    const slackDays = Math.max(1, Math.ceil((index?.hotDays ?? 0) / 8))
    const rebuildDue = Effect.suspend(() => {
      const no = index?.startRebuild(slackDays)
      if (no === undefined) return Effect.void
      const partition = dictionaries.partitionsByNo[no]!
      return startLoad(
        index!,
        `the hot range of ${partition.workspaceId}/${partition.apiId} again, without its older days`
      )
    })

    /**
     * Hands a committed batch to the hot index (should that fail, the rollups answer from then on),
     * then starts a rebuild that has become due. Run under `exclusive`, with the commit.
     */
    const committed = (events: ReadonlyArray<Verification>) =>
      index === undefined ? Effect.void : Effect.try(() => index.append(events)).pipe(
        Effect.catchAll((error) =>
          Effect.logError("the in-memory hot index failed; queries are answered from SQLite", error)
        ),
        Effect.zipRight(rebuildDue)
      )

    return {
      committed,
      /** Completes once no load is under way. */
      loaded: Effect.suspend(() => Deferred.await(loadsDone)),
      /** Events held in memory. */
      events: Effect.sync(() => index?.events ?? 0)
    } as const
  })
