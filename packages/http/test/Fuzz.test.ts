/**
 * Hostile input on every route, against the real server on memory and on SQLite: valid requests
 * built from each route's fields, then mutated (wrong types, missing and unknown fields, huge and
 * tiny numbers, `__proto__`, lone surrogates, NUL, deep nesting, long strings, repeated
 * parameters). Every answer must be a success or an error in the envelope with a known code and
 * the response's request id, never a 5xx, never a stack frame or a path; data stored before the
 * fuzz must read back identical after it. Seeded, so a failure replays.
 */
import { describe, expect, layer } from "@effect/vitest"
import { MemoryStorage } from "@keymeter/storage-memory"
import { SqliteStorage } from "@keymeter/storage-sqlite"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Codes } from "../src/Errors.js"
import * as TestServer from "./TestServer.js"
import { keys, post, request } from "./TestServer.js"

/** Values that break assumptions: types, extremes, prototypes, encodings, nesting, length. */
const hostile: ReadonlyArray<unknown> = [
  null,
  true,
  0,
  -1,
  1.5,
  2 ** 53,
  -(2 ** 53),
  1e308,
  "",
  "0",
  "-0",
  "1e3",
  "NaN",
  "\u0000",
  "\ud800",
  "a\udc00b",
  "__proto__",
  "constructor",
  "x".repeat(5000),
  "*",
  [],
  [1, "a"],
  {},
  { __proto__: { polluted: true } },
  JSON.parse("{\"__proto__\":{\"polluted\":true}}"),
  [[[[[[[[[[[["deep"]]]]]]]]]]]],
  // Far past the body's depth limit; the query string gets it as text.
  Array.from({ length: 2000 }).reduce<unknown>((inner) => ({ a: [inner] }), "bottom")
]

const hostileArb = FastCheck.constantFrom(...hostile)

/** Each route's valid input, as a caller sends it (the snapshot api and namespace left alone). */
const routes = {
  getVerifications: {
    apiId: "api_a1",
    groupBy: ["day"],
    start: 0,
    keyId: ["k1"],
    tag: ["t"],
    externalId: "e",
    limit: 10,
    orderBy: "total",
    order: "desc"
  },
  getOverride: { namespaceName: "email", identifier: "user_1", resolve: true },
  listOverrides: { namespaceName: "email", limit: 10 },
  recordVerifications: {
    verifications: [{
      apiId: "api_a1",
      keyId: "k1",
      outcome: "valid",
      tags: ["t"],
      identity: { id: "i", externalId: "e" }
    }]
  },
  setOverride: { namespaceName: "email", identifier: "user_*", limit: 5, duration: 60_000, async: false },
  deleteOverride: { namespaceName: "email", identifier: "user_*" },
  limit: { namespace: "email", identifier: "user_1", limit: 5, duration: 60_000, cost: 1 },
  createApi: { name: "fuzzed" }
} as const

type Route = keyof typeof routes

const GET: ReadonlySet<Route> = new Set(["getVerifications", "getOverride", "listOverrides"])

const PATHS: Record<Route, string> = {
  getVerifications: "/v1/analytics.getVerifications",
  getOverride: "/v1/ratelimits.getOverride",
  listOverrides: "/v1/ratelimits.listOverrides",
  recordVerifications: "/v1/analytics.recordVerifications",
  setOverride: "/v1/ratelimits.setOverride",
  deleteOverride: "/v1/ratelimits.deleteOverride",
  limit: "/v1/ratelimits.limit",
  createApi: "/v1/apis.createApi"
}

/** One mutation of a route's input. */
const mutation = FastCheck.oneof(
  FastCheck.record({ kind: FastCheck.constant("replace" as const), at: FastCheck.nat(), value: hostileArb }),
  FastCheck.record({ kind: FastCheck.constant("drop" as const), at: FastCheck.nat() }),
  FastCheck.record({
    kind: FastCheck.constant("add" as const),
    name: FastCheck.constantFrom("extra", "__proto__", "constructor", "\u0000", ""),
    value: hostileArb
  }),
  FastCheck.record({ kind: FastCheck.constant("nested" as const), at: FastCheck.nat(), value: hostileArb })
)

