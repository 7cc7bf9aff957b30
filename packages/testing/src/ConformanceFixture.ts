/**
 * What the parts of the storage conformance suite share: the workspaces, apis and keys of the seed
 * data, the events and queries the property tests draw, the helpers that store events and ask for
 * them, and the suite itself: the storage under test with core's services (`Keymeter.layer`) over it.
 */
import * as Analytics from "@keymeter/core/Analytics"
import { Api } from "@keymeter/core/Api"
import * as Auth from "@keymeter/core/Auth"
import * as Keymeter from "@keymeter/core/Keymeter"
import type { Storage } from "@keymeter/core/Storage"
import { Catalog, VerificationStore } from "@keymeter/core/Storage"
import * as Verification from "@keymeter/core/Verification"
import { Workspace } from "@keymeter/core/Workspace"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as Layer from "effect/Layer"
import type * as Reference from "./Reference.js"

const at = (iso: string) => Date.parse(iso)
export const FROM = at("2024-12-27T00:00:00Z")
export const TO = at("2025-02-03T00:00:00Z")
export const WS = "ws_a"
export const OTHER_WS = "ws_b"

export const keyIds = ["k1", "k2", "k3", "a;b", "é", "k1 "]
const identities = [
  { id: "i1", externalId: "e1" },
  { id: "i2", externalId: "e2" },
  { id: "i3", externalId: "e1" },
  { id: "i1", externalId: "e9" }
]
const tagPool = ["a", "b", "c", "d,e", "a"]

export const eventArb = FastCheck.record({
  time: FastCheck.oneof(
    FastCheck.integer({ min: FROM, max: TO }),
    FastCheck.integer({ min: FROM / 3600000, max: TO / 3600000 }).map((h) => h * 3600000)
  ),
  workspaceId: FastCheck.constantFrom(WS, WS, WS, OTHER_WS),
  apiId: FastCheck.constantFrom("api_1", "api_1", "api_1", "api_2x"),
  keyId: FastCheck.constantFrom(...keyIds),
  identity: FastCheck.option(FastCheck.constantFrom(...identities), { nil: undefined }),
  outcome: FastCheck.constantFrom(...Verification.Outcomes),
  tags: FastCheck.subarray(tagPool),
  // What each verification spent, took and where it ran: often not given (0, 0, "").
  spentCredits: FastCheck.option(
    FastCheck.oneof(FastCheck.integer({ min: 0, max: 10 }), FastCheck.constant(Verification.MAX_SPENT_CREDITS)),
    { nil: undefined }
  ),
  latency: FastCheck.option(
    FastCheck.oneof(
      FastCheck.integer({ min: 0, max: 500_000 }).map((us) => us / 1000),
      FastCheck.double({ min: 0, max: Verification.MAX_LATENCY, noNaN: true })
    ),
    { nil: undefined }
  ),
  region: FastCheck.option(FastCheck.constantFrom("", "eu-west-1", "us-east-1", "a'b\\c", "é"), { nil: undefined })
})

const timeArb = FastCheck.integer({ min: FROM - 2 * 86400000, max: TO + 2 * 86400000 })

export const queryArb = FastCheck.record({
  apiId: FastCheck.constantFrom("api_1", "api_1", "api_1", "api_2"),
  keyId: FastCheck.option(FastCheck.subarray([...keyIds, "unknown"], { minLength: 1 }), { nil: undefined }),
  tag: FastCheck.option(FastCheck.subarray(["a", "b", "c", "d,e", "zz"], { minLength: 1, maxLength: 2 }), {
    nil: undefined
  }),
  externalId: FastCheck.option(FastCheck.constantFrom("e1", "e2", "e9", "nope"), { nil: undefined }),
  window: FastCheck.tuple(FastCheck.option(timeArb, { nil: undefined }), timeArb),
  unit: FastCheck.constantFrom(undefined, "hour", "day", "month"),
  dims: FastCheck.subarray(["key", "identity"]),
  tagging: FastCheck.constantFrom(undefined, "tag", "tags"),
  orderBy: FastCheck.option(FastCheck.constantFrom("time", "total", "valid", "notFound", "expired"), {
    nil: undefined
  }),
  order: FastCheck.constantFrom(undefined, "asc" as const, "desc" as const),
  limit: FastCheck.option(FastCheck.integer({ min: 1, max: 12 }), { nil: undefined })
}, { requiredKeys: [] }).map((q) => {
  const [a, b] = q.window ?? [undefined, TO]
  const start = a === undefined ? undefined : Math.min(a, b)
  const end = a === undefined ? b : Math.max(a, b)
  const groupBy = [...(q.unit ? [q.unit] : []), ...(q.dims ?? []), ...(q.tagging ? [q.tagging] : [])]
  const orderBy = q.orderBy === "time" && !q.unit ? "total" : q.orderBy
  return {
    apiId: q.apiId ?? "api_1",
    ...(q.keyId ? { keyId: q.keyId } : {}),
    ...(q.tag ? { tag: q.tag } : {}),
    ...(q.externalId ? { externalId: q.externalId } : {}),
    ...(start !== undefined ? { start } : {}),
    end,
    ...(groupBy.length > 0 ? { groupBy } : {}),
    ...(orderBy ? { orderBy } : {}),
    ...(q.order ? { order: q.order } : {}),
    ...(q.limit ? { limit: q.limit } : {})
  }
})

