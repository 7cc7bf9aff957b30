/**
 * The RatelimitStore part of the storage port: what getRatelimits answers for the decisions
 * appended (checked against the naive reference over random decisions and queries, in order and
 * late), each override's hits, the decisions held in full, and the raw decisions a scan hands to
 * SQL analytics (checked against a naive filter over random decisions and scopes).
 */
import { expect, it } from "@effect/vitest"
import * as Auth from "@keymeter/core/Auth"
import type { RatelimitColumns, ScanScope } from "@keymeter/core/EventScan"
import { Namespace } from "@keymeter/core/Namespace"
import { RatelimitAnalytics } from "@keymeter/core/RatelimitAnalytics"
import type { RatelimitEvent } from "@keymeter/core/RatelimitEvent"
import { Sources } from "@keymeter/core/RatelimitEvent"
import { Catalog, RatelimitStore } from "@keymeter/core/Storage"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import type { Suite } from "./ConformanceFixture.js"
import { FROM, OTHER_WS, seedCatalog, TO, WS } from "./ConformanceFixture.js"
import * as RatelimitReference from "./RatelimitReference.js"

const NAMESPACES = ["rlns_1", "rlns_2"]
const identifiers = ["u1", "u2", "u3", "a,b", "é", "u1 "]
const overrideIds = ["rlor_1", "rlor_2", "rlor_3"]

/** The catalog's namespaces the decisions are made in: two of ws_a, one of ws_b. */
const seedNamespaces = Effect.gen(function*() {
  yield* seedCatalog
  const catalog = yield* Catalog
  yield* catalog.putNamespace(new Namespace({ id: "rlns_1", workspaceId: WS, name: "api" }))
  yield* catalog.putNamespace(new Namespace({ id: "rlns_2", workspaceId: WS, name: "email" }))
  yield* catalog.putNamespace(new Namespace({ id: "rlns_b", workspaceId: OTHER_WS, name: "api" }))
})

const decisionArb = FastCheck.record({
  time: FastCheck.oneof(
    FastCheck.integer({ min: FROM, max: TO }),
    FastCheck.integer({ min: FROM / 3600000, max: TO / 3600000 }).map((h) => h * 3600000)
  ),
  workspaceId: FastCheck.constantFrom(WS, WS, WS, OTHER_WS),
  namespaceId: FastCheck.constantFrom("rlns_1", "rlns_1", "rlns_2"),
  identifier: FastCheck.constantFrom(...identifiers),
  passed: FastCheck.boolean(),
  overrideId: FastCheck.option(FastCheck.constantFrom(...overrideIds), { nil: undefined }),
  limit: FastCheck.integer({ min: 1, max: 1_000_000 }),
  duration: FastCheck.integer({ min: 1_000, max: 86_400_000 }),
  remaining: FastCheck.integer({ min: 0, max: 1_000 }),
  cost: FastCheck.integer({ min: 0, max: 10 }),
  source: FastCheck.constantFrom(...Sources),
  // Milliseconds to the microsecond, as the limiter measures them.
  latency: FastCheck.integer({ min: 0, max: 50_000 }).map((micros) => micros / 1000),
  detail: FastCheck.option(
    FastCheck.record({ meta: FastCheck.dictionary(FastCheck.string(), FastCheck.string()) }).map((d) =>
      JSON.stringify(d)
    ),
    { nil: undefined }
  )
}).map((d): RatelimitEvent => ({ ...d, workspaceId: d.namespaceId === "rlns_b" ? OTHER_WS : d.workspaceId }))

const timeArb = FastCheck.integer({ min: FROM - 2 * 86400000, max: TO + 2 * 86400000 })