const mutate = (
  input: Record<string, unknown>,
  change: typeof mutation extends FastCheck.Arbitrary<infer M> ? M : never
) => {
  const out: Record<string, unknown> = JSON.parse(JSON.stringify(input))
  const names = Object.keys(out)
  const name = names["at" in change ? change.at % names.length : 0]!
  switch (change.kind) {
    case "replace":
      out[name] = change.value
      break
    case "drop":
      delete out[name]
      break
    case "add":
      Object.defineProperty(out, change.name, { value: change.value, enumerable: true, configurable: true })
      break
    case "nested": {
      // Inside the first array or object of the input (verifications[0], keyId...).
      const inner = Object.values(out).find((v) => typeof v === "object" && v !== null) as
        | Record<string, unknown>
        | Array<unknown>
        | undefined
      if (Array.isArray(inner)) inner[0] = change.value
      else if (inner !== undefined) inner[Object.keys(inner)[0] ?? "x"] = change.value
      else out[name] = change.value
    }
  }
  return out
}

/** The query string of an input: arrays repeat; other values as text (objects as JSON). */
const queryOf = (input: Record<string, unknown>, repeat: boolean) => {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(input)) {
    const values = Array.isArray(value) ? value : [value]
    for (const v of values) params.append(name, typeof v === "string" ? v : JSON.stringify(v) ?? "")
    if (repeat && values.length > 0) params.append(name, String(values[0]))
  }
  return params.toString()
}

const caseArb = FastCheck.record({
  route: FastCheck.constantFrom(...(Object.keys(routes) as Array<Route>)),
  mutations: FastCheck.array(mutation, { minLength: 1, maxLength: 3 }),
  repeat: FastCheck.boolean(),
  key: FastCheck.constantFrom(keys.admin, keys.reader, keys.limiter, "sk_unknown", "")
})

const KNOWN = new Set(Object.keys(Codes))
const LEAK = /\bat [\w.<>]+ \(|node:internal|\/node_modules\/|\.ts:\d|\/work\/|\/tmp\//

/** What must not change: a batch on api_a2 and an override of namespace sms, set before the fuzz. */
const snapshot = Effect.gen(function*() {
  const counts = yield* request("/v1/analytics.getVerifications?apiId=api_a2&groupBy=key", { key: keys.reader })
  const override = yield* request("/v1/ratelimits.getOverride?namespaceName=sms&identifier=kept_user", {
    key: keys.overrideReader
  })
  return { counts: counts.body, override: override.body }
})

const seed = Effect.gen(function*() {
  yield* post("/v1/analytics.recordVerifications", {
    verifications: [
      { apiId: "api_a2", keyId: "kept_1", outcome: "valid", time: 1_700_000_000_000 },
      { apiId: "api_a2", keyId: "kept_2", outcome: "expired", time: 1_700_000_000_000, tags: ["x"] }
    ]
  }, keys.admin)
  yield* post("/v1/ratelimits.setOverride", {
    namespaceName: "sms",
    identifier: "kept_user",
    limit: 3,
    duration: 60_000
  }, keys.admin)
})

const fuzz = (runs: number) =>
  Effect.gen(function*() {
    yield* seed
    const before = yield* snapshot
    const cases = FastCheck.sample(caseArb, { numRuns: runs, seed: 20261123 })
    for (const c of cases) {
      const input = c.mutations.reduce(mutate, routes[c.route] as unknown as Record<string, unknown>)
      const reply = GET.has(c.route)
        ? yield* request(`${PATHS[c.route]}?${queryOf(input, c.repeat)}`, { key: c.key })
        : yield* post(PATHS[c.route], input, c.key)
      const shown = `${c.route} ${JSON.stringify(input).slice(0, 300)} → ${reply.status} ${
        JSON.stringify(reply.body).slice(0, 300)
      }`
      expect(reply.status, shown).toBeLessThan(500)
      expect(reply.headers.get("x-request-id"), shown).toMatch(/^req_/)
      if (reply.status >= 400) {
        expect(KNOWN.has(reply.body?.error?.code), shown).toBe(true)
        expect(reply.body.error.requestId, shown).toBe(reply.headers.get("x-request-id"))
        expect(reply.body.error.message, shown).not.toMatch(LEAK)
      }
    }
    expect(yield* snapshot).toEqual(before)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

const quiet = Layer.provide(Logger.minimumLogLevel(LogLevel.None))

describe("fuzz", () => {
  layer(TestServer.layer(MemoryStorage.layer).pipe(quiet))("on memory", (it) => {
    it.effect("answers 1,500 hostile requests without a 5xx or a leak, and keeps stored data", () => fuzz(1500), {
      timeout: 60_000
    })
  })
  const filename = join(mkdtempSync(join(tmpdir(), "keymeter-fuzz-")), "k.db")
  layer(TestServer.layer(SqliteStorage.layer({ filename })).pipe(quiet))("on SQLite", (it) => {
    it.effect("answers 1,500 hostile requests without a 5xx or a leak, and keeps stored data", () => fuzz(1500), {
      timeout: 60_000
    })
  })
})
