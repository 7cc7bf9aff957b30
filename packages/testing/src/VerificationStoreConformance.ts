/**
 * The VerificationStore half of the storage port: what it answers for the events appended to it
 * (checked against the naive reference over random events and queries, in order and late), the cap
 * on groups, the raw events it hands to SQL analytics (`scan`, against the reference's naive
 * filter) and the credits it sums beside its counts where it says it does (against sums of the raw
 * events). The receipts stored with a batch are `ReceiptConformance`'s.
 */
import { expect, it } from "@effect/vitest"
import type { AggregationQuery, AggregationResult } from "@keymeter/core/Aggregation"
import { makeQuery, OUTCOMES } from "@keymeter/core/Aggregation"
import * as Analytics from "@keymeter/core/Analytics"
import type { ScanScope, VerificationColumns } from "@keymeter/core/EventScan"
import * as Keymeter from "@keymeter/core/Keymeter"
import { VerificationStore } from "@keymeter/core/Storage"
import type { Identity } from "@keymeter/core/Verification"
import * as Verification from "@keymeter/core/Verification"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Layer from "effect/Layer"
import * as TestContext from "effect/TestContext"
import type { Suite } from "./ConformanceFixture.js"
import {
  ask,
  eventArb,
  FROM,
  keyIds,
  OTHER_WS,
  queryArb,
  seedCatalog,
  shapedQueryArb,
  store,
  TO,
  WS
} from "./ConformanceFixture.js"
import * as Reference from "./Reference.js"

/**
 * The rows of a scan's batches in the reference's terms and canonical order, after checking each
 * batch's shape: every column holds `length` rows, every code names a value.
 */
const scannedRows = (batches: ReadonlyArray<VerificationColumns>): Array<Reference.ScanRow> => {
  const rows: Array<Reference.ScanRow> = []
  for (const b of batches) {
    const n = b.length
    for (const column of [b.time, b.outcome, b.spentCredits, b.latency]) expect(column.length).toBeGreaterThanOrEqual(n)
    const decode = <A>(column: { readonly codes: ArrayLike<number>; readonly values: ReadonlyArray<A> }, i: number) => {
      expect(column.codes.length).toBeGreaterThanOrEqual(n)
      const value = column.values[column.codes[i]!]
      expect(value).toBeDefined()
      return value!
    }
    for (let i = 0; i < n; i++) {
      rows.push({
        time: b.time[i]!,
        apiId: decode(b.apiId, i),
        keyId: decode(b.keyId, i),
        identityId: decode(b.identityId, i),
        externalId: decode(b.externalId, i),
        outcome: Verification.Outcomes[b.outcome[i]!]!,
        tags: decode(b.tags, i),
        spentCredits: b.spentCredits[i]!,
        latency: b.latency[i]!,
        region: decode(b.region, i)
      })
    }
  }
  return Reference.canonical(rows)
}

const MS_WINDOW = FastCheck.integer({ min: FROM - 2 * 86_400_000, max: TO + 2 * 86_400_000 })

/** Scopes of the seed data: apis of either workspace (or none, or every one), windows to the ms. */
const scanScopeArb = FastCheck.record({
  workspaceId: FastCheck.constantFrom(WS, WS, WS, OTHER_WS),
  within: FastCheck.oneof(
    FastCheck.constant(undefined),
    FastCheck.subarray(["api_1", "api_2x", "api_2", "nope"]),
    FastCheck.constant([])
  ),
  window: FastCheck.oneof(
    // Anywhere, to the ms.
    FastCheck.tuple(MS_WINDOW, MS_WINDOW),
    // Short, inside an hour or across one edge.
    FastCheck.tuple(MS_WINDOW, FastCheck.integer({ min: 0, max: 2 * 3_600_000 })).map(([a, n]) => [a, a + n] as const),
    // Whole hours.
    FastCheck.tuple(MS_WINDOW, MS_WINDOW).map(([a, b]) => [a - a % 3_600_000, b - b % 3_600_000] as const)
  )
}).map(({ window: [a, b], within, workspaceId }): ScanScope => ({
  workspaceId,
  within,
  from: Math.min(a, b),
  to: Math.max(a, b),
  maxRows: 100_000
}))

