/**
 * The behaviour every Storage adapter must share, as one suite: `conformance(name, layer)` runs it
 * against a fresh storage per test. Its data and helpers are exported for adapter-specific suites.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Analytics from "@keymeter/core/Analytics"
import { Api } from "@keymeter/core/Api"
import * as Apis from "@keymeter/core/Apis"
import * as Auth from "@keymeter/core/Auth"
import * as Decision from "@keymeter/core/Decision"
import type * as Idempotency from "@keymeter/core/Idempotency"
import { Identity, Key } from "@keymeter/core/Key"
import * as Keymeter from "@keymeter/core/Keymeter"
import { Namespace } from "@keymeter/core/Namespace"
import * as Overrides from "@keymeter/core/Overrides"
import type { Principal } from "@keymeter/core/Permission"
import { hash as RootKeyHash, RootKey } from "@keymeter/core/RootKey"
import type { Catalog as CatalogTag } from "@keymeter/core/Storage"
import { Catalog, VerificationStore } from "@keymeter/core/Storage"
import * as Verification from "@keymeter/core/Verification"
import * as Verifications from "@keymeter/core/Verifications"
import { Workspace } from "@keymeter/core/Workspace"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Reference from "./Reference.js"

const at = (iso: string) => Date.parse(iso)
export const FROM = at("2024-12-27T00:00:00Z")
export const TO = at("2025-02-03T00:00:00Z")
export const WS = "ws_a"
const OTHER_WS = "ws_b"

const keyIds = ["k1", "k2", "k3", "a,b", "é", "k1 "]
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
  tags: FastCheck.subarray(tagPool)
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
const shapedQueryArb = FastCheck.tuple(
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

/** Stores raw events (validated like any record call, tags normalised) straight into the adapter. */
/** Stores `events` in batches, as recorded when the clock reads `now`. */
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

