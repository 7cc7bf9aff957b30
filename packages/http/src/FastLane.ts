/**
 * The hot routes served straight from Node's request: `GET /v1/analytics.getVerifications` and
 * `getRatelimits`, `POST /v1/analytics.recordVerifications`, `POST /v1/ratelimits.limit`,
 * `POST /v1/ratelimits.setOverride`, `POST /v1/keys.createKey`, `POST /v1/keys.updateRemaining`,
 * `POST /v1/keys.verifyKey`, and v2's verifyKey and limit.
 * The HttpApi pipeline (router, middleware, schema decoding and encoding, a fiber and spans per
 * request) costs ten times the work of these routes; here a request calls the same route
 * functions (`HotRoutes`) with the same checks in the same order and the same pieces (`bearer`,
 * `JsonBody.parse`, `IdempotencyKey.read`, `InFlightLimit`, `Errors.wireOf`), so its answers are
 * byte for byte the pipeline's. A request this lane does not take as it is (another media type, a
 * chunked or oversized body, a query string the route would not read) goes to the pipeline
 * untouched, which then answers it, errors included.
 *
 * What core decides from memory (see core's `Decision`: a remembered root key, key, namespace,
 * override, analytics answer) is answered without running an effect at all.
 */
import * as Analytics from "@keymeter/core/Analytics"
import * as Decision from "@keymeter/core/Decision"
import type { Principal } from "@keymeter/core/Permission"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as DefaultServices from "effect/DefaultServices"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as FiberRefs from "effect/FiberRefs"
import * as Runtime from "effect/Runtime"
import type { IncomingMessage, ServerResponse } from "node:http"
import { AuthGate } from "./AuthGate.js"
import { bearer } from "./Authorization.js"
import type { DomainError } from "./Errors.js"
import type { Code } from "./Errors.js"
import { body as envelope, Codes, HttpError, wireOf } from "./Errors.js"
import { HotRoutes, readQuery, readRatelimitQuery } from "./HotRoutes.js"
import type { Budget, Budgets } from "./InFlightLimit.js"
import { shed } from "./InFlightLimit.js"
import * as IdempotencyKey from "./internal/IdempotencyKey.js"
import * as JsonBody from "./internal/JsonBody.js"
import { makeRequestId } from "./RequestContext.js"
import * as SafeHeaders from "./SafeHeaders.js"
import * as Problem from "./v2/Problem.js"

/** The services the lane calls. */
export type Services = HotRoutes | AuthGate

/** How the lane answers. */
export interface Options {
  readonly runtime: Runtime.Runtime<Services>
  readonly budgets: Budgets
  /** Base of the `docs` links, without a trailing slash. */
  readonly docsUrl: string
  readonly maxBodyBytes: number
}

type Answer = { readonly status: number; readonly body: unknown; readonly headers?: Record<string, string> }

/** A body already serialised. */
class Json {
  constructor(readonly text: string) {}
}

/** A failure's code and message, its envelope built when sent (in the route's dialect). */
class Failed {
  constructor(readonly code: Code, readonly message: string) {}
}

const DIGITS = /^[0-9]+$/

/** Answers of more items than this are streamed, this many items a slice (about 170 KB). */
const STREAMED_FROM = 2_000
const STREAM_SLICE = 1_000

/** Query strings kept read, and the longest kept (a dashboard's are a few hundred characters). */
const REMEMBERED_QUERIES = 1_024
const REMEMBERED_QUERY_LENGTH = 1_024

const INTERNAL = "Internal server error; it was logged with this request id"

/** What every 429 says: when to retry. */
const RETRY = { "retry-after": "1" }

