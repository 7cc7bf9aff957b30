/**
 * When the hot paths (`KeyVerifier.verify`, `RateLimiter.limit`) last ran in this process: work
 * that can wait (SQL analytics' slices, see `sql`'s lane) reads it to step aside while they are
 * being asked for, and to run at full speed when they are not. One per process, as the event loop
 * is: a worker thread that runs such work (SQLite's SQL worker) follows the cell of the thread it
 * serves ({@link follow}). A mark costs a store of the clock reading the entry takes anyway.
 */

/** The last mark, as ms since the epoch (each thread's `performance.now()` counts from its own origin). */
let cell = new Float64Array(new SharedArrayBuffer(8)).fill(-Infinity)

/** A hot path ran at `at` (performance.now()). */
export const mark = (at: number): void => {
  cell[0] = performance.timeOrigin + at
}

/** When a hot path last ran (performance.now() of this thread; -Infinity: never). */
export const lastRan = (): number => cell[0]! - performance.timeOrigin

/** Ms since a hot path last ran (Infinity: never). */
export const idleFor = (): number => performance.now() - lastRan()

/** The memory the marks are kept in, for a worker thread to {@link follow}. */
export const shared = (): SharedArrayBuffer => cell.buffer as SharedArrayBuffer

/** Reads (and marks) the cell of the thread that gave `buffer` ({@link shared}) from now on. */
export const follow = (buffer: SharedArrayBuffer): void => {
  cell = new Float64Array(buffer)
}
