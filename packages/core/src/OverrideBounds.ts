/**
 * The bounds of an override, with no dependencies, so a client (the dashboard's forms) checks
 * the same numbers the server does without bundling the schemas.
 */

/** Shortest and longest window of a limit, in ms: 1 s to 30 days, so `reset` (now + window) is always a valid time. */
export const MIN_DURATION = 1000
export const MAX_DURATION = 30 * 86_400_000

/** Shortest and longest identifier. */
export const MIN_IDENTIFIER_LENGTH = 3
export const MAX_IDENTIFIER_LENGTH = 512
