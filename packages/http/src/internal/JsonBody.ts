/**
 * Reading a JSON request body in the order the contract fixes: media type (415), size (413),
 * nesting depth and syntax (400). Schema validation of the parsed value is the caller's.
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { describeValue } from "@keymeter/core/Validation"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { IncomingMessage } from "node:http"
import { HttpError } from "../Errors.js"

/** Largest accepted request body, in bytes. */
export class MaxBodyBytes extends Context.Reference<MaxBodyBytes>()("@keymeter/http/MaxBodyBytes", {
  defaultValue: () => 1024 * 1024
}) {}

/**
 * Deepest nesting of arrays and objects a body may have. keymeter's bodies need three levels;
 * the bound keeps every later step that walks a value (decoding, describing it in a message) far
 * from the stack's limit.
 */
export const MAX_DEPTH = 64

/** True when the JSON text nests arrays and objects deeper than `max` (brackets inside strings do not count). */
const nestsDeeperThan = (text: string, max: number): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++ // a backslash escapes the next character
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true
    } else if (c === 0x5d || c === 0x7d) depth--
  }
  return false
}

/** How much of an oversized body is read and discarded so the client can read the 413. */
const DRAIN_BYTES = 16 * 1024 * 1024

type Read =
  | { readonly _tag: "Text"; readonly text: string }
  | { readonly _tag: "TooLarge" }
  | { readonly _tag: "Unreadable" }

/**
 * Reads a Node request body. Past the limit it keeps reading but stores nothing: closing the
 * socket instead (as a plain size-limited read does) would leave the client without the 413.
 */
const readIncoming = (incoming: IncomingMessage, limit: number) =>
  Effect.async<Read>((resume) => {
    if (incoming.readableEnded) {
      resume(Effect.succeed({ _tag: "Text", text: "" }))
      return
    }
    const chunks: Array<Buffer> = []
    let size = 0
    const cleanup = () => {
      incoming.off("data", onData)
      incoming.off("end", onEnd)
      incoming.off("error", onError)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size <= limit) {
        chunks.push(chunk)
        return
      }
      chunks.length = 0
      if (size > limit + DRAIN_BYTES) {
        // Far too large to keep reading: answer now; the connection closes after the answer.
        cleanup()
        incoming.pause()
        resume(Effect.succeed({ _tag: "TooLarge" }))
      }
    }
    const onEnd = () => {
      cleanup()
      resume(
        Effect.succeed(
          size > limit ? { _tag: "TooLarge" } : { _tag: "Text", text: Buffer.concat(chunks).toString("utf8") }
        )
      )
    }
    const onError = () => {
      cleanup()
      resume(Effect.succeed({ _tag: "Unreadable" }))
    }
    incoming.on("data", onData)
    incoming.once("end", onEnd)
    incoming.once("error", onError)
    return Effect.sync(cleanup)
  })

const readText = (request: HttpServerRequest.HttpServerRequest, limit: number): Effect.Effect<Read> => {
  const incoming = Effect.runSync(Effect.option(Effect.try(() => NodeHttpServerRequest.toIncomingMessage(request))))
  if (Option.isSome(incoming)) return readIncoming(incoming.value, limit)
  return request.text.pipe(
    HttpIncomingMessage.withMaxBodySize(Option.some(limit)),
    Effect.map((text): Read => ({ _tag: "Text", text })),
    Effect.catchAll((error) =>
      Effect.succeed<Read>(
        error.cause instanceof Error && error.cause.message === "maxBytes exceeded"
          ? { _tag: "TooLarge" }
          : { _tag: "Unreadable" }
      )
    )
  )
}

/** The parsed JSON body of `request`. */
export const read = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const contentType = request.headers["content-type"]
    if (!isJson(contentType)) {
      return yield* new HttpError({
        code: "UNSUPPORTED_MEDIA_TYPE",
        message: contentType === undefined
          ? "Content-Type is missing; send the body as application/json"
          : `Content-Type must be application/json, got ${JSON.stringify(contentType)}`
      })
    }
    const limit = yield* MaxBodyBytes
    // Built only when refused: an error's stack trace cost a twelfth of setOverride's CPU.
    const tooLarge = () =>
      new HttpError({ code: "PAYLOAD_TOO_LARGE", message: `The request body must be at most ${limit} bytes` })
    const declared = Number(request.headers["content-length"])
    if (Number.isFinite(declared) && declared > limit) return yield* tooLarge()
    const body = yield* readText(request, limit)
    if (body._tag === "TooLarge") return yield* tooLarge()
    if (body._tag === "Unreadable") {
      return yield* new HttpError({ code: "BAD_REQUEST", message: "body: could not be read" })
    }
    return yield* parse(body.text)
  })

/** The value of a body's text, or the 400 it gets (nothing, too deep, malformed). */
export const parse = (text: string): Either.Either<unknown, HttpError> => {
  if (text.trim() === "") {
    return Either.left(new HttpError({ code: "BAD_REQUEST", message: "body: must be a JSON object, got nothing" }))
  }
  // Checked before parsing, so that nothing deeper is ever built.
  if (nestsDeeperThan(text, MAX_DEPTH)) {
    return Either.left(
      new HttpError({ code: "BAD_REQUEST", message: `body: nests arrays and objects deeper than ${MAX_DEPTH} levels` })
    )
  }
  try {
    return Either.right(JSON.parse(text) as unknown)
  } catch (error) {
    return Either.left(
      new HttpError({
        code: "BAD_REQUEST",
        message: `body: malformed JSON (${error instanceof Error ? error.message : "unparseable"})`
      })
    )
  }
}

/** `body` if it is a JSON object, else the 400 it gets. */
export const asObject = (body: unknown): Either.Either<Record<string, unknown>, HttpError> =>
  typeof body === "object" && body !== null && !Array.isArray(body)
    ? Either.right(body as Record<string, unknown>)
    : Either.left(
      new HttpError({ code: "BAD_REQUEST", message: `body: must be a JSON object, got ${describeValue(body)}` })
    )

/** True when `contentType` names JSON (parameters such as `charset` allowed). */
export const isJson = (contentType: string | undefined) =>
  contentType?.split(";")[0]!.trim().toLowerCase() === "application/json"

/** The parsed JSON body of `request`, which must be an object. */
export const readObject = (request: HttpServerRequest.HttpServerRequest) => Effect.flatMap(read(request), asObject)
