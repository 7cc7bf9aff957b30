/**
 * Every domain service, wired on a Storage: what an embedding Effect program provides once.
 */
import * as Layer from "effect/Layer"
import { Analytics } from "./Analytics.js"
import { Apis } from "./Apis.js"
import * as Auth from "./Auth.js"
import { IdempotencyKeys } from "./IdempotencyKeys.js"
import { Overrides } from "./Overrides.js"
import { RateLimiter } from "./RateLimiter.js"
import { Verifications } from "./Verifications.js"

/** Analytics, Verifications, Overrides, RateLimiter, Apis, IdempotencyKeys and Auth over the Storage the caller provides. */
export const layer = Layer.mergeAll(Analytics.Default, Verifications.Default, Apis.Default, RateLimiter.Default).pipe(
  Layer.provideMerge(Overrides.Default),
  Layer.provideMerge(IdempotencyKeys.Default),
  Layer.provideMerge(Auth.layer)
)