/** Queries as SQL analytics ask for counts with credits: whole hours, any grouping, a key filter or none. */
const creditsQueryArb = FastCheck.record({
  hours: FastCheck.tuple(
    FastCheck.integer({ min: FROM / 3_600_000 - 24, max: TO / 3_600_000 + 24 }),
    FastCheck.integer({ min: 0, max: 40 * 24 })
  ),
  timeUnit: FastCheck.constantFrom(undefined, "hour" as const, "day" as const),
  groupByKey: FastCheck.boolean(),
  groupByIdentity: FastCheck.boolean(),
  groupByTag: FastCheck.constantFrom(undefined, "tags" as const),
  keyIds: FastCheck.oneof(FastCheck.constant([]), FastCheck.subarray(keyIds, { minLength: 1, maxLength: 2 }))
}).map(({ hours: [first, span], ...shape }): AggregationQuery =>
  makeQuery({
    workspaceId: WS,
    apiId: "api_1",
    start: first * 3_600_000,
    end: (first + span) * 3_600_000,
    maxRows: 100_000,
    ...shape
  })
)

const HOUR_MS = 3_600_000
const DAY_MS = 86_400_000

/** A row's group as text: its bucket, key, identity and tag set, as the result has them. */
const groupText = (time: number | undefined, keyId?: string, identity?: Identity, tags?: ReadonlyArray<string>) =>
  JSON.stringify([time ?? null, keyId ?? null, identity?.id ?? null, identity?.externalId ?? null, tags ?? null])

/** A result's credits by group (rows counting no event left out), nine per group. */
const creditsByGroup = (result: AggregationResult): Record<string, Array<number>> => {
  expect(result.credits, "credits beside the counts").toBeDefined()
  const out: Record<string, Array<number>> = {}
  for (let row = 0; row < result.size; row++) {
    const at = row * OUTCOMES
    if (!result.counts.subarray(at, at + OUTCOMES).some((count) => count > 0)) continue
    const group = groupText(result.time?.[row], result.keyId?.[row], result.identity?.[row], result.tags?.[row])
    out[group] = Array.from(result.credits!.subarray(at, at + OUTCOMES))
  }
  return out
}

/** What `creditsByGroup` should read, summed from the raw events. */
const expectedCredits = (
  events: ReadonlyArray<Reference.RawEvent>,
  query: AggregationQuery
): Record<string, Array<number>> => {
  const out: Record<string, Array<number>> = {}
  for (const event of events) {
    if (event.workspaceId !== query.workspaceId || event.apiId !== query.apiId) continue
    if (event.time < query.start! || event.time >= query.end + HOUR_MS) continue
    if (query.keyIds.length > 0 && !query.keyIds.includes(event.keyId)) continue
    if (query.groupByIdentity && event.identity === undefined) continue
    const unit = query.timeUnit === "hour" ? HOUR_MS : query.timeUnit === "day" ? DAY_MS : undefined
    const group = groupText(
      unit === undefined ? undefined : event.time - event.time % unit,
      query.groupByKey ? event.keyId : undefined,
      query.groupByIdentity ? event.identity : undefined,
      query.groupByTag === undefined ? undefined : [...new Set(event.tags)].sort()
    )
    const sums = out[group] ??= new Array<number>(OUTCOMES).fill(0)
    sums[Verification.Outcomes.indexOf(event.outcome as Verification.Outcome)]! += event.spentCredits ?? 0
  }
  return out
}

