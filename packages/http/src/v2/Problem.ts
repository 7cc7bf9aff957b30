/**
 * Unkey v2's error body, `{meta: {requestId}, error: {title, detail, status, type, errors?}}`, and
 * the media type it is sent as: what every /v2 failure answers, wherever it is built (the
 * routes' error schemas, the fallbacks, the fast lane).
 */

/** One validation issue of a 400: where in the request, and what is wrong. */
export interface Issue {
  readonly location: string
  readonly message: string
}

/** Which envelope a request's errors are answered in: v1's, v2's, or v2's as problem+json throughout. */
export type Dialect = "v1" | "v2" | "v2problem"

/** The route whose every error Unkey's v2 client reads as `application/problem+json`. */
const PROBLEM_ROUTES: ReadonlySet<string> = new Set(["/v2/identities.deleteIdentity"])

/** The dialect of a request path. */
export const dialectOf = (path: string): Dialect =>
  !path.startsWith("/v2/") ? "v1" : PROBLEM_ROUTES.has(path) ? "v2problem" : "v2"

/** `INSUFFICIENT_PERMISSIONS` → `Insufficient Permissions`: the same for every occurrence of a code. */
export const titleOf = (code: string): string =>
  code.split("_").map((word) => word.charAt(0) + word.slice(1).toLowerCase()).join(" ")

/** `field: message; other.field: message` (core's validation messages) as issues. */
const ISSUE = /^([A-Za-z_$[][\w$.[\]]*): ([\s\S]*)$/
const SEPARATOR = /; (?=[A-Za-z_$[][\w$.[\]]*: )/

/** The issues of a 400's message: one per `path: message` part, located in the body. */
export const issuesOf = (message: string): ReadonlyArray<Issue> =>
  message.split(SEPARATOR).map((part) => {
    const match = ISSUE.exec(part)
    if (match === null) return { location: "body", message: part }
    const path = match[1]!
    return { location: path.startsWith("[") ? `body${path}` : `body.${path}`, message: match[2]! }
  })

/** The error body of `code` at `status`. */
export const body = (
  code: string,
  status: number,
  message: string,
  context: { readonly requestId: string; readonly docsUrl: string }
) => ({
  meta: { requestId: context.requestId },
  error: {
    title: titleOf(code),
    detail: message,
    status,
    type: `${context.docsUrl}/errors/${code}`,
    ...(status === 400 ? { errors: issuesOf(message) } : {})
  }
})

/** The media type of an error at `status`: Unkey's client reads every 429 as problem+json. */
export const contentType = (status: number, dialect: Dialect): string =>
  dialect === "v2problem" || status === 429 ? "application/problem+json" : "application/json"
