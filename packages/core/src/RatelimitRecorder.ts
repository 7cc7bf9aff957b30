/**
 * Records every decision of the limiter without making it wait: batched in the background exactly
 * as verifications are (see `Recorder`, whose capacity and delay it shares), into the
 * `RatelimitStore`. Rate-limit analytics reads call `flush` first.
 */
import * as Effect from "effect/Effect"
import type { RatelimitEvent } from "./RatelimitEvent.js"
import { makeRecorder } from "./Recorder.js"
import { RatelimitStore } from "./Storage.js"

/** Stores rate-limit decision events in the background, in batches. */
export class RatelimitRecorder extends Effect.Service<RatelimitRecorder>()("@keymeter/core/RatelimitRecorder", {
  scoped: Effect.flatMap(RatelimitStore, (store) => makeRecorder<RatelimitEvent>("rate-limit decision", store.append))
}) {}
