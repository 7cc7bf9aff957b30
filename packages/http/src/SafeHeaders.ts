/**
 * Headers every answer carries, whoever writes it (the pipeline, the fast lane, the server's own
 * protocol answers): API answers are never cached (createKey's holds a secret) nor sniffed as
 * another type; the docs pages may run only what they ship and may not be framed.
 */

/** On every JSON answer. */
export const API: Readonly<Record<string, string>> = {
  "cache-control": "no-store",
  "x-content-type-options": "nosniff"
}

/** On the docs pages (Swagger UI is inlined: its scripts and styles are inline, its data same-origin). */
export const DOCS: Readonly<Record<string, string>> = {
  "x-content-type-options": "nosniff",
  "content-security-policy": "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; " +
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-frame-options": "DENY"
}

/** The headers of an answer to `path`. */
export const of = (path: string): Readonly<Record<string, string>> =>
  path === "/docs" || path.startsWith("/docs/") ? DOCS : API
