/**
 * The span of one of the domain's operations, named `<Service>.<operation>`. No stack trace is
 * captured (an Error per call, a few percent of a write request's CPU): the name says where it is.
 * Under Effect's own tracer, which keeps no span, none is made: a span costs ~10 µs (its ids, and
 * the context that carries it), a sixth of a write's work in memory; a tracer a user provides
 * (OpenTelemetry's) gets every span.
 */
import * as Effect from "effect/Effect"

const OPTIONS = { captureStackTrace: false } as const

/** The tracer Effect runs with when none is provided. */
const NATIVE = Effect.runSync(Effect.tracer)

/** Runs the operation in a span called `name`. */
export const span = (name: string) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.tracerWith((tracer) => tracer === NATIVE ? effect : Effect.withSpan(effect, name, OPTIONS))
