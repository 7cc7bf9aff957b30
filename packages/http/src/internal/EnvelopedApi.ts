/**
 * The empty api every keymeter api is made from. HttpApi.make hard-codes HttpApiDecodeError's
 * {_tag, issues} body for bad parameters; shadowing the static swaps in our envelope, for the
 * runtime answer and the OpenAPI document alike. The errors added to an api made from it are
 * unified with it.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import type { HttpApiDecodeError } from "@effect/platform/HttpApiError"
import type * as Schema from "effect/Schema"
import { DecodeErrorResponse } from "../Errors.js"

export class EnvelopedApi extends HttpApi.make("keymeter") {
  static override readonly errorSchema: Schema.Schema<HttpApiDecodeError, any> = DecodeErrorResponse
}