/** Declares the VerificationStore's tests of `suite`, in the describe block it is called in. */
export const tests = (suite: Suite) => {
  const { numRuns, run, storage, timeout } = suite

  it.effect(
    "answers random queries exactly like the naive reference over raw events",
    () =>
      Effect.promise(() =>
        FastCheck.assert(
          FastCheck.asyncProperty(
            FastCheck.array(eventArb, { maxLength: 300 }),
            FastCheck.array(queryArb, { minLength: 1, maxLength: 15 }),
            (events, queries) =>
              Effect.runPromise(run(Effect.gen(function*() {
                yield* seedCatalog
                yield* store(events)
                for (const query of queries) {
                  const got = yield* ask(query)
                  const want = Reference.answer(events, { ...query, workspaceId: WS })
                  expect(got, JSON.stringify(query)).toEqual(want)
                }
              })))
          ),
          { numRuns }
        )
      ),
    timeout
  )

  it.effect(
    "answers the shapes of the fast paths (top N, per tag, key series) like the reference",
    () =>
      Effect.promise(() =>
        FastCheck.assert(
          FastCheck.asyncProperty(
            FastCheck.array(eventArb, { minLength: 20, maxLength: 400 }),
            FastCheck.array(shapedQueryArb, { minLength: 1, maxLength: 12 }),
            (events, queries) =>
              Effect.runPromise(run(Effect.gen(function*() {
                yield* seedCatalog
                // In time order, then a few late ones, as real traffic arrives.
                const sorted = [...events].sort((a, b) => a.time - b.time)
                yield* store(sorted.slice(0, sorted.length - 10))
                yield* store(sorted.slice(sorted.length - 10).reverse(), 3)
                for (const query of queries) {
                  expect(yield* ask(query), JSON.stringify(query)).toEqual(
                    Reference.answer(events, { ...query, workspaceId: WS } as never)
                  )
                }
              })))
          ),
          { numRuns }
        )
      ),
    timeout
  )

  it.effect("keeps answering exactly after many late, shuffled events", () =>
    run(Effect.gen(function*() {
      yield* seedCatalog
      const events = FastCheck.sample(eventArb, { numRuns: 6000, seed: 42 })
      // First the newest third in order, then the rest shuffled: most of it arrives late.
      const sorted = [...events].sort((a, b) => a.time - b.time)
      const recent = sorted.slice(4000)
      const older = FastCheck.sample(FastCheck.shuffledSubarray(sorted.slice(0, 4000), { minLength: 4000 }), {
        numRuns: 1,
        seed: 7
      })[0]!
      yield* store(recent, 500)
      yield* store(older, 500)
      const queries = FastCheck.sample(queryArb, { numRuns: 150, seed: 3 })
      for (const query of queries) {
        expect(yield* ask(query), JSON.stringify(query)).toEqual(
          Reference.answer([...recent, ...older], { ...query, workspaceId: WS })
        )
      }
    })))

  it.effect(
    "scans exactly the events of a scope, as the reference's naive filter, in order and late",
    () =>
      Effect.promise(() =>
        FastCheck.assert(
          FastCheck.asyncProperty(
            FastCheck.array(eventArb, { maxLength: 300 }),
            FastCheck.array(scanScopeArb, { minLength: 1, maxLength: 12 }),
            (events, scopes) =>
              Effect.runPromise(
                run(Effect.gen(function*() {
                  yield* seedCatalog
                  const verifications = yield* VerificationStore
                  expect(verifications.scan, "the store scans raw events").toBeTypeOf("function")
                  // In time order, then the oldest tenth late.
                  const sorted = [...events].sort((a, b) => a.time - b.time)
                  const late = Math.floor(sorted.length / 10)
                  yield* store(sorted.slice(late))
                  yield* store(sorted.slice(0, late).reverse(), 7)
                  // Windows that start or end at an event's very time, too.
                  const exact = sorted.length === 0 ? [] : [{
                    workspaceId: WS,
                    within: undefined,
                    from: sorted[0]!.time,
                    to: sorted[sorted.length - 1]!.time,
                    maxRows: 100_000
                  }]
                  for (const scope of [...scopes, ...exact]) {
                    expect(scannedRows(yield* verifications.scan!(scope)), JSON.stringify(scope)).toEqual(
                      Reference.scan(events, scope)
                    )
                  }
                  // On the test clock, which reads 0: a store that keeps events in full for a number
                  // of days back from now (SQLite) keeps all of these.
                })).pipe(Effect.provide(TestContext.TestContext))
              )
          ),
          { numRuns: Math.max(5, Math.ceil(numRuns / 3)) }
        )
      ),
    timeout
  )

  it.effect(
    "sums the spent credits of each counter's events where it says it does (sumsCredits)",
    () =>
      Effect.promise(() =>
        FastCheck.assert(
          FastCheck.asyncProperty(
            FastCheck.array(eventArb, { maxLength: 300 }),
            FastCheck.array(creditsQueryArb, { minLength: 1, maxLength: 8 }),
            (events, queries) =>
              Effect.runPromise(
                run(Effect.gen(function*() {
                  yield* seedCatalog
                  const verifications = yield* VerificationStore
                  if (verifications.sumsCredits !== true) return
                  const sorted = [...events].sort((a, b) => a.time - b.time)
                  yield* store(sorted.slice(5))
                  yield* store(sorted.slice(0, 5).reverse(), 2)
                  for (const query of queries) {
                    const result = yield* verifications.aggregate({ ...query, sumCredits: true })
                    expect(creditsByGroup(result), JSON.stringify(query)).toEqual(expectedCredits(events, query))
                  }
                })).pipe(Effect.provide(TestContext.TestContext))
              )
          ),
          { numRuns: Math.max(5, Math.ceil(numRuns / 3)) }
        )
      ),
    timeout
  )

  it.effect("fails a scan with QueryTooLarge naming the row budget past maxRows; another workspace's rows never count", () =>
    run(Effect.gen(function*() {
      yield* seedCatalog
      const verifications = yield* VerificationStore
      const at = (i: number, workspaceId: string) => ({
        time: FROM + i * 1_000,
        workspaceId,
        apiId: "api_1",
        keyId: "k1",
        outcome: "valid",
        tags: [],
        spentCredits: i,
        latency: i / 7,
        region: "eu"
      })
      // 30 rows of WS, and 50 of OTHER_WS under the same api id and times.
      const ours = Array.from({ length: 30 }, (_, i) => at(i, WS))
      const theirs = Array.from({ length: 50 }, (_, i) => at(i, OTHER_WS))
      yield* store([...ours, ...theirs], 13)
      const scope: ScanScope = { workspaceId: WS, within: ["api_1"], from: FROM, to: TO, maxRows: 30 }
      expect(scannedRows(yield* verifications.scan!(scope))).toEqual(Reference.scan(ours, scope))
      for (const maxRows of [29, 0]) {
        const error = yield* Effect.flip(verifications.scan!({ ...scope, maxRows }))
        expect(error._tag).toBe("QueryTooLarge")
        expect(error.message).toContain(`more than ${maxRows} rows`)
      }
      // Only the rows of the window count against the budget.
      const some = { ...scope, from: FROM + 10_000, to: FROM + 15_000, maxRows: 5 }
      expect(scannedRows(yield* verifications.scan!(some))).toEqual(Reference.scan(ours, some))
      expect(yield* verifications.scan!({ ...scope, within: [] })).toEqual([])
      expect(scannedRows(yield* verifications.scan!({ ...scope, within: ["api_b"], maxRows: 0 }))).toEqual([])
    })))

  it.effect("fails with QueryTooLarge when groups exceed the cap, before limit", () =>
    Effect.gen(function*() {
      yield* seedCatalog
      yield* store(keyIds.map((keyId, i) => ({
        time: FROM + i * 3600000,
        workspaceId: WS,
        apiId: "api_1",
        keyId,
        outcome: "valid",
        tags: []
      })))
      const result = yield* Effect.either(ask({ apiId: "api_1", groupBy: ["key"], limit: 1, end: TO }))
      expect(Either.isLeft(result) && result.left._tag).toBe("QueryTooLarge")
      const fits = yield* ask({ apiId: "api_1", groupBy: ["key"], limit: 1, end: TO, keyId: ["k1", "k2"] })
      expect(fits).toHaveLength(1)
    }).pipe(
      Effect.provide(Keymeter.layer.pipe(
        Layer.provideMerge(storage),
        Layer.provide(Layer.succeed(Analytics.MaxDatapoints, 3))
      ))
    ) as Effect.Effect<void>)
}