const queryArb = FastCheck.record({
  namespaceId: FastCheck.constantFrom("rlns_1", "rlns_1", "rlns_2"),
  identifier: FastCheck.option(FastCheck.subarray([...identifiers, "unknown"], { minLength: 1 }), { nil: undefined }),
  overrideId: FastCheck.option(FastCheck.constantFrom(...overrideIds, "rlor_none"), { nil: undefined }),
  window: FastCheck.tuple(FastCheck.option(timeArb, { nil: undefined }), timeArb),
  unit: FastCheck.constantFrom(undefined, "hour", "day", "month"),
  dims: FastCheck.subarray(["identifier", "override"]),
  orderBy: FastCheck.option(FastCheck.constantFrom("time", "total", "passed", "blocked"), { nil: undefined }),
  order: FastCheck.constantFrom(undefined, "asc" as const, "desc" as const),
  limit: FastCheck.option(FastCheck.integer({ min: 1, max: 12 }), { nil: undefined })
}, { requiredKeys: [] }).map((q) => {
  const [a, b] = q.window ?? [undefined, TO]
  const start = a === undefined ? undefined : Math.min(a, b)
  const end = a === undefined ? b : Math.max(a, b)
  const groupBy = [...(q.unit ? [q.unit] : []), ...(q.dims ?? [])]
  const orderBy = q.orderBy === "time" && !q.unit ? "total" : q.orderBy
  return {
    namespaceId: q.namespaceId ?? "rlns_1",
    ...(q.identifier ? { identifier: q.identifier } : {}),
    ...(q.overrideId ? { overrideId: q.overrideId } : {}),
    ...(start !== undefined ? { start } : {}),
    end,
    ...(groupBy.length > 0 ? { groupBy } : {}),
    ...(orderBy ? { orderBy } : {}),
    ...(q.order ? { order: q.order } : {}),
    ...(q.limit ? { limit: q.limit } : {})
  }
})

const HOUR = 3_600_000
const DAY = 24 * HOUR

/**
 * Decisions for the scan tests, at times back from now (the test adds now): within the last ten
 * days, since SQLite and ClickHouse hold decisions in full for their retention only (`decisionDays`,
 * `decisionRetentionDays`: 30 days by default), and scans never answer older ones. Those of the
 * other workspace have identifiers and overrides of their own, so none of its values can hide in a
 * scan of ws_a.
 */
const scanDecisionArb = FastCheck.tuple(
  decisionArb,
  FastCheck.oneof(
    FastCheck.integer({ min: 0, max: 10 * DAY }),
    FastCheck.integer({ min: 0, max: 240 }).map((hours) => hours * HOUR)
  )
).map(([d, back]): RatelimitEvent =>
  d.workspaceId === OTHER_WS
    ? {
      ...d,
      time: -back,
      identifier: `b:${d.identifier}`,
      overrideId: d.overrideId === undefined ? undefined : `${d.overrideId}_b`
    }
    : { ...d, time: -back }
)

/** An edge of a scan's window: a time back from now (any ms, or an hour), or a drawn decision's time exactly. */
const edgeArb = FastCheck.oneof(
  FastCheck.integer({ min: -11 * DAY, max: HOUR }).map((back) => ({ back })),
  FastCheck.integer({ min: -264, max: 1 }).map((hours) => ({ back: hours * HOUR })),
  FastCheck.nat().map((decision) => ({ decision }))
)

/** Scopes for the scan tests: their edges as `edgeArb`'s, in either order. */
const scanScopeArb = FastCheck.record({
  workspaceId: FastCheck.constantFrom(WS, WS, WS, OTHER_WS, "ws_none"),
  within: FastCheck.option(FastCheck.subarray(["rlns_1", "rlns_2", "rlns_none"]), { nil: undefined }),
  edges: FastCheck.tuple(edgeArb, edgeArb)
})

/** A scan's rows, decoded. */
const rowsOf = (batches: ReadonlyArray<RatelimitColumns>): Array<RatelimitReference.ScanRow> => {
  const rows: Array<RatelimitReference.ScanRow> = []
  for (const b of batches) {
    for (let i = 0; i < b.length; i++) {
      rows.push([
        b.time[i]!,
        b.namespaceId.values[b.namespaceId.codes[i]!]!,
        b.identifier.values[b.identifier.codes[i]!]!,
        b.passed[i]!,
        b.latency[i]!,
        b.overrideId.values[b.overrideId.codes[i]!]!
      ])
    }
  }
  return RatelimitReference.sortRows(rows)
}

/** Appends `decisions` straight into the adapter, in batches. */
const append = (decisions: ReadonlyArray<RatelimitEvent>, batch = 97) =>
  Effect.gen(function*() {
    const store = yield* RatelimitStore
    for (let i = 0; i < decisions.length; i += batch) yield* store.append(decisions.slice(i, i + batch))
  })

