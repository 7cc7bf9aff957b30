/**
 * When the hot paths (`KeyVerifier.verify`, `RateLimiter.limit`) last ran in this process: work
 * that can wait (SQL analytics' slices, see `sql`'s lane) reads it to step aside while they are
 * being asked for, and to run at full speed when they are not. One per process, as the event loop
 * is; a mark costs a store of the clock reading the entry takes anyway.
 */
let lastAt = -Infinity

/** A hot path ran at `at` (performance.now()). */
export const mark = (at: number): void => {
  lastAt = at
}

/** When a hot path last ran (performance.now(); -Infinity: never). */
export const lastRan = (): number => lastAt

/** Ms since a hot path last ran (Infinity: never). */
export const idleFor = (): number => performance.now() - lastAt
