/**
 * The fast lane answers exactly as the HttpApi pipeline does: the same requests, sent in the same
 * order to a server with the lane and to one without it (each on its own fresh storage and test
 * clock), get the same status, headers and body, request ids aside. Valid and invalid requests of
 * the routes it serves, including those it hands to the pipeline.
 */
import { expect, layer } from "@effect/vitest"
import { MemoryStorage } from "@keymeter/storage-memory"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as TestServer from "./TestServer.js"
import { BaseUrl, keys } from "./TestServer.js"

interface Call {
  readonly method?: "GET" | "POST"
  readonly path: string
  readonly key?: string | undefined
  readonly headers?: Record<string, string>
  readonly body?: string
  /** Keeps the `key` of the answer (a created key's secret) under this name, for `secret(name)`. */
  readonly save?: string
}

/** Stands for the secret a call saved under `name`: the servers create keys of their own. */
const secret = (name: string) => `<<secret:${name}>>`

const get = (query: string, key: string | undefined = keys.admin): Call => ({
  path: `/v1/analytics.getVerifications?${query}`,
  key
})
const ratelimits = (query: string, key: string | undefined = keys.admin): Call => ({
  path: `/v1/analytics.getRatelimits?${query}`,
  key
})
const post = (path: string, body: unknown, key: string | undefined = keys.admin, headers = {}): Call => ({
  method: "POST",
  path,
  key,
  headers: { "content-type": "application/json", ...headers },
  body: typeof body === "string" ? body : JSON.stringify(body)
})
const record = (body: unknown, key?: string, headers = {}) =>
  post("/v1/analytics.recordVerifications", body, key ?? keys.admin, headers)
const limit = (body: unknown, key?: string) => post("/v1/ratelimits.limit", body, key ?? keys.admin)
const setOverride = (body: unknown, key?: string, headers = {}) =>
  post("/v1/ratelimits.setOverride", body, key ?? keys.admin, headers)
const createKey = (body: unknown, save: string) => ({ ...post("/v1/keys.createKey", body), save })
const verifyKey = (body: unknown, key?: string) => post("/v1/keys.verifyKey", body, key ?? keys.admin)
const v2 = (route: string, body: unknown, key?: string) => post(`/v2/${route}`, body, key ?? keys.admin)
const event = (keyId: string, extra = {}) => ({ apiId: "api_a1", keyId, outcome: "valid", time: 0, ...extra })

