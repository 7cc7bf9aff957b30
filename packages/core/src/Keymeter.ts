/**
 * Every domain service, wired on a Storage: what an embedding Effect program provides once.
 */
import * as Layer from "effect/Layer"
import { Analytics } from "./Analytics.js"
import { Apis } from "./Apis.js"
import * as Auth from "./Auth.js"
import { IdempotencyKeys } from "./IdempotencyKeys.js"
import { Identities } from "./Identities.js"
import { KeyCache } from "./internal/KeyCache.js"
import { Keys } from "./Keys.js"
import { KeyVerifier } from "./KeyVerifier.js"
import { Overrides } from "./Overrides.js"
import { RatelimitAnalytics } from "./RatelimitAnalytics.js"
import { RateLimiter } from "./RateLimiter.js"
import { RatelimitRecorder } from "./RatelimitRecorder.js"
import { Rbac } from "./Rbac.js"
import { Recorder } from "./Recorder.js"
import { Verifications } from "./Verifications.js"
import * as Windows from "./Windows.js"

/**
 * Analytics, RatelimitAnalytics, Verifications, Keys, KeyVerifier, Identities, Rbac, Overrides,
 * RateLimiter, Recorder, RatelimitRecorder, Apis, IdempotencyKeys and Auth
 * over the Storage the caller provides, with the rate-limit windows `windows` gives (shared by
 * servers, say: the Redis adapter's).
 */
export const layerWith = <E, R>(windows: Layer.Layer<Windows.Windows, E, R>) =>
  Layer.mergeAll(
    Analytics.Default,
    RatelimitAnalytics.Default,
    Verifications.Default,
    Apis.Default,
    Keys.Default,
    KeyVerifier.Default
  ).pipe(
    Layer.provideMerge(Layer.merge(Identities.Default, Rbac.Default)),
    // One memory of keys for the services that read and write them; not part of the API.
    Layer.provide(KeyCache.layer),
    Layer.provideMerge(Layer.merge(RateLimiter.Default, Recorder.Default)),
    Layer.provideMerge(Overrides.Default),
    Layer.provideMerge(RatelimitRecorder.Default),
    Layer.provideMerge(IdempotencyKeys.Default),
    Layer.provideMerge(Auth.layer),
    Layer.provideMerge(windows)
  )

/** {@link layerWith} the windows in this process: what one server needs. */
export const layer = layerWith(Windows.layerLocal)
