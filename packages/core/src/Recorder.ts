/**
 * Records the verifications keymeter makes itself (`keys.verifyKey`) without making them wait for
 * storage: batched in the background (see `internal/EventRecorder`). A caller may wait for its
 * event to be stored (`durable`), and analytics reads call `flush` first, so a verification is
 * counted by any read that starts after it. When the queue is full, verifications wait for room
 * rather than lose events.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type { StorageError } from "./Errors.js"
import * as EventRecorder from "./internal/EventRecorder.js"
import { VerificationStore } from "./Storage.js"
import type { Verification } from "./Verification.js"

/** Events waiting at most (per recorder); past it, recording waits for the writer. */
export class RecorderCapacity extends Context.Reference<RecorderCapacity>()("@keymeter/core/Recorder/Capacity", {
  defaultValue: () => 100_000
}) {}

/**
 * Longest an event waits to be stored, in ms (unless a durable verification or an analytics read
 * makes the writer write at once): what a crash of the process can lose.
 */
export class RecorderDelay extends Context.Reference<RecorderDelay>()("@keymeter/core/Recorder/Delay", {
  defaultValue: () => 100
}) {}

/** A batching recorder of `what` events into `append`, tuned by {@link RecorderCapacity} and {@link RecorderDelay}. */
export const makeRecorder = <A>(
  what: string,
  append: (events: ReadonlyArray<A>) => Effect.Effect<void, StorageError>
) =>
  Effect.flatMap(
    Effect.all([RecorderCapacity, RecorderDelay]),
    ([capacity, delay]) => EventRecorder.make({ append, capacity, delay, what })
  )

/** Stores verification events in the background, in batches. */
export class Recorder extends Effect.Service<Recorder>()("@keymeter/core/Recorder", {
  scoped: Effect.flatMap(VerificationStore, (store) => makeRecorder<Verification>("verification", store.append))
}) {}
