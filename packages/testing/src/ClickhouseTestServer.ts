/**
 * The ClickHouse server that test suites run against: `KEYMETER_TEST_CLICKHOUSE` (for example
 * `http://127.0.0.1:18123`, as `.ci/run` starts it with storage-clickhouse's `scripts/server.sh`). Without it the
 * ClickHouse suites are skipped with a printed reason, except in CI (`CI` set), where they must run.
 */
import { ClickHouseLogLevel, createClient } from "@clickhouse/client"
import * as Effect from "effect/Effect"

/** The server's URL (no database), or undefined. */
export const url: string | undefined = process.env.KEYMETER_TEST_CLICKHOUSE?.replace(/\/+$/, "") || undefined

/**
 * The server's native TCP port: `KEYMETER_TEST_CLICKHOUSE_NATIVE_PORT`, else the HTTP port + 1
 * (where `scripts/server.sh` puts it).
 */
export const nativePort: number | undefined = url === undefined
  ? undefined
  : Number(process.env.KEYMETER_TEST_CLICKHOUSE_NATIVE_PORT || Number(new URL(url).port) + 1)

/** Why the ClickHouse suites are skipped, or undefined when they run; throws in CI without a server. */
export const skip = (): string | undefined => {
  if (url !== undefined) return undefined
  if (process.env.CI) {
    throw new Error("CI runs the ClickHouse suites: KEYMETER_TEST_CLICKHOUSE must name a server (.ci/run starts one)")
  }
  const reason = "KEYMETER_TEST_CLICKHOUSE is not set"
  console.warn(`ClickHouse suites skipped: ${reason}`)
  return reason
}

let databases = 0

/** A database name of its own for this process. */
export const databaseName = () => `keymeter_test_${process.pid}_${++databases}`

/** Drops a test database. */
export const dropDatabase = (name: string, serverUrl: string = url!) =>
  Effect.promise(async () => {
    const client = createClient({ url: serverUrl, log: { level: ClickHouseLogLevel.OFF } })
    await client.command({ query: `DROP DATABASE IF EXISTS ${name}` }).finally(() => client.close())
  })

/**
 * The URL of a database of its own on the test server, dropped when the scope closes; `through`
 * replaces the server URL (a proxy in front of it, say); `native`: aggregations read over the
 * native protocol (`?native_port=`).
 */
export const freshDatabase = (
  options: { readonly through?: string | undefined; readonly native?: boolean | undefined } = {}
) =>
  Effect.gen(function*() {
    const name = databaseName()
    yield* Effect.addFinalizer(() => dropDatabase(name))
    return `${options.through ?? url}/${name}${options.native === true ? `?native_port=${nativePort}` : ""}`
  })