/** Serves a request if it is one the lane takes; false (the request untouched) otherwise. */
export const make = (options: Options) => {
  // Requests run on a runtime holding the services and the default services (the clock, the
  // test clock in tests) but none of the server's other fiber refs: a fiber forked from the
  // server's full runtime copies them all, a tenth of a request's time. Logs go to the full one.
  const full = options.runtime
  const lean = Runtime.make({
    context: full.context,
    runtimeFlags: full.runtimeFlags,
    fiberRefs: FiberRefs.unsafeMake(
      new Map([[DefaultServices.currentServices, [
        [
          FiberId.make(0, 0) as FiberId.Runtime,
          FiberRefs.getOrDefault(full.fiberRefs, DefaultServices.currentServices)
        ] as const
      ]]])
    )
  })
  const runCallback = Runtime.runCallback(lean)
  // Answers core remembers (frozen, given to every caller of the same query) are serialised once.
  const serialised = new WeakMap<object, Json>()
  const jsonOf = (answer: unknown): unknown => {
    if (typeof answer !== "object" || answer === null || !Object.isFrozen(answer)) return answer
    let json = serialised.get(answer)
    if (json === undefined) serialised.set(answer, json = new Json(JSON.stringify(answer)))
    return json
  }
  const log = (effect: Effect.Effect<void>) => Runtime.runFork(full)(effect)
  const context = (requestId: string) => ({ requestId, docsUrl: options.docsUrl })

  const send = (res: ServerResponse, requestId: string, answer: Answer, dialect: Problem.Dialect = "v1") => {
    if (Array.isArray(answer.body) && answer.body.length > STREAMED_FROM) {
      return stream(res, requestId, answer.status, answer.body)
    }
    const failed = answer.body instanceof Failed ? answer.body : undefined
    const text = answer.body instanceof Json ? answer.body.text : JSON.stringify(
      failed === undefined
        ? answer.body
        : dialect === "v1"
        ? envelope(failed.code, failed.message, context(requestId))
        : Problem.body(failed.code, answer.status, failed.message, context(requestId))
    )
    res.writeHead(answer.status, {
      // Every 429 says when to retry, whichever limit answered it.
      ...(answer.status === 429 ? RETRY : {}),
      ...answer.headers,
      ...SafeHeaders.API,
      "content-type": failed === undefined || dialect === "v1"
        ? "application/json"
        : Problem.contentType(answer.status, dialect),
      "content-length": Buffer.byteLength(text),
      "x-request-id": requestId
    })
    res.end(text)
  }

  /**
   * A large array answer written a slice at a time, each once the last has left (the socket
   * drained), other requests served in between: the loop is never held for the whole answer, and
   * a slow reader holds one slice in memory, not the answer's whole text.
   */
  const stream = (res: ServerResponse, requestId: string, status: number, items: ReadonlyArray<unknown>) => {
    res.writeHead(status, { ...SafeHeaders.API, "content-type": "application/json", "x-request-id": requestId })
    let next = 0
    const slice = (): void => {
      if (res.destroyed) return
      const end = Math.min(next + STREAM_SLICE, items.length)
      const text = JSON.stringify(items.slice(next, end))
      const part = (next === 0 ? "[" : ",") + text.slice(1, -1) + (end === items.length ? "]" : "")
      next = end
      if (next === items.length) res.end(part)
      else if (res.write(part)) setImmediate(slice)
      else res.once("drain", () => setImmediate(slice))
    }
    slice()
  }

  const failure = (error: HttpError): Answer => ({
    status: Codes[error.code].status,
    body: new Failed(error.code, error.message)
  })

  /** The answer of a failure, built without an HttpError for domain errors (it costs a stack trace). */
  const wireFailure = (error: DomainError | HttpError): Answer => {
    if (error instanceof HttpError) return failure(error)
    const { code, message } = wireOf(error)
    return { status: Codes[code].status, body: new Failed(code, message) }
  }

  /**
   * Runs `program` (authentication, then the route's work) and answers with its outcome: a value
   * is the 200 body; a domain failure its wire error (storage failures logged, as the pipeline
   * does); `HAND_OVER` hands the request to the pipeline; a defect is a logged 500. The mapping is
   * done here rather than with more effects: every effect step costs the request time.
   */
  const run = (
    res: ServerResponse,
    requestId: string,
    budget: Budget,
    program: Effect.Effect<unknown, DomainError | HttpError, Services>,
    fallback: () => void,
    dialect: Problem.Dialect = "v1"
  ) =>
    runCallback(program, {
      onExit: (exit) => {
        options.budgets.leave(budget)
        if (Exit.isSuccess(exit)) {
          if (exit.value === HAND_OVER) return fallback()
          return send(res, requestId, { status: 200, body: jsonOf(exit.value) }, dialect)
        }
        const error = Cause.failureOption(exit.cause)
        if (error._tag === "Some") {
          const failed = error.value
          if (!(failed instanceof HttpError) && failed._tag === "StorageError") {
            log(Effect.logError("storage failure", failed.message, failed.cause))
          }
          return send(res, requestId, wireFailure(failed), dialect)
        }
        log(Effect.logError("unhandled defect", exit.cause))
        send(res, requestId, failure(new HttpError({ code: "INTERNAL_SERVER_ERROR", message: INTERNAL })), dialect)
      }
    })

  const gate = Context.get(full.context, AuthGate)
  const routes = Context.get(full.context, HotRoutes)

  /**
   * The request's principal, or why it has none (401/403 as the pipeline's middleware answers):
   * at once when the key's lookup is remembered, else as an effect that looks it up.
   */
  const principalOf = (req: IncomingMessage): Effect.Effect<Principal, DomainError | HttpError> => {
    const key = bearer(req.headers.authorization)
    if (typeof key !== "string") return Exit.fail(key)
    return gate.authenticate(req.socket.remoteAddress, key)
  }

  /**
   * A GET analytics read (`getVerifications`, `getRatelimits`): its query string read as the
   * pipeline would read it (by `read`; anything it would refuse goes to the pipeline), then `ask`.
   * The query strings dashboards repeat are read once: the same stable query object each time.
   */
  const analyticsRead = (
    read: typeof readQuery,
    ask: (principal: Principal, query: Record<string, unknown>) => Effect.Effect<unknown, DomainError, Services>
  ) => {
    const queries = new Map<string, ReturnType<typeof readQuery>>()
    const queryOf = (search: string) => {
      let query = queries.get(search)
      if (query === undefined) {
        const raw: Record<string, string | Array<string>> = {}
        for (const [name, value] of new URLSearchParams(search)) {
          const seen = raw[name]
          raw[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value]
        }
        query = Either.map(read(raw), Analytics.stable)
        if (search.length <= REMEMBERED_QUERY_LENGTH) {
          if (queries.size >= REMEMBERED_QUERIES) queries.clear()
          queries.set(search, query)
        }
      }
      return query
    }
    return (req: IncomingMessage, res: ServerResponse, search: string, requestId: string, fallback: () => void) => {
      const query = queryOf(search)
      // Answered without an effect when the key and the answer are both remembered, or the key is
      // refused from what is remembered: the repeated dashboard query and the bad key stay cheap.
      const known = principalOf(req)
      if (Exit.isExit(known)) {
        if (Exit.isFailure(known)) {
          const error = Cause.failureOption(known.cause as Cause.Cause<DomainError | HttpError>)
          if (error._tag === "Some") {
            options.budgets.leave("others")
            return send(res, requestId, wireFailure(error.value))
          }
        } else if (Either.isRight(query)) {
          const answer = Decision.now(ask(known.value as Principal, query.right))
          if (Decision.isDecided(answer) && Exit.isSuccess(answer)) {
            options.budgets.leave("others")
            return send(res, requestId, { status: 200, body: jsonOf(answer.value) })
          }
          return run(res, requestId, "others", answer, fallback)
        }
      }
      run(
        res,
        requestId,
        "others",
        Effect.flatMap(
          known,
          (principal) => Either.isLeft(query) ? Effect.succeed<unknown>(HAND_OVER) : ask(principal, query.right)
        ),
        fallback
      )
    }
  }
  // A Map: a path is the client's text (`/constructor` is no route).
  const reads = new Map([
    ["/v1/analytics.getVerifications", analyticsRead(readQuery, routes.getVerifications)],
    ["/v1/analytics.getRatelimits", analyticsRead(readRatelimitQuery, routes.getRatelimits)]
  ])

  /** Reads the body (its length was checked), authenticates, then runs `act` on the parsed object. */
  const withBody = (
    req: IncomingMessage,
    res: ServerResponse,
    requestId: string,
    act: (
      principal: Principal,
      body: Record<string, unknown>
    ) => Effect.Effect<unknown, DomainError | HttpError, Services>,
    /** Whether `act` decides when called (see core's `Decision`): an Exit is answered at once. */
    decides: boolean,
    dialect: Problem.Dialect
  ) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.once("error", () => {
      options.budgets.leave("uploads")
      send(
        res,
        requestId,
        failure(new HttpError({ code: "BAD_REQUEST", message: "body: could not be read" })),
        dialect
      )
    })
    req.once("end", () => {
      const text = Buffer.concat(chunks).toString("utf8")
      // v1's routes take objects; v2's read any JSON by their schema (multiLimit takes an array).
      const parsed = dialect === "v1"
        ? Either.flatMap(JsonBody.parse(text), JsonBody.asObject)
        : JsonBody.parse(text) as Either.Either<Record<string, unknown>, HttpError>
      const known = principalOf(req)
      if (Exit.isExit(known)) {
        if (Exit.isFailure(known)) {
          const error = Cause.failureOption(known.cause as Cause.Cause<DomainError | HttpError>)
          if (error._tag === "Some") {
            options.budgets.leave("uploads")
            return send(res, requestId, wireFailure(error.value), dialect)
          }
        } else if (decides && Either.isRight(parsed)) {
          const answer = Decision.now(act(known.value as Principal, parsed.right))
          if (Exit.isExit(answer) && Exit.isSuccess(answer)) {
            options.budgets.leave("uploads")
            return send(res, requestId, { status: 200, body: answer.value }, dialect)
          }
          // Decided but for I/O (a key's credits, say), or refused: the effect finishes it.
          return run(res, requestId, "uploads", answer, () => {}, dialect)
        }
      }
      run(
        res,
        requestId,
        "uploads",
        // Authentication comes first, as in the pipeline: a bad key is a 401 whatever the body.
        Effect.flatMap(
          known,
          (principal) => Either.isLeft(parsed) ? Effect.fail(parsed.left) : act(principal, parsed.right)
        ),
        () => {},
        dialect
      )
    })
  }

  return (req: IncomingMessage, res: ServerResponse, fallback: () => void): boolean => {
    const url = req.url ?? ""
    const q = url.indexOf("?")
    const path = q < 0 ? url : url.slice(0, q)
    const headers = req.headers
    if (req.method === "GET") {
      const read = reads.get(path)
      if (read === undefined) return false
      if (headers["transfer-encoding"] !== undefined) return false
      if (headers["content-length"] !== undefined && headers["content-length"] !== "0") return false
      const requestId = makeRequestId()
      if (!options.budgets.enter("others")) {
        const { headers: more, message } = shed(options.budgets, "others")
        send(res, requestId, { ...failure(new HttpError({ code: "RATE_LIMITED", message })), headers: more })
        return true
      }
      read(req, res, q < 0 ? "" : url.slice(q + 1), requestId, fallback)
      return true
    }
    if (req.method !== "POST") return false
    const route = path === "/v1/analytics.recordVerifications"
      ? "record"
      : path === "/v1/ratelimits.limit"
      ? "limit"
      : path === "/v1/ratelimits.setOverride"
      ? "setOverride"
      : path === "/v1/keys.createKey"
      ? "createKey"
      : path === "/v1/keys.updateRemaining"
      ? "updateRemaining"
      : path === "/v1/keys.verifyKey"
      ? "verify"
      : path === "/v2/keys.verifyKey"
      ? "verifyV2"
      : path === "/v2/ratelimit.limit"
      ? "limitV2"
      : undefined
    if (route === undefined) return false
    // Only plain JSON bodies of a declared length within the limit; the rest (415, 413, chunks)
    // is the pipeline's to answer.
    const length = headers["content-length"]
    if (
      headers["transfer-encoding"] !== undefined || length === undefined || !DIGITS.test(length) ||
      Number(length) > options.maxBodyBytes || Number(length) === 0 || !JsonBody.isJson(headers["content-type"])
    ) {
      return false
    }
    const requestId = makeRequestId()
    const dialect = route === "verifyV2" || route === "limitV2" ? "v2" : "v1"
    if (!options.budgets.enter("uploads")) {
      const { headers: more, message } = shed(options.budgets, "uploads")
      send(res, requestId, { ...failure(new HttpError({ code: "RATE_LIMITED", message })), headers: more }, dialect)
      return true
    }
    withBody(
      req,
      res,
      requestId,
      route === "record"
        ? (principal, body) => routes.recordVerifications(principal, body, IdempotencyKey.read(headers))
        : route === "limit"
        ? (principal, body) => routes.limit(principal, body)
        : route === "setOverride"
        ? (principal, body) => routes.setOverride(principal, body, IdempotencyKey.read(headers))
        : route === "createKey"
        ? (principal, body) => routes.createKey(principal, body, IdempotencyKey.read(headers))
        : route === "updateRemaining"
        ? (principal, body) => routes.updateRemaining(principal, body, IdempotencyKey.read(headers))
        : route === "verify"
        ? (principal, body) => routes.verifyKey(principal, body, requestId)
        : route === "verifyV2"
        ? (principal, body) => routes.verifyKeyV2(principal, body, requestId)
        : (principal, body) => routes.limitV2(principal, body, requestId),
      route === "limit" || route === "verify" || route === "verifyV2" || route === "limitV2",
      dialect
    )
    return true
  }
}

/** What the lane's program answers to hand the request to the pipeline. */
const HAND_OVER = Symbol.for("@keymeter/http/FastLane/HandOver")
