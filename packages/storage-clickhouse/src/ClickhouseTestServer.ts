/**
 * The ClickHouse server that test suites run against: `KEYMETER_TEST_CLICKHOUSE` (for example
 * `http://127.0.0.1:18123`, as `.ci/run` starts it with `scripts/server.sh`). Without it the
 * ClickHouse suites are skipped with a printed reason, except in CI (`CI` set), where they must run.
 */
import { ClickHouseLogLevel, createClient } from "@clickhouse/client"
import type { StorageError } from "@keymeter/core/Errors"
import { VerificationStore } from "@keymeter/core/Storage"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ClickhouseVerificationStore from "./ClickhouseVerificationStore.js"

/** The server's URL (no database), or undefined. */
export const url: string | undefined = process.env.KEYMETER_TEST_CLICKHOUSE?.replace(/\/+$/, "") || undefined

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
 * The store on a database of its own for each build of the layer, dropped when it is released;
 * `through` replaces the server URL (a proxy in front of it, say).
 */
export const layerFresh = (
  options: Partial<ClickhouseVerificationStore.Options> & { readonly through?: string | undefined } = {}
): Layer.Layer<VerificationStore, StorageError> =>
  Layer.scoped(
    VerificationStore,
    Effect.gen(function*() {
      const name = databaseName()
      yield* Effect.addFinalizer(() => dropDatabase(name))
      return yield* ClickhouseVerificationStore.make({ ...options, url: `${options.through ?? url}/${name}` })
    })
  )
