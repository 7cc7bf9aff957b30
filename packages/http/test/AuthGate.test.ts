// The budget of unknown root keys per client: past it, 429 with Retry-After for the rest of the
// minute, on the lane's routes and the pipeline's alike, while a key known good keeps working.
import { expect, layer } from "@effect/vitest"
import { MemoryStorage } from "@keymeter/storage-memory"
import * as Effect from "effect/Effect"
import * as TestServer from "./TestServer.js"
import { keys, post, request } from "./TestServer.js"

layer(TestServer.layer(MemoryStorage.layer, { maxAuthFailures: 5 }), { excludeTestServices: true })(
  "AuthGate",
  (it) => {
    it.effect("answers 429 to a client past its budget of unknown keys, and still serves its real keys", () =>
      Effect.gen(function*() {
        // The admin key is used before the guessing: it is known good.
        expect((yield* request("/v1/apis.listApis", { key: keys.admin })).status).toBe(200)
        const guesses = []
        for (let i = 0; i < 8; i++) {
          // Lane and pipeline routes in turn: one budget.
          guesses.push(
            i % 2 === 0
              ? yield* request("/v1/analytics.getVerifications?apiId=api_a1", { key: `sk_guess_${i}` })
              : yield* post("/v1/apis.createApi", { name: "x" }, `sk_guess_${i}`)
          )
        }
        expect(guesses.map((g) => g.status)).toEqual([401, 401, 401, 401, 401, 429, 429, 429])
        const spent = guesses[5]!
        expect(spent.body.error.code).toBe("RATE_LIMITED")
        expect(spent.body.error.message).toMatch(/Too many unknown root keys from this client \(5 a minute\)/)
        for (const refused of guesses.slice(5)) expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0)
        // A remembered good key still passes, on both paths.
        expect((yield* request("/v1/apis.listApis", { key: keys.admin })).status).toBe(200)
        expect((yield* request("/v1/analytics.getVerifications?apiId=api_a1", { key: keys.admin })).status).toBe(200)
        // Also once the catalog changed (what is remembered of keys is read again): it was valid.
        expect((yield* post("/v1/apis.createApi", { name: "after" }, keys.admin)).status).toBe(200)
        expect((yield* request("/v1/analytics.getVerifications?apiId=api_a1", { key: keys.admin })).status).toBe(200)
        // A fresh guess is still refused without a catalog read.
        expect((yield* request("/v1/apis.listApis", { key: "sk_guess_fresh" })).status).toBe(429)
      }))
  }
)
