/**
 * The Redis server that test suites run against: `KEYMETER_TEST_REDIS` (for example
 * `redis://127.0.0.1:63799/0`, as `.ci/run` starts it with `scripts/redis-server.sh`). Without it
 * the Redis suites are skipped with a printed reason, except in CI (`CI` set), where they must run.
 */

/** The server's URL, or undefined. */
export const url: string | undefined = process.env.KEYMETER_TEST_REDIS || undefined

/** Why the Redis suites are skipped, or undefined when they run; throws in CI without a server. */
export const skip = (): string | undefined => {
  if (url !== undefined) return undefined
  if (process.env.CI) {
    throw new Error("CI runs the Redis suites: KEYMETER_TEST_REDIS must name a server (.ci/run starts one)")
  }
  const reason = "KEYMETER_TEST_REDIS is not set"
  console.warn(`Redis suites skipped: ${reason}`)
  return reason
}

let prefixes = 0

/** A key prefix of its own: suites sharing the server stay apart. */
export const freshPrefix = () => `keymeter_test:${process.pid}:${++prefixes}:`