const calls: ReadonlyArray<Call> = [
  record({ verifications: [event("k1"), event("k2", { tags: ["b", "a"] }), event("k1", { outcome: "expired" })] }),
  get("apiId=api_a1&groupBy=key"),
  get("apiId=api_a1&groupBy=hour&start=0&end=7200000"),
  get("apiId=api_a1&groupBy=tags&orderBy=total&order=desc&limit=1"),
  get("apiId=api_nope"),
  get("apiId=api_a1&groupBy=week"),
  get("apiId=api_a1&apiId=api_a2"),
  get("apiId=api_a1&unknown=1"),
  get("apiId=api_a1&start=abc"),
  get("apiId=api_a1", undefined),
  get("apiId=api_a1", "sk_unknown"),
  get("apiId=api_a1", keys.disabled),
  get("apiId=api_a1", keys.expired),
  get("apiId=api_a2", keys.readerOne),
  get("groupBy=day"),
  { path: "/v1/analytics.getVerifications?apiId=api_a1", headers: { authorization: "Basic abc" } },
  record({ verifications: [event("k3"), { apiId: "api_a1", keyId: "k3", outcome: "nope" }] }),
  record({ verifications: [event("k3")], extra: 1 }),
  record({}),
  record([]),
  record("{\"verifications\": [}"),
  record("[".repeat(100) + "]".repeat(100)),
  record(""),
  record({ verifications: [event("k3")] }, "sk_unknown"),
  record({ verifications: [{ ...event("k3"), apiId: "api_a2" }] }, keys.recorderOne),
  record({ verifications: [{ ...event("k3"), apiId: "api_nope" }] }),
  record({ verifications: [event("k4")] }, undefined, { "idempotency-key": "same" }),
  record({ verifications: [event("k4")] }, undefined, { "idempotency-key": "same" }),
  record({ verifications: [event("k5")] }, undefined, { "idempotency-key": "same" }),
  record({ verifications: [event("k4")] }, undefined, { "idempotency-key": "bad key" }),
  post("/v1/analytics.recordVerifications", { verifications: [event("k6")] }, keys.admin, {
    "content-type": "text/plain"
  }),
  record({ verifications: Array.from({ length: 2000 }, () => event("k7")) }),
  get("apiId=api_a1&groupBy=key"),
  limit({ namespace: "email", identifier: "u1", limit: 2, duration: 60_000 }),
  limit({ namespace: "email", identifier: "u1", limit: 2, duration: 60_000, cost: 2 }),
  limit({ namespace: "email", identifier: "u1", limit: 2, duration: 60_000 }),
  limit({ namespace: "email", identifier: "u1", limit: 2, duration: 999 }),
  limit({ namespace: "email", identifier: "u1", limit: 2, duration: 60_000, other: true }),
  limit({ namespace: "sms", identifier: "u1", limit: 2, duration: 60_000 }, keys.limiterOne),
  limit({ namespace: "brand-new", identifier: "u1", limit: 2, duration: 60_000 }, keys.limiterOne),
  limit({ namespace: "email", identifier: "u1", limit: 2, duration: 60_000 }, keys.reader),
  // Remembered answers and keys: the same query again, by principals that may not read it or
  // belong to another workspace, by refused keys twice, and again after a write.
  get("apiId=api_a1&groupBy=day&start=0&end=172800000"),
  get("apiId=api_a1&groupBy=day&start=0&end=172800000"),
  get("apiId=api_a1&groupBy=day&start=0&end=172800000", keys.nothing),
  get("apiId=api_a1&groupBy=day&start=0&end=172800000", keys.otherAdmin),
  get("apiId=api_a1&groupBy=day&start=0&end=172800000", keys.reader),
  get("apiId=api_a1&groupBy=day&start=0&end=172800000", "sk_unknown"),
  get("apiId=api_a1&groupBy=day&start=0&end=172800000", "sk_unknown"),
  get("apiId=api_a1&groupBy=day&start=0&end=172800000", keys.disabled),
  get("apiId=api_a1&groupBy=day&start=0&end=172800000", keys.expired),
  record({ verifications: [event("k8"), event("k8", { time: 90_000_000 })] }),
  get("apiId=api_a1&groupBy=day&start=0&end=172800000"),
  get("apiId=api_a1&groupBy=hour"),
  limit({ namespace: "email", identifier: "u2", limit: 2, duration: 60_000 }),
  limit({ namespace: "email", identifier: "u2", limit: 2, duration: 60_000 }),
  // Limits answered at once from what is remembered, and the bodies only the schema may judge.
  limit({ namespace: "email", identifier: "u5", limit: 2, duration: 60_000, cost: 0 }),
  limit({ namespace: "email", identifier: "u5", limit: 2, duration: 60_000, cost: -1 }),
  limit({ namespace: "email", identifier: "u5", limit: 1.5, duration: 60_000 }),
  limit({ namespace: "email", identifier: "u5", limit: "2", duration: 60_000 }),
  limit({ namespace: "email", identifier: "", limit: 2, duration: 60_000 }),
  limit({ namespace: "email", identifier: "\ud800", limit: 2, duration: 60_000 }),
  limit({ namespace: "em*", identifier: "u5", limit: 2, duration: 60_000 }),
  limit({ namespace: "email", identifier: "u5", limit: 2 }),
  limit({ namespace: "email", identifier: "u5", limit: 2, duration: 60_000, cost: null }),
  limit("[1]"),
  limit({ namespace: "email", identifier: "u5", limit: 2, duration: 60_000 }, "sk_unknown"),
  // The decisions above, counted: valid and refused reads, and a repeated one (remembered).
  ratelimits("namespaceName=email"),
  ratelimits("namespaceName=email&groupBy=identifier&orderBy=blocked&order=desc&limit=2"),
  ratelimits("namespaceName=email&groupBy=identifier&orderBy=blocked&order=desc&limit=2"),
  ratelimits("namespaceName=email&groupBy=hour&start=0&end=7200000"),
  ratelimits("namespaceName=email&identifier=u1&identifier=u2&groupBy=identifier"),
  ratelimits("namespaceName=nope"),
  ratelimits("namespaceId=rlns_nope"),
  ratelimits(""),
  ratelimits("namespaceName=email&groupBy=week"),
  ratelimits("namespaceName=email&unknown=1"),
  ratelimits("namespaceName=email&start=abc"),
  ratelimits("namespaceName=email", keys.reader),
  ratelimits("namespaceName=email", keys.limitReaderOne),
  ratelimits("namespaceName=email", "sk_unknown"),
  ratelimits("namespaceName=email", undefined),
  // Overrides set, matched by identifier and namespace patterns, and deleted between limits.
  limit({ namespace: "mailbox", identifier: "m1", limit: 2, duration: 60_000 }),
  setOverride({ namespaceName: "email", identifier: "u3", limit: 5, duration: 60_000 }),
  setOverride({ namespaceName: "email", identifier: "vip-*", limit: 7, duration: 60_000 }),
  setOverride({ namespaceName: "mail*", identifier: "*", limit: 9, duration: 60_000 }),
  // setOverride's refusals, receipts and hand-overs, as the pipeline answers them.
  setOverride({ namespaceName: "email", identifier: "u3", limit: 6, duration: 60_000 }),
  setOverride({ namespaceName: "email", limit: 5, duration: 60_000 }),
  setOverride({ namespaceName: "email", identifier: "u3", limit: -1, duration: 60_000 }),
  setOverride({ namespaceName: "email", identifier: "u3", limit: 5, duration: 60_000, extra: 1 }),
  setOverride({ identifier: "u3", limit: 5, duration: 60_000 }),
  setOverride({ namespaceId: "rlns_nope", namespaceName: "email", identifier: "u3", limit: 5, duration: 60_000 }),
  setOverride({ namespaceName: "fresh", identifier: "u3", limit: 5, duration: 60_000 }, keys.limiterOne),
  setOverride({ namespaceName: "email", identifier: "u3", limit: 5, duration: 60_000 }, keys.reader),
  setOverride({ namespaceName: "email", identifier: "u3", limit: 5, duration: 60_000 }, "sk_unknown"),
  setOverride({ namespaceName: "email", identifier: "u3", limit: 5, duration: 60_000 }, undefined),
  setOverride({ namespaceName: "email", identifier: "u4", limit: 5, duration: 60_000 }, undefined, {
    "idempotency-key": "override-1"
  }),
  setOverride({ namespaceName: "email", identifier: "u4", limit: 5, duration: 60_000 }, undefined, {
    "idempotency-key": "override-1"
  }),
  setOverride({ namespaceName: "email", identifier: "u4", limit: 8, duration: 60_000 }, undefined, {
    "idempotency-key": "override-1"
  }),
  setOverride({ namespaceName: "email", identifier: "u4", limit: 5, duration: 60_000 }, undefined, {
    "idempotency-key": "bad key"
  }),
  setOverride("[1]"),
  setOverride("{\"namespaceName\": "),
  setOverride(""),
  post(
    "/v1/ratelimits.setOverride",
    { namespaceName: "email", identifier: "u3", limit: 5, duration: 60_000 },
    keys.admin,
    {
      "content-type": "text/plain"
    }
  ),
  limit({ namespace: "email", identifier: "u3", limit: 2, duration: 60_000 }),
  limit({ namespace: "email", identifier: "u3", limit: 2, duration: 60_000 }),
  limit({ namespace: "email", identifier: "vip-1", limit: 2, duration: 60_000 }),
  limit({ namespace: "mailbox", identifier: "m1", limit: 2, duration: 60_000 }),
  limit({ namespace: "mailbox", identifier: "m1", limit: 2, duration: 60_000 }),
  post("/v1/ratelimits.deleteOverride", { namespaceName: "email", identifier: "u3" }),
  limit({ namespace: "email", identifier: "u3", limit: 2, duration: 60_000 }),
  limit({ namespace: "email", identifier: "u3", limit: 1, duration: 60_000 }, keys.limiterOne),
  // Keys verified: first read (pipeline work), then from memory, through every outcome.
  createKey({
    apiId: "api_a1",
    name: "alpha",
    externalId: "user_1",
    meta: { plan: "pro" },
    permissions: ["read", "write"],
    ratelimits: [{ name: "calls", limit: 3, duration: 60_000, autoApply: true }, {
      name: "heavy",
      limit: 10,
      duration: 60_000
    }]
  }, "a"),
  createKey({ apiId: "api_a1", prefix: "pk" }, "b"),
  createKey({ apiId: "api_a1", credits: { remaining: 1 } }, "c"),
  createKey({ apiId: "api_a1", enabled: false }, "d"),
  createKey({ apiId: "api_a2" }, "e"),
  verifyKey({ key: secret("a") }),
  verifyKey({ key: secret("a"), apiId: "api_a1", tags: ["b", "a"] }),
  verifyKey({ key: secret("a"), apiId: "api_a1", permissions: "read" }),
  verifyKey({ key: secret("a"), apiId: "api_a1", permissions: "admin" }),
  verifyKey({ key: secret("a"), permissions: { and: ["read", "write"] } }),
  verifyKey({ key: secret("a"), ratelimits: [{ name: "heavy", cost: 4 }] }),
  verifyKey({ key: secret("a"), ratelimits: [{ name: "nope" }] }),
  verifyKey({ key: secret("a") }),
  setOverride({ namespaceName: "calls", identifier: "user_1", limit: 50, duration: 60_000 }),
  verifyKey({ key: secret("a") }),
  verifyKey({ key: secret("a") }),
  verifyKey({ key: secret("b"), apiId: "api_a2" }),
  verifyKey({ key: secret("b"), apiId: "api_nope" }),
  verifyKey({ key: secret("b"), credits: { cost: 3 } }),
  verifyKey({ key: secret("b") }),
  verifyKey({ key: secret("c"), credits: { cost: 1 } }),
  verifyKey({ key: secret("c") }),
  verifyKey({ key: secret("d") }),
  verifyKey({ key: secret("d") }),
  verifyKey({ key: secret("e") }, keys.readerOne),
  verifyKey({ key: secret("e") }, keys.otherAdmin),
  verifyKey({ key: "pk_notakey", apiId: "api_a1" }),
  verifyKey({ key: "pk_notakey", apiId: "api_a1" }),
  verifyKey({ key: "pk_notakey" }),
  verifyKey({ key: "pk_notakey" }, "sk_unknown"),
  verifyKey({ key: "" }),
  verifyKey({ key: 5 }),
  verifyKey({ key: "x", other: 1 }),
  verifyKey({ key: "x", tags: ["\ud800"] }),
  verifyKey({ key: "x", credits: { cost: -1 } }),
  verifyKey("[1]"),
  // The same keys through /v2: its envelope, its permission queries, its errors.
  v2("keys.verifyKey", { key: secret("a") }),
  v2("keys.verifyKey", { key: secret("a"), permissions: "read AND write", tags: ["v2"] }),
  v2("keys.verifyKey", { key: secret("a"), permissions: "(read OR admin) AND write" }),
  v2("keys.verifyKey", { key: secret("a"), permissions: "admin" }),
  v2("keys.verifyKey", { key: secret("a"), permissions: "read AND (" }),
  v2("keys.verifyKey", { key: secret("a"), ratelimits: [{ name: "heavy", cost: 4 }] }),
  v2("keys.verifyKey", { key: secret("a"), ratelimits: [{ name: "nope" }] }),
  v2("keys.verifyKey", { key: secret("c"), credits: { cost: 1 } }),
  v2("keys.verifyKey", { key: secret("d") }),
  v2("keys.verifyKey", { key: secret("e") }, keys.readerOne),
  v2("keys.verifyKey", { key: secret("e") }, keys.verifierOne),
  v2("keys.verifyKey", { key: secret("b") }, keys.verifierOne),
  v2("keys.verifyKey", { key: secret("e") }, keys.otherAdmin),
  v2("keys.verifyKey", { key: "pk_notakey" }),
  v2("keys.verifyKey", { key: "x", apiId: "api_a1" }),
  v2("keys.verifyKey", { key: 5 }),
  v2("keys.verifyKey", "[1]"),
  v2("keys.verifyKey", ""),
  v2("keys.verifyKey", { key: "x" }, "sk_unknown"),
  v2("keys.verifyKey", { key: "x" }, undefined),
  v2("ratelimit.limit", { namespace: "email", identifier: "v2u", limit: 2, duration: 60_000 }),
  v2("ratelimit.limit", { namespace: "email", identifier: "v2u", limit: 2, duration: 60_000, cost: 1 }),
  v2("ratelimit.limit", { namespace: "email", identifier: "v2u", limit: 2, duration: 60_000 }),
  v2("ratelimit.limit", { namespace: "email", identifier: "u3", limit: 2, duration: 60_000 }),
  v2("ratelimit.limit", { namespace: "rlns_a1", identifier: "v2u", limit: 2, duration: 60_000 }),
  v2("ratelimit.limit", { namespace: "email", identifier: "v2u", limit: 0, duration: 60_000 }),
  v2("ratelimit.limit", { namespace: "email", identifier: "v2u", limit: 2 }),
  v2("ratelimit.limit", [{ namespace: "email" }]),
  v2("ratelimit.limit", { namespace: "email", identifier: "v2u", limit: 2, duration: 60_000 }, keys.reader),
  post("/v1/keys.updateKey", { keyId: "<<keyId:a>>", enabled: false }),
  verifyKey({ key: secret("a") }),
  verifyKey({ key: secret("b") }),
  post("/v1/keys.deleteKey", { keyId: "<<keyId:b>>" }),
  verifyKey({ key: secret("b") }),
  // createKey's and updateRemaining's refusals and receipts, as the pipeline answers them.
  post("/v1/keys.createKey", { apiId: "api_nope" }),
  post("/v1/keys.createKey", { apiId: "api_a1", extra: 1 }),
  post("/v1/keys.createKey", {}),
  post("/v1/keys.createKey", { apiId: "api_a2" }, keys.readerOne),
  post("/v1/keys.createKey", { apiId: "api_a1" }, "sk_unknown"),
  post("/v1/keys.createKey", "[1]"),
  post("/v1/keys.createKey", "{\"apiId\": "),
  {
    ...post("/v1/keys.createKey", { apiId: "api_a1", name: "once" }, keys.admin, { "idempotency-key": "key-1" }),
    save: "f"
  },
  post("/v1/keys.createKey", { apiId: "api_a1", name: "once" }, keys.admin, { "idempotency-key": "key-1" }),
  post("/v1/keys.createKey", { apiId: "api_a1", name: "twice" }, keys.admin, { "idempotency-key": "key-1" }),
  post("/v1/keys.createKey", { apiId: "api_a1" }, keys.admin, { "idempotency-key": "bad key" }),
  post("/v1/keys.updateRemaining", { keyId: "<<keyId:c>>", op: "increment", value: 2 }),
  verifyKey({ key: secret("c"), credits: { cost: 1 } }),
  post("/v1/keys.updateRemaining", { keyId: "<<keyId:c>>", op: "set", value: null }),
  post("/v1/keys.updateRemaining", { keyId: "<<keyId:c>>", op: "set", value: 1 }),
  post("/v1/keys.updateRemaining", { keyId: "<<keyId:c>>", op: "nope", value: 1 }),
  post("/v1/keys.updateRemaining", { keyId: "<<keyId:c>>", op: "set", value: -1 }),
  post("/v1/keys.updateRemaining", { keyId: "<<keyId:c>>", op: "set" }),
  post("/v1/keys.updateRemaining", { keyId: "key_nope", op: "set", value: 1 }),
  post("/v1/keys.updateRemaining", { keyId: "<<keyId:e>>", op: "set", value: 1 }, keys.otherAdmin),
  post("/v1/keys.updateRemaining", { keyId: "<<keyId:c>>", op: "decrement", value: 1 }, keys.admin, {
    "idempotency-key": "credits-1"
  }),
  post("/v1/keys.updateRemaining", { keyId: "<<keyId:c>>", op: "decrement", value: 1 }, keys.admin, {
    "idempotency-key": "credits-1"
  }),
  post("/v1/keys.updateRemaining", { keyId: "<<keyId:c>>", op: "set", value: 1 }, keys.admin, {
    "content-type": "text/plain"
  })
]

