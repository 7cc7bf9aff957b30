/**
 * The bounds of an override, with no dependencies, so a client (the dashboard's forms) checks
 * the same numbers the server does without bundling the schemas.
 */

/**
 * Shortest and longest window of a limit, in ms: 1 s to 2^53-1 (yearly and longer quotas are
 * real). A `reset` past {@link MAX_TIME} is answered as {@link MAX_TIME}.
 */
export const MIN_DURATION = 1000
export const MAX_DURATION = Number.MAX_SAFE_INTEGER

/** The last time a JavaScript Date represents (unix ms): the latest `reset` answered. */
export const MAX_TIME = 8_640_000_000_000_000

/** Shortest and longest identifier. */
export const MIN_IDENTIFIER_LENGTH = 3
export const MAX_IDENTIFIER_LENGTH = 512
