/**
 * The page's only way to the server: the public /v1 routes and v2's SQL analytics, called with the
 * root key. Errors come back as {@link ApiError} with the envelope's code (v1's `code`, or the last
 * part of v2's `type`), and {@link explain} puts them in plain words.
 */

/** The page's base: where /dashboard is mounted (the API is beside it). */
const base = location.pathname.replace(/\/dashboard\/?$/, "")

/** An answer other than 2xx, with the error envelope's code and message (and v2's title). */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly title?: string | undefined) {
    super(message)
  }
}

/** An error envelope: v1's `{code, message}` or v2's `{title, detail, status, type}`. */
interface Envelope {
  readonly code?: string
  readonly message?: string
  readonly title?: string
  readonly detail?: string
  readonly type?: string
}

/** Tries of a read the server refused for now (429: its limits), each after its Retry-After. */
const READ_TRIES = 4

/** A request; reads (GETs unless `read` says otherwise) are tried again after a 429. */
const send = async <A>(
  key: string,
  path: string,
  init: RequestInit = {},
  read = init.method === undefined
): Promise<A> => {
  let reply: Response
  for (let tried = 1;; tried++) {
    reply = await fetch(`${base}${path}`, {
      ...init,
      headers: {
        authorization: `Bearer ${key}`,
        ...(init.body !== undefined ? { "content-type": "application/json" } : {})
      }
    })
    // Reads only: a write the server refused is shown, not repeated behind the user's back.
    if (reply.status !== 429 || !read || tried === READ_TRIES) break
    const wait = Number(reply.headers.get("retry-after") ?? 1)
    await new Promise((resolve) => setTimeout(resolve, Math.min(Number.isFinite(wait) ? wait : 1, 5) * 1000))
  }
  const body = await reply.json().catch(() => undefined)
  if (!reply.ok) {
    const error: Envelope | undefined = body?.error
    throw new ApiError(
      reply.status,
      error?.code ?? error?.type?.split("/").pop() ?? "ERROR",
      error?.message ?? error?.detail ?? `HTTP ${reply.status}`,
      error?.title
    )
  }
  return body as A
}

/** A GET route with query parameters (undefined ones left out). */
export const get = <A>(key: string, route: string, query: Record<string, string | undefined> = {}): Promise<A> => {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, value)
  const search = params.toString()
  return send<A>(key, `/v1/${route}${search === "" ? "" : `?${search}`}`)
}

/** A POST route with a JSON body. */
export const post = <A>(key: string, route: string, body: unknown): Promise<A> =>
  send<A>(key, `/v1/${route}`, { method: "POST", body: JSON.stringify(body) })

/** A row of a SQL analytics answer: values by column name. */
export type SqlRow = Readonly<Record<string, unknown>>

/**
 * A SQL analytics query (v2's `analytics.getVerifications` or `analytics.getRatelimits`): its
 * rows. A read, so a 429 (the server's queries all running) is tried again.
 */
export const sql = (
  key: string,
  route: "analytics.getVerifications" | "analytics.getRatelimits",
  query: string
): Promise<ReadonlyArray<SqlRow>> =>
  send<{ data: ReadonlyArray<SqlRow> }>(key, `/v2/${route}`, { method: "POST", body: JSON.stringify({ query }) }, true)
    .then((answer) => answer.data)

/** An error in plain words, with the envelope's code: "this key may not …" for a 403. */
export const explain = (error: unknown, forbidden: string): string => {
  if (!(error instanceof ApiError)) return `The server could not be reached (${String(error)}).`
  if (error.status === 403) return `This key may not ${forbidden} (${error.code}).`
  return `${error.message} (${error.code})`
}

/** True for a refused root key (401): the page goes back to sign-in. */
export const isRefused = (error: unknown): error is ApiError => error instanceof ApiError && error.status === 401

/** A time as people read it, in UTC. */
export const utcText = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace("T", " ") + " UTC"
