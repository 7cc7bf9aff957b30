/**
 * Documentation served by the server itself, offline: the OpenAPI document at /openapi.json, a
 * Swagger UI at /docs (inlined, no CDN), and one page per error code at /docs/errors/<CODE>, which
 * every error body links to.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApiSwagger from "@effect/platform/HttpApiSwagger"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Codes, respond } from "./Errors.js"
import type { Code } from "./Errors.js"

const escape = (text: string) =>
  text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll("\"", "&quot;")

const errorPage = (code: Code) => {
  const { status, when } = Codes[code]
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>${code} — keymeter</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:42rem;margin:3rem auto;padding:0 1rem}code{background:#f3f3f3;padding:.1rem .3rem}</style>
</head><body>
<h1><code>${code}</code> (HTTP ${status})</h1>
<p>${escape(when)}</p>
<p>On <code>/v1</code>, every error answers <code>{"error":{"code","message","docs","requestId"}}</code>; on
<code>/v2</code>, Unkey v2's <code>{"meta":{"requestId"},"error":{"title","detail","status","type","errors"}}</code>,
whose <code>type</code> links here. The message names the offending field and what was expected; quote the
<code>requestId</code> when reporting a problem.</p>
<p><a href="/docs">API reference</a></p>
</body></html>`
}

const ErrorPages = HttpApiBuilder.Router.use((router) =>
  router.get(
    "/docs/errors/:code",
    Effect.gen(function*() {
      const { code } = yield* HttpRouter.params
      if (code === undefined || !Object.hasOwn(Codes, code)) {
        return yield* respond("NOT_FOUND", `No error code ${JSON.stringify(code ?? "")}`)
      }
      return HttpServerResponse.html(errorPage(code as Code))
    })
  )
)

/** OpenAPI, Swagger UI and the error pages. Provide to `HttpApiBuilder.serve` with the api layer. */
export const layer = Layer.mergeAll(
  HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" }),
  HttpApiSwagger.layer({ path: "/docs" }),
  ErrorPages
)
