// RateLimiter's multiLimit over the memory storage, as RateLimiter.test.ts runs limit.
import { describe, expect, it } from "@effect/vitest"
import * as Auth from "@keymeter/core/Auth"
import * as Checker from "@keymeter/core/Checker"
import * as Decision from "@keymeter/core/Decision"
import * as Keymeter from "@keymeter/core/Keymeter"
import { MultiLimitInput } from "@keymeter/core/Limit"
import { Overrides } from "@keymeter/core/Overrides"
import { RateLimiter } from "@keymeter/core/RateLimiter"
import { Catalog } from "@keymeter/core/Storage"
import { Workspace } from "@keymeter/core/Workspace"
import { MemoryStorage } from "@keymeter/storage-memory"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"

const WS = "ws_multi"
const admin = Auth.system(WS)
const Test = Keymeter.layer.pipe(Layer.provideMerge(MemoryStorage.layer))

/** A limit of `limit` per 10 s for `identifier` in `namespace`. */
const item = (namespace: string, identifier: string, limit: number, extra: object = {}) => ({
  namespace,
  identifier,
  limit,
  duration: 10_000,
  ...extra
})

const setup = Effect.gen(function*() {
  const catalog = yield* Catalog
  yield* catalog.putWorkspace(new Workspace({ id: WS, name: "multi" }))
  yield* TestClock.setTime(1_000_000)
  const limiter = yield* RateLimiter
  return {
    limiter,
    catalog,
    overrides: yield* Overrides,
    /** How `identifier`'s window in `namespace` stands, taking nothing. */
    peek: (namespace: string, identifier: string, limit: number) =>
      Effect.map(
        limiter.limit(admin, item(namespace, identifier, limit, { cost: 0 })),
        (answer) => answer.remaining
      ),
    idOf: (name: string) =>
      Effect.flatMap(
        catalog.findNamespaceByName(WS, name),
        (found) => found._tag === "Some" ? Effect.succeed(found.value.id) : Effect.die(`no namespace ${name}`)
      )
  }
})