/** Declares the RatelimitStore's tests of `suite`, in the describe block it is called in. */
export const tests = (suite: Suite) => {
  const { numRuns, run, timeout } = suite

  it.effect(
    "answers random rate-limit queries exactly like the naive reference over raw decisions",
    () =>
      Effect.promise(() =>
        FastCheck.assert(
          FastCheck.asyncProperty(
            FastCheck.array(decisionArb, { maxLength: 300 }),
            FastCheck.array(queryArb, { minLength: 1, maxLength: 15 }),
            (decisions, queries) =>
              Effect.runPromise(run(Effect.gen(function*() {
                yield* seedNamespaces
                yield* append(decisions)
                const analytics = yield* RatelimitAnalytics
                for (const query of queries) {
                  const got = yield* analytics.getRatelimits(Auth.system(WS), query)
                  const want = RatelimitReference.answer(decisions, { ...query, workspaceId: WS })
                  expect(got, JSON.stringify(query)).toEqual(want)
                }
              })))
          ),
          { numRuns }
        )
      ),
    timeout
  )

  it.effect("counts late decisions (older than what is stored) as any other", () =>
    run(Effect.gen(function*() {
      yield* seedNamespaces
      const at = (hours: number, passed: boolean, identifier = "u1"): RatelimitEvent => ({
        time: FROM + hours * 3600000,
        workspaceId: WS,
        namespaceId: "rlns_1",
        identifier,
        passed,
        limit: 10,
        duration: 60_000,
        remaining: 0,
        cost: 1,
        overrideId: undefined,
        source: "limit",
        latency: 0.1,
        detail: undefined
      })
      const decisions = [at(48, true), at(49, false), at(1, false, "u2"), at(0, true), at(30, false)]
      for (const decision of decisions) yield* append([decision])
      const analytics = yield* RatelimitAnalytics
      for (const query of [{ groupBy: ["day"] }, { groupBy: ["identifier", "hour"] }, {}]) {
        const full = { namespaceId: "rlns_1", start: FROM, end: FROM + 3 * 86400000, ...query }
        expect(yield* analytics.getRatelimits(Auth.system(WS), full)).toEqual(
          RatelimitReference.answer(decisions, { ...full, workspaceId: WS })
        )
      }
    })))

  it.effect(
    "answers each override's hits and last decision, per workspace",
    () =>
      Effect.promise(() =>
        FastCheck.assert(
          FastCheck.asyncProperty(FastCheck.array(decisionArb, { maxLength: 200 }), (decisions) =>
            Effect.runPromise(run(Effect.gen(function*() {
              yield* seedNamespaces
              yield* append(decisions, 31)
              const store = yield* RatelimitStore
              for (const workspaceId of [WS, OTHER_WS]) {
                const want = new Map<string, { hits: number; lastHitAt: number }>()
                for (const d of decisions) {
                  if (d.workspaceId !== workspaceId || d.overrideId === undefined) continue
                  const seen = want.get(d.overrideId)
                  want.set(d.overrideId, {
                    hits: (seen?.hits ?? 0) + 1,
                    lastHitAt: Math.max(seen?.lastHitAt ?? -Infinity, d.time)
                  })
                }
                const got = yield* store.overrideHits(workspaceId, [...overrideIds, "rlor_none"])
                expect(
                  new Map([...got].sort(([a], [b]) =>
                    a < b ? -1 : 1
                  ))
                ).toEqual(
                  new Map([...want].sort(([a], [b]) => a < b ? -1 : 1))
                )
              }
            })))),
          { numRuns: Math.max(5, Math.floor(numRuns / 4)) }
        )
      ),
    timeout
  )

  it.effect("holds each decision in full, newest first, by namespace and identifier", () =>
    run(Effect.gen(function*() {
      yield* seedNamespaces
      // Distinct times, stored out of order: newest first is by time, not by arrival.
      const decisions = FastCheck.sample(decisionArb, { numRuns: 120, seed: 42 }).map((d, i) => ({
        ...d,
        time: FROM + ((i * 7_919) % 120) * 60_000
      }))
      yield* append(decisions, 17)
      const store = yield* RatelimitStore
      const newestFirst = (list: ReadonlyArray<RatelimitEvent>) => [...list].sort((a, b) => b.time - a.time)
      for (const namespaceId of NAMESPACES) {
        const mine = decisions.filter((d) => d.workspaceId === WS && d.namespaceId === namespaceId)
        expect(yield* store.decisions(WS, namespaceId, { limit: 10 })).toEqual(newestFirst(mine).slice(0, 10))
        expect(yield* store.decisions(WS, namespaceId, { limit: 1000, identifier: "u2" })).toEqual(
          newestFirst(mine.filter((d) => d.identifier === "u2"))
        )
      }
      expect(yield* store.decisions(OTHER_WS, "rlns_1", { limit: 1000 })).toEqual(
        newestFirst(decisions.filter((d) => d.workspaceId === OTHER_WS && d.namespaceId === "rlns_1"))
      )
    })))

  it.effect(
    "scans the raw decisions of a scope exactly like a naive filter, within the row budget",
    () =>
      Effect.promise(() =>
        FastCheck.assert(
          FastCheck.asyncProperty(
            FastCheck.array(scanDecisionArb, { maxLength: 300 }),
            FastCheck.integer({ min: 0, max: 300 }),
            FastCheck.array(scanScopeArb, { minLength: 1, maxLength: 12 }),
            (drawn, inOrder, scopes) =>
              Effect.runPromise(run(Effect.gen(function*() {
                const now = yield* Clock.currentTimeMillis
                const base = now - (now % HOUR)
                const decisions = drawn.map((d) => ({ ...d, time: base + d.time }))
                // Some appended in time order, then the rest as they were drawn: late ones among them.
                const sorted = decisions.slice(0, inOrder).sort((a, b) => a.time - b.time)
                yield* append([...sorted, ...decisions.slice(inOrder)])
                const store = yield* RatelimitStore
                expect(store.scan, "the store scans").toBeDefined()
                // The values each workspace's decisions hold: no other may show in its dictionaries.
                const valuesOf = (workspaceId: string) =>
                  new Set(
                    decisions.filter((d) => d.workspaceId === workspaceId).flatMap((d) => [
                      d.namespaceId,
                      d.identifier,
                      d.overrideId ?? ""
                    ])
                  )
                const timeOf = (edge: { readonly back: number } | { readonly decision: number }) =>
                  "back" in edge
                    ? base + edge.back
                    : decisions.length === 0
                    ? base
                    : decisions[edge.decision % decisions.length]!.time
                for (const { edges, ...drawnScope } of scopes) {
                  const [from, to] = edges.map(timeOf).sort((a, b) => a - b)
                  const scope = { ...drawnScope, from: from!, to: to! }
                  const want = RatelimitReference.scan(decisions, scope)
                  const label = JSON.stringify({ ...scope, base })
                  const got = yield* store.scan!({ ...scope, maxRows: want.length + 5 })
                  expect(rowsOf(got), label).toEqual(want)
                  const own = valuesOf(scope.workspaceId)
                  for (const batch of got) {
                    for (const dictionary of [batch.namespaceId, batch.identifier, batch.overrideId]) {
                      expect(dictionary.values.filter((v) => v !== "" && !own.has(v)), label).toEqual([])
                    }
                  }
                  // The budget: exactly the rows in scope passes, one fewer fails and names it.
                  expect(rowsOf(yield* store.scan!({ ...scope, maxRows: want.length })), label).toEqual(want)
                  if (want.length > 0) {
                    const error = yield* Effect.flip(store.scan!({ ...scope, maxRows: want.length - 1 }))
                    expect(error._tag, label).toBe("QueryTooLarge")
                    expect(error.message, label).toContain(String(want.length - 1))
                  }
                }
              })))
          ),
          { numRuns }
        )
      ),
    timeout
  )

  it.effect("scans the scope's workspace alone, over open ranges and budgets too, and no namespace it does not name", () =>
    run(Effect.gen(function*() {
      // The test clock reads 0: decisions of early 2025 are within any retention then.
      const now = Math.max(yield* Clock.currentTimeMillis, TO)
      const decisions = FastCheck.sample(scanDecisionArb, { numRuns: 100, seed: 7 }).map((d) => ({
        ...d,
        time: now + d.time
      }))
      yield* append(decisions)
      const store = yield* RatelimitStore
      const scope = (fields: Partial<ScanScope>): ScanScope => ({
        workspaceId: WS,
        within: undefined,
        from: now - 11 * DAY,
        to: now + DAY,
        maxRows: 1_000,
        ...fields
      })
      const mine = decisions.filter((d) => d.workspaceId === WS).length
      expect(mine).toBeGreaterThan(0)
      expect(rowsOf(yield* store.scan!(scope({})))).toHaveLength(mine)
      // Unbounded ranges and budgets.
      expect(rowsOf(yield* store.scan!(scope({ from: -Infinity, to: Infinity, maxRows: Infinity })))).toHaveLength(mine)
      expect(yield* store.scan!(scope({ within: [] }))).toEqual([])
      expect(yield* store.scan!(scope({ within: ["rlns_none"] }))).toEqual([])
      expect(yield* store.scan!(scope({ workspaceId: "ws_none" }))).toEqual([])
      expect(yield* store.scan!(scope({ from: now, to: now - DAY }))).toEqual([])
      // Its namespace ids are ws_a's too: the workspace alone tells them apart.
      const theirs = rowsOf(yield* store.scan!(scope({ workspaceId: OTHER_WS, within: NAMESPACES })))
      expect(theirs.length).toBe(decisions.length - mine)
      expect(theirs.every(([, , identifier]) => identifier.startsWith("b:"))).toBe(true)
    })))
}