/** A call's answer with what differs between two servers by design (request ids, dates) taken out. */
const answer = (base: string, call: Call, saved: Map<string, { key: string; keyId: string }>) =>
  Effect.promise(async () => {
    const headers = new Headers(call.headers)
    if (call.key !== undefined) headers.set("authorization", `Bearer ${call.key}`)
    const body = call.body?.replace(
      /<<(secret|keyId):(\w+)>>/g,
      (_, field: "secret" | "keyId", name: string) => saved.get(name)![field === "secret" ? "key" : "keyId"]
    )
    const response = await fetch(base + call.path, {
      method: call.method ?? "GET",
      headers,
      ...(body !== undefined ? { body } : {})
    })
    const id = response.headers.get("x-request-id") ?? ""
    const kept: Array<[string, string]> = []
    response.headers.forEach((value, name) => {
      // A secret's length varies (base58), and the answer's length with it.
      if (name !== "date" && name !== "x-request-id" && !(name === "content-length" && call.save !== undefined)) {
        kept.push([name, value])
      }
    })
    const text = await response.text()
    if (call.save !== undefined) saved.set(call.save, JSON.parse(text))
    return {
      status: response.status,
      headers: kept.sort(),
      // Ids and secrets made by the servers differ by design; the same call makes one on each.
      body: text.replaceAll(id, "<request id>").replace(/(rlor|rlns|key|id)_[0-9A-Z]{26}/g, "$1_<id>")
        .replace(/"(key|start)":"[^"]*"/g, "\"$1\":\"<secret>\""),
      idShape: /^req_[0-9A-Z]{26}$/.test(id)
    }
  })

