/**
 * Measuring keymeter through its library API: ingest through `Verifications.record` (validation
 * and all) and queries through `Analytics.getVerifications`, on any Storage layer; rate-limit
 * decisions appended to the `RatelimitStore` and read through `RatelimitAnalytics.getRatelimits`.
 */
import { Analytics, RememberedAnswers } from "@keymeter/core/Analytics"
import { Api } from "@keymeter/core/Api"
import * as Auth from "@keymeter/core/Auth"
import type { Datapoint } from "@keymeter/core/Datapoint"
import * as Keymeter from "@keymeter/core/Keymeter"
import { Namespace } from "@keymeter/core/Namespace"
import { RatelimitAnalytics } from "@keymeter/core/RatelimitAnalytics"
import type { RatelimitDatapoint, RatelimitQueryInput } from "@keymeter/core/RatelimitQuery"
import type { Storage } from "@keymeter/core/Storage"
import { Catalog, RatelimitStore, VerificationStore } from "@keymeter/core/Storage"
import type { VerificationQueryInput } from "@keymeter/core/VerificationQuery"
import { Verifications } from "@keymeter/core/Verifications"
import { Workspace } from "@keymeter/core/Workspace"
import * as SqlQuery from "@keymeter/sql/SqlQuery"
import type { Family } from "@keymeter/sql/Tables"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import type { Dataset } from "./Dataset.js"
import { apiId, APIS, input } from "./Dataset.js"
import * as Decisions from "./Decisions.js"

const WORKSPACE = Decisions.WORKSPACE
const principal = Auth.system(WORKSPACE)

export const BATCH = 10_000

/** A keymeter instance over `storage`, with the bench workspace, apis and rate-limit namespaces. */
export const open = async (storage: Layer.Layer<Storage, unknown>) => {
  // Every query is run, not given again from the answers Analytics remembers: the stores are measured.
  const runtime = ManagedRuntime.make(
    Keymeter.layer.pipe(Layer.provideMerge(storage), Layer.provide(Layer.succeed(RememberedAnswers, 0)))
  )
  await runtime.runPromise(Effect.gen(function*() {
    const catalog = yield* Catalog
    yield* catalog.putWorkspace(new Workspace({ id: WORKSPACE, name: "bench" }))
    for (let a = 0; a < APIS; a++) {
      yield* catalog.putApi(new Api({ id: apiId(a), workspaceId: WORKSPACE, name: apiId(a) }))
    }
    for (const ns of Decisions.NAMESPACES) {
      yield* catalog.putNamespace(new Namespace({ id: ns.id, workspaceId: WORKSPACE, name: ns.name }))
    }
  }))
  const verifications = await runtime.runPromise(Verifications)
  const analytics = await runtime.runPromise(Analytics)
  const decisions = await runtime.runPromise(RatelimitStore)
  const ratelimits = await runtime.runPromise(RatelimitAnalytics)
  const verificationStore = await runtime.runPromise(VerificationStore)
  return {
    /**
     * Records the data set in batches of 10,000, read a slice at a time; resolves with events per
     * second (building the event objects included, as a caller would).
     */
    ingest: async (data: { readonly size: number; readonly read: (from: number, to: number) => Dataset }) => {
      const started = performance.now()
      for (let from = 0; from < data.size; from += BATCH) {
        const slice = data.read(from, Math.min(data.size, from + BATCH))
        const batch = new Array(slice.size)
        for (let i = 0; i < slice.size; i++) batch[i] = input(slice, i)
        await runtime.runPromise(verifications.record(principal, batch))
      }
      return data.size / ((performance.now() - started) / 1000)
    },
    query: (query: VerificationQueryInput): Promise<ReadonlyArray<Datapoint>> =>
      runtime.runPromise(analytics.getVerifications(principal, query)),
    /**
     * Appends the decision data set straight into the `RatelimitStore` (as the limiter's recorder
     * does), in batches of 10,000, read a slice at a time; resolves with decisions per second
     * (building the decision objects included).
     */
    appendDecisions: async (data: ReturnType<typeof Decisions.open>) => {
      const started = performance.now()
      for (let from = 0; from < data.size; from += BATCH) {
        const slice = data.read(from, Math.min(data.size, from + BATCH))
        const batch = new Array(slice.size)
        for (let i = 0; i < slice.size; i++) batch[i] = Decisions.event(data.catalog, slice, i)
        await runtime.runPromise(decisions.append(batch))
      }
      return data.size / ((performance.now() - started) / 1000)
    },
    getRatelimits: (query: RatelimitQueryInput): Promise<ReadonlyArray<RatelimitDatapoint>> =>
      runtime.runPromise(ratelimits.getRatelimits(principal, query)),
    /**
     * A SQL analytics query over the bench workspace, as `SqlAnalytics` runs it (the stores'
     * scans, every api and namespace readable) with `now()` reading `now`: its answer, or why
     * not (InvalidQuery, QueryBudgetExceeded, StorageError).
     */
    sql: (family: Family, text: string, now: number, limits: SqlQuery.Limits = SqlQuery.DEFAULT_LIMITS) =>
      runtime.runPromise(Effect.either(SqlQuery.run(text, {
        family,
        workspaceId: WORKSPACE,
        within: undefined,
        // As SqlAnalytics reads the stores: scans, their rows' bytes, counts for the questions counts answer.
        ...SqlQuery.storesOf(verificationStore, decisions),
        limits,
        now
      }))),
    close: () => runtime.dispose()
  }
}

/**
 * Median and spread (min, max) of timed runs of `f`, in ms. It first runs until warm (at least 10
 * runs and 200 ms, so the JIT has settled), then times `runs` runs, by default as many as fit in
 * about a second (at least 7, at most 201).
 */
export const time = async <A>(f: () => Promise<A>, runs?: number) => {
  let result = await f()
  const warming = performance.now()
  let warm = 0
  while (warm < 10 || (performance.now() - warming < 200 && warm < 1000)) {
    result = await f()
    warm++
  }
  const each = (performance.now() - warming) / warm
  const n = runs ?? Math.max(7, Math.min(201, Math.ceil(1000 / each)))
  const samples: Array<number> = []
  for (let i = 0; i < n; i++) {
    const t = performance.now()
    await f()
    samples.push(performance.now() - t)
  }
  samples.sort((a, b) => a - b)
  return {
    result,
    median: samples[samples.length >> 1]!,
    min: samples[0]!,
    max: samples[samples.length - 1]!,
    runs: n,
    samples
  }
}
