/**
 * The PostgreSQL server that test suites run against: `KEYMETER_TEST_POSTGRES` (for example
 * `postgres://postgres@127.0.0.1:54329/postgres`, as `.ci/run` starts it with
 * `scripts/postgres-server.sh`). Without it the PostgreSQL suites are skipped with a printed
 * reason, except in CI (`CI` set), where they must run.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"

/** The server's URL (its maintenance database), or undefined. */
export const url: string | undefined = process.env.KEYMETER_TEST_POSTGRES || undefined

/** Why the PostgreSQL suites are skipped, or undefined when they run; throws in CI without a server. */
export const skip = (): string | undefined => {
  if (url !== undefined) return undefined
  if (process.env.CI) {
    throw new Error("CI runs the PostgreSQL suites: KEYMETER_TEST_POSTGRES must name a server (.ci/run starts one)")
  }
  const reason = "KEYMETER_TEST_POSTGRES is not set"
  console.warn(`PostgreSQL suites skipped: ${reason}`)
  return reason
}

let databases = 0

/** Runs `statement` on the server's maintenance database. */
const admin = (statement: string) =>
  Effect.scoped(Effect.flatMap(
    PgClient.make({ url: Redacted.make(url!), maxConnections: 1 }),
    (sql) => sql.unsafe(statement)
  )).pipe(Effect.provide(Reactivity.layer), Effect.orDie)

/** The URL of a database of its own on the test server, dropped when the scope closes. */
export const freshDatabase = () =>
  Effect.gen(function*() {
    const name = `keymeter_test_${process.pid}_${++databases}`
    yield* admin(`CREATE DATABASE ${name}`)
    yield* Effect.addFinalizer(() => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
    const database = new URL(url!)
    database.pathname = `/${name}`
    return database.toString()
  })