export const conformance = (
  name: string,
  storage: Layer.Layer<VerificationStore | CatalogTag, unknown>,
  options: ConformanceOptions = {}
) => {
  const numRuns = options.numRuns ?? 60
  const timeout = options.timeoutMs ?? 30_000
  const services = Keymeter.layer.pipe(Layer.provideMerge(storage))
  const run = <A, E>(effect: Effect.Effect<A, E, any>) => effect.pipe(Effect.provide(services)) as Effect.Effect<A, E>

  describe.skipIf(options.skip !== undefined)(`Storage conformance: ${name}`, () => {
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

    it.effect("upserts an override: same id and createdAt, new values and updatedAt", () =>
      run(Effect.gen(function*() {
        const catalog = yield* Catalog
        yield* catalog.putWorkspace(new Workspace({ id: WS, name: "A" }))
        yield* catalog.putNamespace(new Namespace({ id: "rlns_1", workspaceId: WS, name: "email" }))
        const write = {
          id: "rlor_first",
          namespaceId: "rlns_1",
          identifier: "user_*",
          limit: 10,
          duration: 60000,
          async: false,
          now: 1000
        }
        const first = yield* catalog.upsertOverride(write)
        const second = yield* catalog.upsertOverride({ ...write, id: "rlor_second", limit: 0, async: true, now: 2000 })
        expect(first.id).toBe("rlor_first")
        expect(second).toMatchObject({ id: "rlor_first", limit: 0, async: true, createdAt: 1000, updatedAt: 2000 })
        const other = yield* catalog.upsertOverride({ ...write, id: "rlor_other", identifier: "user_1" })
        expect(other.id).toBe("rlor_other")
      })))

    it.effect("sets overrides through the service: one id per target, namespaces created by name", () =>
      run(Effect.gen(function*() {
        const catalog = yield* Catalog
        yield* catalog.putWorkspace(new Workspace({ id: WS, name: "A" }))
        const overrides = yield* Overrides.Overrides
        const principal = Auth.system(WS)
        const input = { namespaceName: "api:v1:calls", identifier: "user@example.com", limit: 5, duration: 1000 }
        const results = yield* Effect.all(
          Array.from({ length: 20 }, (_, i) => overrides.set(principal, { ...input, limit: i })),
          { concurrency: "unbounded" }
        )
        expect(new Set(results.map((o) => o.id)).size).toBe(1)
        expect(new Set(results.map((o) => o.namespaceId)).size).toBe(1)
        const namespace = yield* catalog.findNamespaceByName(WS, "api:v1:calls")
        expect(Option.map(namespace, (n) => n.id)).toEqual(Option.some(results[0]!.namespaceId))
      })))

    it.effect("gets, deletes and re-sets overrides: a re-set after a delete is a fresh override", () =>
      run(Effect.gen(function*() {
        const catalog = yield* Catalog
        yield* catalog.putWorkspace(new Workspace({ id: WS, name: "A" }))
        const overrides = yield* Overrides.Overrides
        const principal = Auth.system(WS)
        const target = { namespaceName: "email", identifier: "user_1" }
        const first = yield* overrides.set(principal, { ...target, limit: 5, duration: 1000 })
        expect(yield* overrides.get(principal, target)).toMatchObject({ id: first.id, limit: 5 })
        expect(yield* overrides.delete(principal, target)).toEqual({})
        const gone = yield* Effect.either(overrides.get(principal, target))
        expect(Either.isLeft(gone) && gone.left._tag).toBe("NotFound")
        const again = yield* Effect.either(overrides.delete(principal, target))
        expect(Either.isLeft(again) && again.left._tag).toBe("NotFound")
        const fresh = yield* overrides.set(principal, { ...target, limit: 6, duration: 1000 })
        expect(fresh.id).not.toBe(first.id)
        expect((yield* overrides.get(principal, target)).id).toBe(fresh.id)
      })))

    it.effect("resolves across namespace patterns with resolve=true", () =>
      run(Effect.gen(function*() {
        const catalog = yield* Catalog
        yield* catalog.putWorkspace(new Workspace({ id: WS, name: "A" }))
        const overrides = yield* Overrides.Overrides
        const principal = Auth.system(WS)
        yield* overrides.set(principal, { namespaceName: "api:*", identifier: "user_*", limit: 1, duration: 1000 })
        const narrow = yield* overrides.set(principal, {
          namespaceName: "api:*",
          identifier: "user_4*",
          limit: 2,
          duration: 1000
        })
        yield* overrides.set(principal, { namespaceName: "api:v1", identifier: "other", limit: 3, duration: 1000 })
        const resolved = yield* overrides.get(principal, {
          namespaceName: "api:v1",
          identifier: "user_42",
          resolve: true
        })
        expect(resolved.id).toBe(narrow.id)
        const literal = yield* Effect.either(
          overrides.get(principal, { namespaceName: "api:v1", identifier: "user_42" })
        )
        expect(Either.isLeft(literal)).toBe(true)
      })))

    it.effect("pages overrides without repeating or skipping any, while others are added and deleted", () =>
      run(Effect.gen(function*() {
        const catalog = yield* Catalog
        yield* catalog.putWorkspace(new Workspace({ id: WS, name: "A" }))
        const overrides = yield* Overrides.Overrides
        const principal = Auth.system(WS)
        const set = (identifier: string) =>
          overrides.set(principal, { namespaceName: "pages", identifier, limit: 1, duration: 1000 })
        const initial: Array<string> = []
        for (let i = 0; i < 25; i++) initial.push((yield* set(`user_${String(i).padStart(2, "0")}`)).id)
        const page = (cursor?: string) =>
          overrides.list(principal, { namespaceName: "pages", limit: 10, ...(cursor !== undefined ? { cursor } : {}) })
        const first = yield* page()
        expect(first.total).toBe(25)
        expect(first.overrides.map((o) => o.id)).toEqual(initial.slice(0, 10))
        // Between pages: one seen is deleted, one not yet seen is deleted, three are added.
        yield* overrides.delete(principal, { namespaceName: "pages", identifier: "user_03" })
        yield* overrides.delete(principal, { namespaceName: "pages", identifier: "user_21" })
        for (const identifier of ["new_a", "new_b", "new_c"]) yield* set(identifier)
        const second = yield* page(first.cursor)
        const third = yield* page(second.cursor)
        expect(third.cursor).toBeUndefined()
        expect(third.total).toBe(26)
        const seen = [...first.overrides, ...second.overrides, ...third.overrides].map((o) => o.identifier)
        expect(new Set(seen).size).toBe(seen.length)
        for (let i = 0; i < 25; i++) {
          const identifier = `user_${String(i).padStart(2, "0")}`
          if (identifier !== "user_21") expect(seen).toContain(identifier)
        }
        expect(seen).not.toContain("user_21")
        expect(seen.filter((id) => id.startsWith("new_"))).toEqual(["new_a", "new_b", "new_c"])
        const bad = yield* Effect.either(
          overrides.list(principal, { namespaceName: "pages", cursor: "bm90LWEtY3Vyc29y" })
        )
        expect(Either.isLeft(bad) && bad.left.message).toMatch(/^cursor: is not a cursor this API returned/)
      })))

    it.effect("stores a receipt with its batch, finds it until it expires, and refuses a second live one", () =>
      run(Effect.gen(function*() {
        yield* seedCatalog
        const verifications = yield* VerificationStore
        const T = TO + 3_600_000
        const events = (n: number) =>
          Verification.decodeBatch(
            Array.from({ length: n }, () => ({ apiId: "api_1", keyId: "k_receipt", outcome: "valid", time: FROM })),
            { workspaceId: WS, now: T }
          ).pipe(Either.getOrThrow)
        const receipt = (key: string, createdAt: number, fingerprint: string): Idempotency.Receipt => ({
          workspaceId: WS,
          key,
          operation: "recordVerifications",
          fingerprint,
          response: JSON.stringify({ recorded: 3 }),
          createdAt,
          expiresAt: createdAt + 60_000
        })
        const total = Effect.map(ask({ apiId: "api_1", keyId: ["k_receipt"], end: TO }), (rows) => rows[0]!.total)

        expect(Option.isNone(yield* verifications.findReceipt(WS, "key-1", T))).toBe(true)
        yield* verifications.append(events(3), receipt("key-1", T, "f1"))
        expect(yield* total).toBe(3)
        expect(yield* verifications.findReceipt(WS, "key-1", T + 1)).toEqual(Option.some(receipt("key-1", T, "f1")))
        expect(Option.isNone(yield* verifications.findReceipt(OTHER_WS, "key-1", T + 1))).toBe(true)

        // A live receipt of the key: the append fails and stores nothing.
        const taken = yield* Effect.flip(verifications.append(events(2), receipt("key-1", T + 10, "f2")))
        expect(taken._tag).toBe("StorageError")
        expect(yield* total).toBe(3)
        expect(yield* verifications.findReceipt(WS, "key-1", T + 20)).toEqual(Option.some(receipt("key-1", T, "f1")))
        expect(Option.isNone(yield* verifications.findReceipt(WS, "key-1", T + 60_000))).toBe(true)

        // Expired, the key is free again.
        yield* verifications.append(events(2), receipt("key-1", T + 60_000, "f3"))
        expect(yield* total).toBe(5)
        expect(Option.map(yield* verifications.findReceipt(WS, "key-1", T + 60_001), (r) => r.fingerprint))
          .toEqual(Option.some("f3"))
        // A receipt alone (a write stored elsewhere, as an override is).
        yield* verifications.append([], receipt("key-2", T, "f4"))
        expect(Option.map(yield* verifications.findReceipt(WS, "key-2", T + 1), (r) => r.fingerprint))
          .toEqual(Option.some("f4"))
        expect(yield* total).toBe(5)
      })))

    it.effect("records a keyed batch once: repeats replay, another body is refused, concurrent ones run once", () =>
      run(Effect.gen(function*() {
        yield* seedCatalog
        const service = yield* Verifications.Verifications
        const principal = Auth.system(WS)
        const batch = (keyId: string, n: number) =>
          // The test clock reads 0: these are its first milliseconds.
          Array.from({ length: n }, (_, i) => ({ apiId: "api_1", keyId, outcome: "valid", time: i }))
        const total = (keyId: string) =>
          Effect.map(ask({ apiId: "api_1", keyId: [keyId], end: TO }), (rows) => rows[0]!.total)
        const options = { idempotencyKey: "batch-1" }

        expect(yield* service.record(principal, batch("k_once", 4), options)).toEqual({ recorded: 4 })
        expect(yield* service.record(principal, batch("k_once", 4), options)).toEqual({ recorded: 4 })
        // The same events with their fields in another order are the same request.
        const reordered = batch("k_once", 4).map(({ apiId, keyId, outcome, time }) => ({ time, outcome, keyId, apiId }))
        expect(yield* service.record(principal, reordered, options)).toEqual({ recorded: 4 })
        expect(yield* total("k_once")).toBe(4)

        const reused = yield* Effect.flip(service.record(principal, batch("k_once", 5), options))
        expect(reused._tag).toBe("IdempotencyKeyReused")
        expect(yield* total("k_once")).toBe(4)
        // Keys are the workspace's own: another workspace may use the same one.
        const elsewhere = yield* service.record(
          Auth.system(OTHER_WS),
          [{ apiId: "api_b", keyId: "k_once", outcome: "valid" }],
          options
        )
        expect(elsewhere).toEqual({ recorded: 1 })

        const answers = yield* Effect.all(
          Array.from(
            { length: 20 },
            () => service.record(principal, batch("k_concurrent", 3), { idempotencyKey: "c" })
          ),
          { concurrency: "unbounded" }
        )
        expect(answers).toEqual(Array.from({ length: 20 }, () => ({ recorded: 3 })))
        expect(yield* total("k_concurrent")).toBe(3)

        const bad = yield* Effect.flip(service.record(principal, batch("k_bad", 1), { idempotencyKey: "with space" }))
        expect([bad._tag, bad.message]).toEqual([
          "ValidationError",
          "idempotencyKey: must be 1 to 255 visible ASCII characters (no space, \" or \\), got \"with space\""
        ])
        expect(yield* total("k_bad")).toBe(0)
      })))

    it.effect("sets an override and creates an api once per idempotency key", () =>
      run(Effect.gen(function*() {
        yield* seedCatalog
        const overrides = yield* Overrides.Overrides
        const apis = yield* Apis.Apis
        const catalog = yield* Catalog
        const principal = Auth.system(WS)
        const input = { namespaceName: "keyed", identifier: "user_1", limit: 5, duration: 1000 }
        const first = yield* overrides.set(principal, input, { idempotencyKey: "o" })
        const again = yield* overrides.set(principal, input, { idempotencyKey: "o" })
        expect(again).toEqual(first)
        const other = yield* Effect.flip(overrides.set(principal, { ...input, limit: 6 }, { idempotencyKey: "o" }))
        expect(other._tag).toBe("IdempotencyKeyReused")
        expect(Option.map(yield* catalog.getOverride(first.namespaceId, "user_1"), (o) => o.limit))
          .toEqual(Option.some(5))

        const created = yield* apis.create(principal, { name: "keyed" }, { idempotencyKey: "a" })
        expect(yield* apis.create(principal, { name: "keyed" }, { idempotencyKey: "a" })).toEqual(created)
        const reused = yield* Effect.flip(apis.create(principal, { name: "other" }, { idempotencyKey: "a" }))
        expect(reused._tag).toBe("IdempotencyKeyReused")
        // The key of the api is not the key of the override: another operation is another request.
        const crossed = yield* Effect.flip(apis.create(principal, { name: "keyed" }, { idempotencyKey: "o" }))
        expect(crossed.message).toMatch(/^idempotencyKey: this key was used for setOverride at /)
        // Unkeyed, each call creates.
        const a = yield* apis.create(principal, { name: "plain" })
        const b = yield* apis.create(principal, { name: "plain" })
        expect(a.apiId).not.toBe(b.apiId)
      })))

    it.effect("moves its revisions on every write, so what was read and remembered is read again", () =>
      run(Effect.gen(function*() {
        const catalog = yield* Catalog
        const verifications = yield* VerificationStore
        const auth = yield* Auth.Auth
        yield* seedCatalog
        const secret = "sk_conformance_revision"
        const key = new RootKey({
          id: "rk_rev",
          workspaceId: WS,
          name: "k",
          hash: RootKeyHash(secret),
          permissions: ["*"],
          createdAt: 1,
          disabled: false
        })
        yield* catalog.putRootKey(key)
        // Remembered after the first lookup; every change after it counts from the next request.
        expect((yield* auth.authenticate(Redacted.make(secret))).rootKeyId).toBe("rk_rev")
        yield* catalog.putRootKey(new RootKey({ ...key, disabled: true }))
        expect((yield* Effect.flip(auth.authenticate(Redacted.make(secret))))._tag).toBe("KeyForbidden")
        // Refused from memory when the catalog has a revision (decided without I/O); read again when not.
        const again = Decision.now(auth.authenticate(Redacted.make(secret)))
        if (catalog.revision !== undefined) expect(Exit.isExit(again) && Exit.isFailure(again)).toBe(true)
        else expect(Exit.isExit(again)).toBe(false)
        yield* catalog.deleteRootKey(WS, "rk_rev")
        expect((yield* Effect.flip(auth.authenticate(Redacted.make(secret))))._tag).toBe("Unauthenticated")
        yield* catalog.putRootKey(key)
        expect((yield* auth.authenticate(Redacted.make(secret))).rootKeyId).toBe("rk_rev")
        const catalogRevision = catalog.revision
        if (catalogRevision !== undefined) {
          const moved = <A, E>(write: Effect.Effect<A, E>) =>
            Effect.gen(function*() {
              const before = catalogRevision()
              yield* write
              return catalogRevision() !== before
            })
          expect(yield* moved(catalog.putNamespace(new Namespace({ id: "rlns_rev", workspaceId: WS, name: "rev" }))))
            .toBe(true)
          expect(yield* moved(catalog.putApi(new Api({ id: "api_rev", workspaceId: WS, name: "rev" })))).toBe(true)
          expect(yield* moved(catalog.deleteRootKey(WS, "rk_rev"))).toBe(true)
          const override = {
            id: "rlor_rev",
            namespaceId: "rlns_rev",
            identifier: "u",
            limit: 1,
            duration: 1000,
            async: false,
            now: 1
          }
          expect(yield* moved(catalog.upsertOverride(override))).toBe(true)
          expect(yield* moved(catalog.deleteOverride("rlns_rev", "u"))).toBe(true)
        }
        const storeRevision = verifications.revision
        const catalogBefore = catalogRevision?.()
        if (storeRevision !== undefined) {
          const before = storeRevision()
          yield* store([{ time: FROM, workspaceId: WS, apiId: "api_1", keyId: "k1", outcome: "valid", tags: [] }])
          expect(storeRevision()).not.toBe(before)
        }
        // Storing verifications is not a catalog change: what was remembered from it stays valid.
        yield* store([{ time: FROM, workspaceId: WS, apiId: "api_1", keyId: "k2", outcome: "valid", tags: ["t"] }])
        expect(catalogRevision?.()).toBe(catalogBefore)
      })))

    it.effect("keeps identities by external id per workspace, found or created once", () =>
      run(Effect.gen(function*() {
        const catalog = yield* Catalog
        yield* seedCatalog
        const identity = (id: string, workspaceId = WS, externalId = "user_42") =>
          new Identity({ id, workspaceId, externalId, enabled: true, createdAt: 1 })
        const first = yield* catalog.ensureIdentity(identity("id_1"))
        expect(first.id).toBe("id_1")
        // Concurrent creators of one external id end with one identity.
        const all = yield* Effect.all(
          Array.from({ length: 20 }, (_, i) => catalog.ensureIdentity(identity(`id_c${i}`, WS, "user_7"))),
          { concurrency: "unbounded" }
        )
        expect(new Set(all.map((i) => i.id)).size).toBe(1)
        expect((yield* catalog.ensureIdentity(identity("id_2"))).id).toBe("id_1")
        expect((yield* catalog.ensureIdentity(identity("id_3", OTHER_WS))).id).toBe("id_3")
        expect(Option.getOrThrow(yield* catalog.findIdentityByExternalId(WS, "user_42")).id).toBe("id_1")
        expect(Option.isNone(yield* catalog.getIdentity(OTHER_WS, "id_1"))).toBe(true)
        expect(yield* catalog.setIdentityEnabled(WS, "id_1", false)).toBe(true)
        expect(Option.getOrThrow(yield* catalog.getIdentity(WS, "id_1")).enabled).toBe(false)
        expect(yield* catalog.setIdentityEnabled(OTHER_WS, "id_1", true)).toBe(false)
      })))

    it.effect("stores keys by id and hash, replaces and deletes them, and pages an api's keys", () =>
      run(Effect.gen(function*() {
        const catalog = yield* Catalog
        yield* seedCatalog
        const identity = yield* catalog.ensureIdentity(
          new Identity({ id: "id_k", workspaceId: WS, externalId: "cust", enabled: true, createdAt: 1 })
        )
        const key = (n: number, extra: Partial<Key> = {}) =>
          new Key({
            id: `key_${String(n).padStart(3, "0")}`,
            workspaceId: WS,
            apiId: "api_1",
            hash: `hash_${n}`,
            start: "sk_ab",
            permissions: ["a"],
            enabled: true,
            credited: false,
            ratelimits: [],
            createdAt: n,
            updatedAt: n,
            ...extra
          })
        const revision = catalog.revision
        const before = revision?.()
        expect(yield* catalog.insertKey(key(1, { name: "one", meta: { plan: "pro", n: [1] } }), undefined))
          .toBe("created")
        if (revision !== undefined) expect(revision()).not.toBe(before)
        expect(yield* catalog.insertKey(key(1, { hash: "other" }), undefined)).toBe("conflict")
        expect(yield* catalog.insertKey(key(99, { hash: "hash_1" }), undefined)).toBe("conflict")
        for (let n = 2; n <= 5; n++) {
          yield* catalog.insertKey(
            key(n, n % 2 === 0 ? { identityId: identity.id, credited: true } : {}),
            n % 2 === 0 ? { remaining: 10 * n, refilledAt: n } : undefined
          )
        }
        const found = Option.getOrThrow(yield* catalog.findKeyByHash("hash_1"))
        expect(found).toEqual(key(1, { name: "one", meta: { plan: "pro", n: [1] } }))
        expect(Option.isNone(yield* catalog.getKey(OTHER_WS, "key_001"))).toBe(true)
        expect(Option.isNone(yield* catalog.findKeyByHash("hash_nope"))).toBe(true)
        // Pages in id order, with the total; of one identity.
        const page1 = yield* catalog.listKeys(WS, "api_1", { after: undefined, limit: 2 })
        expect(page1.keys.map((k) => k.id)).toEqual(["key_001", "key_002"])
        expect(page1.total).toBe(5)
        const page2 = yield* catalog.listKeys(WS, "api_1", { after: "key_002", limit: 10 })
        expect(page2.keys.map((k) => k.id)).toEqual(["key_003", "key_004", "key_005"])
        const ofIdentity = yield* catalog.listKeys(WS, "api_1", { after: undefined, limit: 10, identityId: "id_k" })
        expect(ofIdentity.keys.map((k) => k.id)).toEqual(["key_002", "key_004"])
        expect(ofIdentity.total).toBe(2)
        expect((yield* catalog.listKeys(WS, "api_2", { after: undefined, limit: 10 })).total).toBe(0)
        // Replace: configuration, and the balance kept, set or cleared.
        expect(yield* catalog.replaceKey(key(2, { identityId: "id_k", credited: true, enabled: false }), "keep"))
          .toBe(true)
        expect(Option.getOrThrow(yield* catalog.getKey(WS, "key_002")).enabled).toBe(false)
        expect(Option.getOrThrow(yield* catalog.getCredits("key_002")).remaining).toBe(20)
        yield* catalog.replaceKey(key(3, { credited: true }), { remaining: 7, refilledAt: 3 })
        expect(Option.getOrThrow(yield* catalog.getCredits("key_003"))).toEqual({ remaining: 7, refilledAt: 3 })
        yield* catalog.replaceKey(key(3), "clear")
        expect(Option.isNone(yield* catalog.getCredits("key_003"))).toBe(true)
        expect(yield* catalog.replaceKey(key(3, { workspaceId: OTHER_WS }), "keep")).toBe(false)
        expect(yield* catalog.replaceKey(key(77), "keep")).toBe(false)
        // Delete: the key, its hash and its credits.
        expect(yield* catalog.deleteKey(OTHER_WS, "key_004")).toBe(false)
        expect(yield* catalog.deleteKey(WS, "key_004")).toBe(true)
        expect(yield* catalog.deleteKey(WS, "key_004")).toBe(false)
        expect(Option.isNone(yield* catalog.findKeyByHash("hash_4"))).toBe(true)
        expect(Option.isNone(yield* catalog.getCredits("key_004"))).toBe(true)
      })))

    it.effect("spends credits atomically: never below zero, refilled when due, and no catalog change", () =>
      run(Effect.gen(function*() {
        const catalog = yield* Catalog
        yield* seedCatalog
        const key = new Key({
          id: "key_c",
          workspaceId: WS,
          apiId: "api_1",
          hash: "hash_c",
          start: "ab",
          permissions: [],
          enabled: true,
          credited: true,
          ratelimits: [],
          createdAt: 1,
          updatedAt: 1
        })
        yield* catalog.insertKey(key, { remaining: 50, refilledAt: 1 })
        const revision = catalog.revision?.()
        // 200 parallel spends of 1 on 50 credits: exactly 50 go through.
        const spends = yield* Effect.all(
          Array.from({ length: 200 }, () => catalog.spendCredits("key_c", 1, undefined, 2)),
          { concurrency: "unbounded" }
        )
        expect(spends.filter((s) => Option.getOrThrow(s).spent)).toHaveLength(50)
        expect(Option.getOrThrow(yield* catalog.getCredits("key_c")).remaining).toBe(0)
        expect(catalog.revision?.()).toBe(revision)
        // A cost over the balance takes nothing; cost 0 always passes.
        yield* catalog.changeCredits("key_c", "set", 3)
        expect(yield* catalog.spendCredits("key_c", 4, undefined, 3)).toEqual(
          Option.some({ spent: false, remaining: 3 })
        )
        expect(yield* catalog.spendCredits("key_c", 0, undefined, 3)).toEqual(
          Option.some({ spent: true, remaining: 3 })
        )
        expect(yield* catalog.spendCredits("key_c", 3, undefined, 3)).toEqual(
          Option.some({ spent: true, remaining: 0 })
        )
        // A refill due (last refill before `since`) sets the balance first, then the cost is taken.
        expect(yield* catalog.spendCredits("key_c", 2, { since: 1_000, amount: 10 }, 5_000))
          .toEqual(Option.some({ spent: true, remaining: 8 }))
        expect(Option.getOrThrow(yield* catalog.getCredits("key_c"))).toEqual({ remaining: 8, refilledAt: 5_000 })
        // Not due again in the same period.
        expect(yield* catalog.spendCredits("key_c", 1, { since: 1_000, amount: 10 }, 6_000))
          .toEqual(Option.some({ spent: true, remaining: 7 }))
        expect(yield* catalog.spendCredits("key_c", 20, { since: 9_000, amount: 10 }, 9_500))
          .toEqual(Option.some({ spent: false, remaining: 10 }))
        // Changes: set, increment, decrement not below 0.
        expect(Option.getOrThrow(yield* catalog.changeCredits("key_c", "increment", 5)).remaining).toBe(15)
        expect(Option.getOrThrow(yield* catalog.changeCredits("key_c", "decrement", 100)).remaining).toBe(0)
        expect(Option.getOrThrow(yield* catalog.changeCredits("key_c", "set", 42)).remaining).toBe(42)
        expect(catalog.revision?.()).toBe(revision)
        // A key without credits has no balance to spend.
        expect(Option.isNone(yield* catalog.spendCredits("key_none", 1, undefined, 1))).toBe(true)
        expect(Option.isNone(yield* catalog.changeCredits("key_none", "set", 1))).toBe(true)
      })))

    it.effect("lists a workspace's apis by id, its own only, and those a key may read", () =>
      run(Effect.gen(function*() {
        const catalog = yield* Catalog
        yield* catalog.putWorkspace(new Workspace({ id: "ws_list", name: "list" }))
        yield* catalog.putWorkspace(new Workspace({ id: "ws_list_other", name: "other" }))
        for (const id of ["api_list_c", "api_list_a", "api_list_b"]) {
          yield* catalog.putApi(new Api({ id, workspaceId: "ws_list", name: id.slice(-1) }))
        }
        yield* catalog.putApi(new Api({ id: "api_list_z", workspaceId: "ws_list_other", name: "z" }))
        expect((yield* catalog.listApis("ws_list")).map((api) => [api.id, api.name])).toEqual([
          ["api_list_a", "a"],
          ["api_list_b", "b"],
          ["api_list_c", "c"]
        ])
        expect(yield* catalog.listApis("ws_nobody")).toEqual([])
        // Every workspace, with its name.
        expect((yield* catalog.listWorkspaces).map((workspace) => [workspace.id, workspace.name])).toEqual(
          expect.arrayContaining([["ws_list", "list"], ["ws_list_other", "other"]])
        )
        const apis = yield* Apis.Apis
        const reader: Principal = {
          workspaceId: "ws_list",
          rootKeyId: "rk_reader",
          permissions: ["api.api_list_b.read_api"]
        }
        expect(yield* apis.list(reader)).toEqual({ apis: [{ apiId: "api_list_b", name: "b" }] })
        expect((yield* apis.list(Auth.system("ws_list"))).apis).toHaveLength(3)
      })))

    it.effect("lists a workspace's namespaces by name, and those whose overrides a key may read", () =>
      run(Effect.gen(function*() {
        const catalog = yield* Catalog
        yield* catalog.putWorkspace(new Workspace({ id: "ws_ns", name: "ns" }))
        yield* catalog.putWorkspace(new Workspace({ id: "ws_ns_other", name: "other" }))
        for (const [id, name] of [["rlns_2", "sms"], ["rlns_1", "email"], ["rlns_3", "mail*"]]) {
          yield* catalog.ensureNamespace(new Namespace({ id: id!, workspaceId: "ws_ns", name: name! }))
        }
        yield* catalog.ensureNamespace(new Namespace({ id: "rlns_9", workspaceId: "ws_ns_other", name: "a" }))
        expect((yield* catalog.listNamespaces("ws_ns")).map((n) => [n.id, n.name])).toEqual([
          ["rlns_1", "email"],
          ["rlns_3", "mail*"],
          ["rlns_2", "sms"]
        ])
        const overrides = yield* Overrides.Overrides
        const reader: Principal = {
          workspaceId: "ws_ns",
          rootKeyId: "rk",
          permissions: ["ratelimit.rlns_2.read_override"]
        }
        expect(yield* overrides.namespaces(reader)).toEqual({ namespaces: [{ namespaceId: "rlns_2", name: "sms" }] })
      })))

    it.effect("keeps catalog entries apart between workspaces", () =>
      run(Effect.gen(function*() {
        const catalog = yield* Catalog
        yield* seedCatalog
        yield* catalog.putNamespace(new Namespace({ id: "rlns_a", workspaceId: WS, name: "shared-name" }))
        expect(Option.isNone(yield* catalog.getApi(OTHER_WS, "api_1"))).toBe(true)
        expect(Option.isSome(yield* catalog.getApi(WS, "api_1"))).toBe(true)
        expect(Option.isNone(yield* catalog.getNamespace(OTHER_WS, "rlns_a"))).toBe(true)
        expect(Option.isNone(yield* catalog.findNamespaceByName(OTHER_WS, "shared-name"))).toBe(true)
        // The same name is free in another workspace; an id is not.
        expect(yield* catalog.putNamespace(new Namespace({ id: "rlns_b", workspaceId: OTHER_WS, name: "shared-name" })))
          .toBe("created")
        expect(yield* catalog.putNamespace(new Namespace({ id: "rlns_a", workspaceId: OTHER_WS, name: "x" })))
          .toBe("conflict")
        expect(yield* catalog.putApi(new Api({ id: "api_1", workspaceId: OTHER_WS, name: "steal" }))).toBe("conflict")
        const key = new RootKey({
          id: "rk_1",
          workspaceId: WS,
          name: "k",
          hash: "h1",
          permissions: ["*"],
          createdAt: 1,
          disabled: false
        })
        expect(yield* catalog.putRootKey(key)).toBe("created")
        expect(yield* catalog.putRootKey(new RootKey({ ...key, workspaceId: OTHER_WS }))).toBe("conflict")
        expect(yield* catalog.listRootKeys(OTHER_WS)).toEqual([])
        expect(yield* catalog.deleteRootKey(OTHER_WS, "rk_1")).toBe(false)
        expect((yield* catalog.listRootKeys(WS)).map((k) => k.id)).toEqual(["rk_1"])
        // Re-putting the same secret keeps its id and updates its permissions.
        expect(yield* catalog.putRootKey(new RootKey({ ...key, id: "rk_new", permissions: ["api.*.read_api"] })))
          .toBe("updated")
        const found = yield* catalog.findRootKeyByHash("h1")
        expect(Option.map(found, (k) => [k.id, k.permissions])).toEqual(Option.some(["rk_1", ["api.*.read_api"]]))
        // Verifications of another workspace's api never show up.
        yield* store([{ time: FROM, workspaceId: OTHER_WS, apiId: "api_1", keyId: "k1", outcome: "valid", tags: [] }])
        expect((yield* ask({ apiId: "api_1", end: TO }))[0]!.total).toBe(0)
      })))
  })
}