/** Queries of the shapes the fast paths serve: top N, per tag, key-filtered and plain series. */
export const shapedQueryArb = FastCheck.tuple(
  FastCheck.oneof(
    FastCheck.record({
      groupBy: FastCheck.constant(["key"]),
      orderBy: FastCheck.constantFrom("total", "valid", "notFound"),
      order: FastCheck.constantFrom("asc" as const, "desc" as const),
      limit: FastCheck.integer({ min: 1, max: 4 }),
      keyId: FastCheck.option(FastCheck.subarray(keyIds, { minLength: 1 }), { nil: undefined })
    }, { requiredKeys: ["groupBy", "orderBy", "order", "limit"] }),
    FastCheck.record({
      groupBy: FastCheck.constant(["identity"]),
      orderBy: FastCheck.constantFrom("total", "valid", "expired"),
      order: FastCheck.constantFrom("asc" as const, "desc" as const),
      limit: FastCheck.integer({ min: 1, max: 3 })
    }),
    FastCheck.record({ groupBy: FastCheck.constantFrom(["tag"], ["tag", "day"], ["tag", "month"], ["tags"]) }),
    FastCheck.record({
      groupBy: FastCheck.constantFrom(["hour"], ["day"], ["month"], undefined),
      keyId: FastCheck.option(FastCheck.subarray(keyIds, { minLength: 1, maxLength: 2 }), { nil: undefined })
    })
  ),
  // Windows that start and end inside days.
  FastCheck.integer({ min: FROM - 86400000, max: TO }),
  FastCheck.integer({ min: 1, max: 40 * 24 })
).map(([shape, start, hours]) => {
  const out: Record<string, unknown> = { apiId: "api_1", start, end: start + hours * 3600000 }
  for (const [k, v] of Object.entries(shape)) if (v !== undefined) out[k] = v
  return out
})

/** Catalog entries the property test needs: two apis in ws_a, one in ws_b. */
export const seedCatalog = Effect.gen(function*() {
  const catalog = yield* Catalog
  yield* catalog.putWorkspace(new Workspace({ id: WS, name: "A" }))
  yield* catalog.putWorkspace(new Workspace({ id: OTHER_WS, name: "B" }))
  yield* catalog.putApi(new Api({ id: "api_1", workspaceId: WS, name: "one" }))
  yield* catalog.putApi(new Api({ id: "api_2", workspaceId: WS, name: "two" }))
  yield* catalog.putApi(new Api({ id: "api_b", workspaceId: OTHER_WS, name: "b" }))
})

/**
 * Stores `events` in batches straight into the adapter, as recorded when the clock reads `now`
 * (validated like any record call, tags normalised).
 */
export const store = (events: ReadonlyArray<Reference.RawEvent>, batch = 97, now = TO + 86400000) =>
  Effect.gen(function*() {
    const verifications = yield* VerificationStore
    for (let i = 0; i < events.length; i += batch) {
      const slice = events.slice(i, i + batch)
      const decoded: Array<Verification.Verification> = []
      for (const e of slice) {
        const { workspaceId, ...input } = e
        const [event] = yield* Verification.decodeBatch([{ ...input, tags: [...e.tags] }], {
          workspaceId,
          now
        })
        decoded.push(event!)
      }
      yield* verifications.append(decoded)
    }
  })

export const ask = (query: object) =>
  Effect.gen(function*() {
    const analytics = yield* Analytics.Analytics
    return yield* analytics.getVerifications(Auth.system(WS), query)
  })

/** How a suite runs: `skip` names why it cannot (the suite is skipped); `numRuns` caps property runs. */
export interface ConformanceOptions {
  readonly skip?: string | undefined
  readonly numRuns?: number | undefined
  /**
   * Time each property test may take, in ms (default 30 s): a store behind a server of its own
   * needs more on a loaded machine.
   */
  readonly timeoutMs?: number | undefined
}

/** One run of the suite, as each of its parts gets it. */
export interface Suite {
  /** The storage under test: each test builds a fresh one. */
  readonly storage: Layer.Layer<Storage, unknown>
  /** Runs of each property test. */
  readonly numRuns: number
  /** Time each property test may take, in ms. */
  readonly timeout: number
  /** Runs a test on a fresh storage with core's services over it. */
  readonly run: <A, E>(effect: Effect.Effect<A, E, any>) => Effect.Effect<A, E>
}

/**
 * The suite on `storage`: each property test runs `numRuns` times (default 60) and may take
 * `timeoutMs` (default 30 s).
 */
export const makeSuite = (
  storage: Layer.Layer<Storage, unknown>,
  options: ConformanceOptions = {}
): Suite => {
  const numRuns = options.numRuns ?? 60
  const timeout = options.timeoutMs ?? 30_000
  const services = Keymeter.layer.pipe(Layer.provideMerge(storage))
  const run = <A, E>(effect: Effect.Effect<A, E, any>) => effect.pipe(Effect.provide(services)) as Effect.Effect<A, E>
  return { storage, numRuns, timeout, run }
}
