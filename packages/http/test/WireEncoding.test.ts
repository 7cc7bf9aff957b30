/**
 * Handlers send some answers as core built them, without HttpApi's schema encoding (see
 * `Handlers`): the bytes must be exactly what the contract's encoding gives, field order included.
 */
import { expect, layer } from "@effect/vitest"
import { Datapoint } from "@keymeter/core/Datapoint"
import { LimitResponse } from "@keymeter/core/Limit"
import { MemoryStorage } from "@keymeter/storage-memory"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as TestServer from "./TestServer.js"
import { BaseUrl, keys, post } from "./TestServer.js"

/** The raw text of an answer. */
const text = (path: string, init: RequestInit = {}) =>
  Effect.flatMap(BaseUrl, (base) =>
    Effect.promise(async () => {
      const response = await fetch(base + path, {
        ...init,
        headers: { authorization: `Bearer ${keys.admin}`, "content-type": "application/json", ...init.headers }
      })
      return { status: response.status, type: response.headers.get("content-type"), text: await response.text() }
    }))

/** The contract's encoding of the value `text` holds, as text. */
const encoded = <A, I>(schema: Schema.Schema<A, I>, text: string) =>
  JSON.stringify(Schema.encodeSync(schema)(Schema.decodeUnknownSync(schema)(JSON.parse(text))))

layer(TestServer.layer(MemoryStorage.layer))("answers sent as built", (it) => {
  it.effect("are byte for byte the contract's encoding, with its content type", () =>
    Effect.gen(function*() {
      yield* post("/v1/analytics.recordVerifications", {
        verifications: [
          {
            apiId: "api_a1",
            keyId: "k1",
            outcome: "valid",
            time: 0,
            tags: ["b", "a"],
            identity: { id: "i", externalId: "e" }
          },
          { apiId: "api_a1", keyId: "k2", outcome: "expired", time: 7_200_000 }
        ]
      }, keys.admin)
      const points = Schema.Array(Datapoint)
      for (
        const groupBy of [[], ["day"], ["hour", "key"], ["identity"], ["tags"], ["tag", "month"], [
          "key",
          "identity",
          "tags"
        ]]
      ) {
        const query = new URLSearchParams([
          ["apiId", "api_a1"],
          ["start", "0"],
          ...groupBy.map((g): [string, string] => ["groupBy", g])
        ])
        const reply = yield* text(`/v1/analytics.getVerifications?${query}`)
        expect([reply.status, reply.type]).toEqual([200, "application/json"])
        expect(reply.text, groupBy.join()).toBe(encoded(points, reply.text))
      }
      const limit = yield* text("/v1/ratelimits.limit", {
        method: "POST",
        body: JSON.stringify({ namespace: "email", identifier: "u", limit: 3, duration: 60_000 })
      })
      expect(limit.text).toBe(encoded(LimitResponse, limit.text))
      const recorded = yield* text("/v1/analytics.recordVerifications", {
        method: "POST",
        body: JSON.stringify({ verifications: [{ apiId: "api_a1", keyId: "k3", outcome: "valid" }] })
      })
      expect([recorded.status, recorded.text]).toEqual([200, "{\"recorded\":1}"])
    }))
})
