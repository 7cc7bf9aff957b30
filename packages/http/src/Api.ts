/**
 * The whole HTTP contract: Unkey's two dialects, /v1 (`v1/Api`) and /v2 (`v2/Api`), in one HttpApi
 * that the server, the OpenAPI document and typed clients derive from.
 */
import * as OpenApi from "@effect/platform/OpenApi"
import { EnvelopedApi } from "./internal/EnvelopedApi.js"
import { V1, V1Open } from "./v1/Api.js"
import { V2 } from "./v2/Api.js"

/** The whole keymeter HTTP API. */
export class Api extends EnvelopedApi
  .addHttpApi(V1)
  .addHttpApi(V1Open)
  .addHttpApi(V2)
  .annotate(OpenApi.Title, "keymeter")
  .annotate(OpenApi.Version, "2")
  .annotate(
    OpenApi.Description,
    "Usage analytics, keys and rate limits, in Unkey's two dialects. /v1 errors answer " +
      "{\"error\":{\"code\",\"message\",\"docs\",\"requestId\"}}; /v2 answers {\"meta\":{\"requestId\"},\"data\"} " +
      "and errors {\"meta\",\"error\":{\"title\",\"detail\",\"status\",\"type\",\"errors\"}}."
  )
{}
