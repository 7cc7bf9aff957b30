/**
 * How core decides on the hot paths, in one vocabulary (see docs/architecture.md):
 *
 * - a **lookup** reads a cache without I/O: the value remembered, or {@link Missing} carrying the
 *   effect that loads it (`CatalogCache.lookup`, `KeyCache.lookupKey`, `Overrides.resolve`);
 * - a **decision** is one synchronous function over what lookups give, returning a {@link Turn}:
 *   decided (an Exit), a {@link Missing} when a lookup missed, or an effect when the decision
 *   itself needs I/O (a credit spend, a shared window);
 * - {@link start} takes a decision's turns until it is decided, loading what was missing between
 *   them;
 * - a hot entry (`KeyVerifier.verify`, `RateLimiter.limit`, `Auth.authenticate`, …) returns
 *   {@link make}'s effect: lazy as any effect (each run decides anew), and {@link now} takes its
 *   first turn at once, for a caller that must not pay for running an effect (the HTTP lane, the
 *   library facade). When memory held everything, that is an Exit, already decided.
 *
 * So the fast path is the first turn of the one decision, never a copy of it.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"

/** What a lookup could not read from memory: `load` reads it from storage into the cache. */
export class Missing<E = never, R = never> {
  constructor(readonly load: Effect.Effect<unknown, E, R>) {}
}

/**
 * One turn of a decision: decided (an Exit), missing something, or needing I/O to finish (an
 * effect). Decided values are Exits, never bare, as values may be effects themselves (an Option).
 */
export type Turn<A, E = never, R = never> = Missing<E, R> | Effect.Effect<A, E, R>

/** Decisions started so far: each one's number tells its turns from other decisions' turns. */
let started = 0
/** The decision whose turn is running; 0 outside any turn. */
let running = 0

/**
 * The decision whose turn is running now (0 outside a turn): a lookup that cannot tell whether what
 * it remembers still holds (a catalog without revision) keeps what it loads for the rest of that
 * decision, whose later turns look it up again, and for no other.
 */
export const current = (): number => running

/**
 * The decision's first turn, now: its Exit when decided from memory; otherwise the effect that
 * finishes it (loading what is missing and deciding again, as often as it takes).
 */
export const start = <A, E, R>(decide: () => Turn<A, E, R>): Effect.Effect<A, E, R> => turns(decide, ++started)

const turns = <A, E, R>(decide: () => Turn<A, E, R>, decision: number): Effect.Effect<A, E, R> => {
  // A turn may start another decision (`now` inside `andThen`): the outer one resumes after it.
  const outer = running
  running = decision
  let turn: Turn<A, E, R>
  try {
    turn = decide()
  } finally {
    running = outer
  }
  return turn instanceof Missing ? Effect.flatMap(turn.load, () => turns(decide, decision)) : turn
}

const FirstTurn = Symbol.for("@keymeter/core/Decision/FirstTurn")

/** The decision as an effect: each run decides anew; {@link now} takes its first turn at once. */
export const make = <A, E, R>(decide: () => Turn<A, E, R>): Effect.Effect<A, E, R> => {
  const effect = Effect.suspend(() => start(decide))
  ;(effect as unknown as Record<symbol, unknown>)[FirstTurn] = decide
  return effect
}

/**
 * The first turn of `effect` now, when it is a decision ({@link make}): its Exit when decided from
 * memory, else the effect that finishes it. Any other effect is returned as it is.
 */
export const now = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  const decide = (effect as unknown as Record<symbol, (() => Turn<A, E, R>) | undefined>)[FirstTurn]
  return decide === undefined ? effect : start(decide)
}

/** Whether `effect` is decided already: an Exit, of its own types. */
export const isDecided = <A, E, R>(effect: Effect.Effect<A, E, R>): effect is Exit.Exit<A, E> => Exit.isExit(effect)

/** The value `lookup` gives, loaded first when memory does not hold it: an Exit when it does. */
export const read = <A, E, R>(lookup: () => A | Missing<E, R>): Effect.Effect<A, E, R> =>
  make(() => {
    const found = lookup()
    return found instanceof Missing ? found : Exit.succeed(found)
  })

/**
 * Goes on with `f` once `turn` is decided: at once when it is decided now, else after it; a
 * failure decided now is the answer. An effect given is taken a first turn of now ({@link now}).
 */
export const andThen = <A, B, E, R, E2, R2>(
  turn: Turn<A, E, R>,
  f: (a: A) => Turn<B, E2, R2>
): Turn<B, E | E2, R | R2> => {
  if (turn instanceof Missing) return turn
  const first = now(turn)
  // A failure decided is the decision's (an Exit too), not an effect that fails.
  if (Exit.isExit(first)) return Exit.isSuccess(first) ? f(first.value as A) : first as Exit.Exit<never, E>
  return Effect.flatMap(first, (a) => start(() => f(a)))
}

/** The failure of a check (an Exit), as any turn's; undefined when the check passed. */
export const failed = <E>(check: Exit.Exit<unknown, E>): Exit.Exit<never, E> | undefined =>
  Exit.isFailure(check) ? check as Exit.Exit<never, E> : undefined