describe("RateLimiter.multiLimit", () => {
  it.effect("decides each limit on its own, in order: one exceeded does not stop the others", () =>
    Effect.gen(function*() {
      const { limiter, peek } = yield* setup
      const body = [item("email", "user_1", 1), item("sms", "user_1", 5)]
      expect(yield* limiter.multiLimit(admin, body)).toEqual({
        passed: true,
        limits: [
          { namespace: "email", identifier: "user_1", limit: 1, remaining: 0, reset: 1_010_000, passed: true },
          { namespace: "sms", identifier: "user_1", limit: 5, remaining: 4, reset: 1_010_000, passed: true }
        ]
      })
      const second = yield* limiter.multiLimit(admin, body)
      expect(second.passed).toBe(false)
      expect(second.limits.map((l) => [l.passed, l.remaining])).toEqual([[false, 0], [true, 3]])
      expect(yield* peek("sms", "user_1", 5)).toBe(3)
      // Two limits of one window: the second sees what the first took.
      yield* TestClock.adjust(10_000)
      const twice = yield* limiter.multiLimit(admin, [item("email", "user_2", 1), item("email", "user_2", 1)])
      expect(twice.limits.map((l) => l.passed)).toEqual([true, false])
    }).pipe(Effect.provide(Test)))

  it.effect("with atomic, takes all limits or, when one is exceeded, none", () =>
    Effect.gen(function*() {
      const { limiter, peek } = yield* setup
      const body = [item("email", "user_1", 1), item("sms", "user_1", 5)]
      const first = yield* limiter.multiLimit(admin, body, { atomic: true })
      expect(first.passed).toBe(true)
      expect(first.limits.map((l) => l.remaining)).toEqual([0, 4])
      const refused = yield* limiter.multiLimit(admin, body, { atomic: true })
      expect(refused.passed).toBe(false)
      // Each limit says whether its own window had room; none was taken from.
      expect(refused.limits.map((l) => [l.passed, l.remaining])).toEqual([[false, 0], [true, 4]])
      expect(yield* peek("sms", "user_1", 5)).toBe(4)
      const twice = yield* limiter.multiLimit(
        admin,
        [item("sms", "user_2", 2), item("sms", "user_2", 2), item("sms", "user_2", 2)],
        { atomic: true }
      )
      expect(twice.passed).toBe(false)
      expect(yield* peek("sms", "user_2", 2)).toBe(2)
    }).pipe(Effect.provide(Test)))

  it.effect("names what each limit named: its namespace, its namespaceId, or \"default\"", () =>
    Effect.gen(function*() {
      const { idOf, limiter } = yield* setup
      yield* limiter.multiLimit(admin, [item("email", "user_1", 3)])
      const email = yield* idOf("email")
      const answer = yield* limiter.multiLimit(admin, [
        { namespaceId: email, identifier: "user_1", limit: 3, duration: 10_000 },
        { identifier: "user_1", limit: 3, duration: 10_000 }
      ])
      expect(answer.limits.map((l) => [l.namespace, l.remaining])).toEqual([[email, 1], ["default", 2]])
      // Remembered now: decided at once.
      const again = Decision.now(
        limiter.multiLimit(admin, [{ namespaceId: email, identifier: "user_1", limit: 3, duration: 10_000 }])
      )
      expect(again).toEqual(Exit.succeed(expect.objectContaining({ passed: true })))
    }).pipe(Effect.provide(Test)))

  it.effect("applies each limit's override", () =>
    Effect.gen(function*() {
      const { limiter, overrides } = yield* setup
      yield* limiter.multiLimit(admin, [item("email", "user_0", 1)]) // creates "email"
      const set = yield* overrides.set(admin, {
        namespaceName: "email",
        identifier: "user_*",
        limit: 10,
        duration: 60_000
      })
      const answer = yield* limiter.multiLimit(admin, [item("email", "user_1", 3), item("sms", "user_1", 3)])
      expect(answer.limits).toEqual([
        {
          namespace: "email",
          identifier: "user_1",
          limit: 10,
          remaining: 9,
          reset: 1_060_000,
          passed: true,
          overrideId: set.id
        },
        { namespace: "sms", identifier: "user_1", limit: 3, remaining: 2, reset: 1_010_000, passed: true }
      ])
    }).pipe(Effect.provide(Test)))

  it.effect("refuses a body the schema refuses, naming the limit's index", () =>
    Effect.gen(function*() {
      const { limiter } = yield* setup
      const refusal = (input: unknown) => Effect.map(Effect.flip(limiter.multiLimit(admin, input)), (e) => e.message)
      // The compiled fast check agrees with the schema.
      expect(Checker.uncompiled(MultiLimitInput)).toEqual([])
      const check = Checker.compile(MultiLimitInput)
      const decodes = Schema.is(MultiLimitInput, { onExcessProperty: "error" })
      for (
        const input of [
          [item("email", "u_1", 1)],
          [{ namespaceId: "rlns_1", identifier: "u_1", limit: 1, duration: 1000 }],
          [],
          Array.from({ length: 101 }, () => item("email", "u_1", 1)),
          [item("email", "u_1", 1, { extra: 1 })],
          [item("email", "u_1", 1, { namespaceId: "" })],
          [5]
        ]
      ) expect(check(input)).toBe(decodes(input))
      expect(yield* refusal([])).toBe("input: must be an array of 1 to 100 limits, got 0 limits")
      expect(yield* refusal(Array.from({ length: 101 }, () => item("email", "u_1", 1))))
        .toBe("input: must be an array of 1 to 100 limits, got 101 limits")
      expect(yield* refusal(item("email", "u_1", 1))).toBe("input: must be an array of 1 to 100 limits, got an object")
      expect(yield* refusal([item("email", "u_1", 1), 5, item("email", "u_1", 0)])).toBe(
        "[1]: must be a JSON object, got 5; [2].limit: must be an integer >= 1, got 0"
      )
      expect(yield* refusal([item("email", "u_1", 1), item("email", "u_1", 1, { namespaceId: "rlns_x" })]))
        .toBe("[1].namespace: give namespace or namespaceId, not both")
      expect(yield* refusal([item("email", "u_1", 1), item("e*", "u_1", 1)])).toMatch(
        /^\[1\]\.namespace: must not contain \*/
      )
    }).pipe(Effect.provide(Test)))

  it.effect("finds every namespace and checks every permission before taking or creating anything", () =>
    Effect.gen(function*() {
      const { catalog, idOf, limiter, peek } = yield* setup
      yield* limiter.multiLimit(admin, [item("email", "user_1", 3), item("sms", "user_1", 3)])
      const email = yield* idOf("email")
      // May limit in "email" only.
      const narrow = { workspaceId: WS, rootKeyId: "rk", permissions: [`ratelimit.${email}.limit`] }
      expect(yield* limiter.multiLimit(narrow, [item("email", "user_1", 3)])).toMatchObject({ passed: true })
      const denied = yield* Effect.flip(
        limiter.multiLimit(narrow, [item("email", "user_1", 3), item("sms", "user_1", 3)])
      )
      expect(denied._tag).toBe("InsufficientPermissions")
      const fresh = yield* Effect.flip(
        limiter.multiLimit(narrow, [item("email", "user_1", 3), item("fresh", "user_1", 3)])
      )
      expect(fresh._tag).toBe("InsufficientPermissions")
      expect(yield* peek("email", "user_1", 3)).toBe(1)
      expect(yield* peek("sms", "user_1", 3)).toBe(2)
      // A namespace to create is created only once every limit of the call is allowed.
      const unknown = yield* Effect.flip(limiter.multiLimit(admin, [
        item("new_one", "user_1", 3),
        { namespaceId: "rlns_nope", identifier: "user_1", limit: 3, duration: 10_000 }
      ]))
      expect(unknown).toMatchObject({
        _tag: "NotFound",
        message: "[1].namespaceId: no namespace \"rlns_nope\" in this workspace"
      })
      expect((yield* catalog.findNamespaceByName(WS, "new_one"))._tag).toBe("None")
      expect((yield* catalog.findNamespaceByName(WS, "fresh"))._tag).toBe("None")
      expect(yield* peek("email", "user_1", 3)).toBe(1)
    }).pipe(Effect.provide(Test)))

  it.effect("decides on a catalog without revision: one call naming a namespace twice, or creating it", () =>
    Effect.gen(function*() {
      const { limiter } = yield* setup
      // What a catalog without revision loads is kept for the rest of the decision that loaded it:
      // its later turns, and its second look at the same namespace, find it (they once loaded it
      // again and again, for ever).
      expect((yield* limiter.limit(admin, item("made_now", "u", 3))).remaining).toBe(2)
      const answer = yield* limiter.multiLimit(admin, [item("made_now", "u", 3), item("made_now", "u", 3)])
      expect(answer.limits.map((limit) => limit.remaining)).toEqual([1, 0])
      const both = yield* limiter.multiLimit(admin, [item("also_new", "u", 1), item("also_new", "u", 1)])
      expect(both.limits.map((limit) => limit.passed)).toEqual([true, false])
    }).pipe(Effect.provide(WithoutRevision)))
})

/** The memory storage, its catalog without a revision (as a SQLite file whose version cannot be read). */
const WithoutRevision = Keymeter.layer.pipe(
  Layer.provideMerge(
    Layer.effect(Catalog, Effect.map(Catalog, (catalog) => ({ ...catalog, revision: undefined }))).pipe(
      Layer.provideMerge(MemoryStorage.layer)
    )
  )
)