// The pipeline caps bodies at 64 KiB here, so that the oversized batch above is its 413.
const options = { maxBodyBytes: 64 * 1024 }

layer(TestServer.layer(MemoryStorage.layer, options))("the fast lane", (it) => {
  it.scoped("answers every call exactly as the pipeline alone does", () =>
    Effect.gen(function*() {
      const lane = yield* BaseUrl
      const pipeline = Context.get(
        yield* Layer.build(TestServer.layer(MemoryStorage.layer, { ...options, fastLane: false })),
        BaseUrl
      )
      const savedLane = new Map<string, { key: string; keyId: string }>()
      const savedPipeline = new Map<string, { key: string; keyId: string }>()
      for (const call of calls) {
        const viaLane = yield* answer(lane, call, savedLane)
        const viaPipeline = yield* answer(pipeline, call, savedPipeline)
        expect(viaLane, `${call.method ?? "GET"} ${call.path} ${call.body?.slice(0, 80) ?? ""}`).toEqual(viaPipeline)
        expect(viaLane.idShape).toBe(true)
      }
    }))

  it.scoped("streams a large answer a slice at a time, the same answer the pipeline gives whole", () =>
    Effect.gen(function*() {
      // Both fresh: the other test recorded verifications on this layer's server.
      const lane = Context.get(yield* Layer.build(TestServer.layer(MemoryStorage.layer, options)), BaseUrl)
      const pipeline = Context.get(
        yield* Layer.build(TestServer.layer(MemoryStorage.layer, { ...options, fastLane: false })),
        BaseUrl
      )
      // 9,000 hours: zero-filled, well over the 2,000 datapoints from which answers are streamed.
      const path = `/v1/analytics.getVerifications?apiId=api_a2&groupBy=hour&start=0&end=${9_000 * 3_600_000}`
      const fetchBoth = (base: string) =>
        Effect.promise(async () => {
          const response = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${keys.admin}` } })
          return { response, body: await response.json() as Array<{ time: number; total: number }> }
        })
      const viaLane = yield* fetchBoth(lane)
      const viaPipeline = yield* fetchBoth(pipeline)
      expect(viaLane.response.status, JSON.stringify(viaLane.body).slice(0, 300)).toBe(200)
      expect(viaLane.response.headers.get("transfer-encoding")).toBe("chunked")
      expect(viaLane.response.headers.get("x-request-id")).toMatch(/^req_/)
      expect(viaLane.body.length).toBeGreaterThan(8_990)
      expect(viaLane.body).toEqual(viaPipeline.body)
    }))
})
