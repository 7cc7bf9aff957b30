/**
 * JSON already encoded — a SQL answer's rows, encoded on the thread that computed them — written
 * into a response body as its bytes are, rather than decoded and encoded again on the serving
 * thread.
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"

/** UTF-8 bytes of one JSON value. */
export class JsonText {
  constructor(readonly bytes: Uint8Array) {}
}

/**
 * The response `HttpServerResponse.unsafeJson({ ...head, [field]: value })` would be, `text` being
 * the JSON of `value`: `field` last, its text as it is.
 */
export const response = (head: object, field: string, text: JsonText): HttpServerResponse.HttpServerResponse => {
  const opened = JSON.stringify(head).slice(0, -1)
  const before = `${opened}${opened === "{" ? "" : ","}${JSON.stringify(field)}:`
  return HttpServerResponse.uint8Array(Buffer.concat([Buffer.from(before), text.bytes, Buffer.from("}")]), {
    contentType: "application/json"
  })
}
