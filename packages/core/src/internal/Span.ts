/**
 * The span of one of the domain's operations, named `<Service>.<operation>`. No stack trace is
 * captured (an Error per call, a few percent of a write request's CPU): the name says where it is.
 */
import * as Effect from "effect/Effect"

const OPTIONS = { captureStackTrace: false } as const

/** Runs the operation in a span called `name`. */
export const span = (name: string) => Effect.withSpan(name, OPTIONS)
