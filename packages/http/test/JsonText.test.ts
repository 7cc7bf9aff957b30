import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { describe, expect, it } from "@effect/vitest"
import * as JsonText from "../src/internal/JsonText.js"

const bodyOf = (response: HttpServerResponse.HttpServerResponse) => {
  const body = response.body
  if (body._tag !== "Uint8Array") throw new Error(`a ${body._tag} body`)
  return { text: new TextDecoder().decode(body.body), contentType: body.contentType }
}

describe("JsonText", () => {
  it("writes the body unsafeJson would, the encoded value's bytes as they are", () => {
    const rows = [{ tag: "a\"é\u2028", n: 1.5, none: null, tags: ["x", "y"] }, {
      tag: "🙂",
      n: -0,
      none: null,
      tags: []
    }]
    for (const head of [{ meta: { requestId: "req_\"1" } }, {}]) {
      const text = new JsonText.JsonText(new TextEncoder().encode(JSON.stringify(rows)))
      expect(bodyOf(JsonText.response(head, "data", text))).toEqual(
        bodyOf(HttpServerResponse.unsafeJson({ ...head, data: rows }))
      )
    }
  })
})
