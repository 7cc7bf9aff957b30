/**
 * Serves the dashboard page and its assets (built by `scripts/build.mjs` into `dist/assets`):
 * `GET /dashboard` is the page, `/dashboard/assets/<name>-<hash>.<ext>` its files, cached for a
 * year (their names change with their content), all under a Content-Security-Policy that allows
 * this origin only. The page calls the public /v1 routes beside it, and v2's SQL analytics.
 */
import { existsSync, readFileSync } from "node:fs"
import type { IncomingMessage, ServerResponse } from "node:http"

const TYPES: Record<string, string> = { js: "text/javascript; charset=utf-8", css: "text/css; charset=utf-8" }

/** The page's security policy: this origin only, nothing inline. */
export const CONTENT_SECURITY_POLICY =
  "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

const page = (manifest: Record<string, string>) =>
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>keymeter</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="dashboard/assets/${manifest["uplot.css"]}">
<link rel="stylesheet" href="dashboard/assets/${manifest["app.css"]}">
</head>
<body>
<div id="app"></div>
<script src="dashboard/assets/${manifest["app.js"]}"></script>
</body>
</html>
`

/**
 * A handler for the dashboard's requests: true when it answered, false for any other request.
 * Without built assets (the package not built) the page says how to build them.
 */
export const make = (): (req: IncomingMessage, res: ServerResponse) => boolean => {
  const folder = new URL("../dist/assets/", import.meta.url)
  const built = existsSync(new URL("manifest.json", folder))
  const manifest: Record<string, string> = built
    ? JSON.parse(readFileSync(new URL("manifest.json", folder), "utf8"))
    : {}
  const files = new Map<string, Buffer>()
  for (const name of Object.values(manifest)) files.set(name, readFileSync(new URL(name, folder)))
  const html = Buffer.from(
    built ? page(manifest) : "<!doctype html><p>The dashboard is not built: npm run build -w @keymeter/dashboard</p>"
  )
  const send = (res: ServerResponse, status: number, headers: Record<string, string>, body: Buffer, head: boolean) => {
    res.writeHead(status, {
      ...headers,
      "content-length": String(body.length),
      "content-security-policy": CONTENT_SECURITY_POLICY,
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer"
    })
    res.end(head ? undefined : body)
  }
  return (req, res) => {
    const path = (req.url ?? "").split("?")[0]!
    if (path !== "/dashboard" && !path.startsWith("/dashboard/")) return false
    if (req.method !== "GET" && req.method !== "HEAD") return false
    const head = req.method === "HEAD"
    if (path === "/dashboard") {
      send(res, 200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-cache" }, html, head)
      return true
    }
    if (path === "/dashboard/") {
      res.writeHead(301, { location: "../dashboard", "content-length": "0" })
      res.end()
      return true
    }
    const name = path.slice("/dashboard/assets/".length)
    const body = path.startsWith("/dashboard/assets/") ? files.get(name) : undefined
    if (body === undefined) return false
    const ext = name.slice(name.lastIndexOf(".") + 1)
    send(
      res,
      200,
      {
        "content-type": TYPES[ext] ?? "application/octet-stream",
        "cache-control": "public, max-age=31536000, immutable"
      },
      body,
      head
    )
    return true
  }
}
