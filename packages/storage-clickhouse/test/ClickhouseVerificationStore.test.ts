import { ClickHouseLogLevel, createClient } from "@clickhouse/client"
import { describe, expect, it } from "@effect/vitest"
import * as Aggregation from "@keymeter/core/Aggregation"
import type { AggregationQuery } from "@keymeter/core/Aggregation"
import { StorageError } from "@keymeter/core/Errors"
import type { ScanScope, VerificationColumns } from "@keymeter/core/EventScan"
import * as Verification from "@keymeter/core/Verification"
import type { Verification as Event } from "@keymeter/core/Verification"
import { ClickhouseVerificationStore, Migrations } from "@keymeter/storage-clickhouse"
import { ClickhouseTestServer } from "@keymeter/testing"
import { columnRows } from "@keymeter/testing/Reference"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"

const HOUR = 3_600_000
const T0 = Date.parse("2025-01-01T00:00:00Z")

const event = (time: number, keyId: string): Event =>
  Verification.make({ time, workspaceId: "ws", apiId: "api", keyId, outcome: "valid" })

const query = (overrides: Partial<AggregationQuery> = {}) =>
  Aggregation.makeQuery({
    workspaceId: "ws",
    apiId: "api",
    start: T0,
    end: T0 + 100 * HOUR,
    maxRows: 1000,
    ...overrides
  })

const total = (result: { counts: Float64Array }) => result.counts.reduce((a, b) => a + b, 0)

/** Each row of the batches (see `columnRows`), by time. */
const rowsOf = (batches: ReadonlyArray<VerificationColumns>) =>
  columnRows(batches).sort((a, b) => (a[0] as number) - (b[0] as number))

const scope = (fields: Partial<ScanScope> = {}): ScanScope => ({
  workspaceId: "ws",
  within: undefined,
  from: T0,
  to: T0 + 100 * HOUR,
  maxRows: 1000,
  ...fields
})

describe("ClickhouseVerificationStore.scanText", () => {
  it("writes the scope as literals: strings escaped, times whole, a row past the budget", () => {
    expect(
      ClickhouseVerificationStore.scanText(scope({
        workspaceId: "ws'; DROP TABLE verifications; --",
        within: ["a\\", "b'", "a\\"],
        from: T0 + 0.5,
        to: T0 + HOUR + 0.5,
        maxRows: 10
      }))
    ).toBe(
      "SELECT time, api_id, key_id, identity_id, external_id, outcome, tags, spent_credits, latency_us, region " +
        "FROM verifications WHERE workspace_id = 'ws\\'; DROP TABLE verifications; --' AND api_id IN ('a\\\\', 'b\\'') " +
        `AND hour >= ${T0 / HOUR} AND hour <= ${T0 / HOUR + 1} AND time >= ${T0 + 1} AND time < ${
          T0 + HOUR + 1
        } LIMIT 11`
    )
    expect(ClickhouseVerificationStore.scanText(scope({ within: [] }))).toBeUndefined()
    expect(ClickhouseVerificationStore.scanText(scope({ from: T0, to: T0 }))).toBeUndefined()
    expect(ClickhouseVerificationStore.scanText(scope({ from: NaN }))).toBeUndefined()
    expect(ClickhouseVerificationStore.scanText(scope({ to: Infinity, maxRows: Infinity }))).toMatch(
      new RegExp(`time < ${Number.MAX_SAFE_INTEGER} LIMIT ${Number.MAX_SAFE_INTEGER}$`)
    )
  })
})

describe("ClickhouseVerificationStore.parseUrl", () => {
  it("takes the database from the path, credentials from the URL, and refuses the rest", () => {
    expect(ClickhouseVerificationStore.parseUrl("http://u:p%40ss@127.0.0.1:8123/analytics")).toEqual({
      url: "http://127.0.0.1:8123",
      database: "analytics",
      username: "u",
      password: "p@ss"
    })
    expect(ClickhouseVerificationStore.parseUrl("https://ch.example:8443/")).toMatchObject({ database: "keymeter" })
    expect(ClickhouseVerificationStore.parseUrl("http://127.0.0.1:8123/analytics?native_port=9000")).toMatchObject({
      url: "http://127.0.0.1:8123",
      database: "analytics",
      nativePort: 9000
    })
    for (
      const [bad, message] of [
        ["not a url", /Not a ClickHouse URL/],
        ["ftp://host/db", /must be http/],
        ["http://host/db;DROP", /Not a usable ClickHouse database name: "db;DROP"/],
        ["http://host/a/b", /Not a usable ClickHouse database name: "a\/b"/],
        ["http://host/db?native_port=", /native_port must be a TCP port \(1 to 65535\), got ""/],
        ["http://host/db?native_port=9000x", /native_port must be a TCP port/],
        ["http://host/db?native_port=0", /native_port must be a TCP port/],
        ["http://host/db?native_port=65536", /native_port must be a TCP port/],
        ["http://host/db?native_port=-1", /native_port must be a TCP port/]
      ] as const
    ) {
      const result = ClickhouseVerificationStore.parseUrl(bad)
      expect(result instanceof StorageError && result.message, bad).toMatch(message)
    }
  })
})

describe.skipIf(ClickhouseTestServer.skip() !== undefined)("ClickhouseVerificationStore on a real server", () => {
  const withDatabase = <A, E>(f: (url: string, database: string) => Effect.Effect<A, E>) =>
    Effect.gen(function*() {
      const database = ClickhouseTestServer.databaseName()
      return yield* f(`${ClickhouseTestServer.url}/${database}`, database).pipe(
        Effect.ensuring(ClickhouseTestServer.dropDatabase(database))
      )
    })
  const open = <A, E>(
    url: string,
    use: (store: Effect.Effect.Success<ReturnType<typeof ClickhouseVerificationStore.make>>) => Effect.Effect<A, E>
  ) => Effect.scoped(Effect.flatMap(ClickhouseVerificationStore.make({ url }), use))
  const run = (database: string, text: string) =>
    Effect.promise(async () => {
      const client = createClient({ url: ClickhouseTestServer.url!, database, log: { level: ClickHouseLogLevel.OFF } })
      await client.command({ query: text }).finally(() => client.close())
    })

  const select = (text: string) =>
    Effect.promise(async () => {
      const client = createClient({ url: ClickhouseTestServer.url!, log: { level: ClickHouseLogLevel.OFF } })
      try {
        const result = await client.query({ query: text, format: "JSONCompact" })
        return (await result.json<Array<unknown>>()).data
      } finally {
        await client.close()
      }
    })

  it.effect("creates its database and schema once, and keeps the data across reopens", () =>
    withDatabase((url) =>
      Effect.gen(function*() {
        yield* open(url, (store) => store.append([event(T0, "k1"), event(T0 + HOUR, "k2")]))
        const result = yield* open(url, (store) => store.aggregate(query({ groupByKey: true })))
        // Rows come in no particular order: core orders them.
        expect([[...result.keyId!].sort(), total(result)]).toEqual([["k1", "k2"], 2])
      })
    ))

  it.effect("refuses a database migrated by a newer keymeter", () =>
    withDatabase((url, database) =>
      Effect.gen(function*() {
        yield* open(url, () => Effect.void)
        yield* run(
          database,
          `INSERT INTO keymeter_migrations (id, name, applied_at) VALUES (${Migrations.LATEST + 3}, 'future', 0)`
        )
        const exit = yield* Effect.exit(open(url, () => Effect.void))
        expect(Exit.isFailure(exit) && JSON.stringify(exit.cause)).toMatch(
          new RegExp(`schema version ${Migrations.LATEST + 3}, written by a newer keymeter`)
        )
      })
    ))

  it.effect("runs a migration again when its record was lost (a start stopped between a step and its record)", () =>
    withDatabase((url, database) =>
      Effect.gen(function*() {
        yield* open(url, (store) => store.append([event(T0, "k1")]))
        // Only migration 1 recorded: migration 2 (ADD COLUMN, CREATE TABLE) runs again over its own work.
        yield* run(database, "DROP TABLE keymeter_migrations")
        yield* run(
          database,
          "CREATE TABLE keymeter_migrations (id UInt32, name String, applied_at Int64) ENGINE = TinyLog"
        )
        yield* run(database, "INSERT INTO keymeter_migrations VALUES (1, 'verifications', 7)")
        const result = yield* open(url, (store) => store.aggregate(query()))
        expect(total(result)).toBe(1)
        // Earlier builds made it TinyLog, which fails reads that overlap a write: it is now MergeTree, records kept.
        const tables = yield* select(
          `SELECT name, engine FROM system.tables WHERE database = '${database}' AND name LIKE 'keymeter_migrations%'`
        )
        expect(tables).toEqual([["keymeter_migrations", "MergeTree"]])
        const earlier = yield* select(
          `SELECT toUInt32(count()) FROM ${database}.keymeter_migrations WHERE applied_at = 7`
        )
        expect(earlier).toEqual([[1]])
      })
    ))

  it.effect("lets several servers start at once on a new database", () =>
    withDatabase((url) =>
      Effect.gen(function*() {
        yield* Effect.forEach(Array.from({ length: 6 }), () => open(url, () => Effect.void), {
          concurrency: "unbounded"
        })
        yield* open(url, (store) => store.append([event(T0, "k1")]))
        const result = yield* open(url, (store) => store.aggregate(query()))
        expect(total(result)).toBe(1)
      })
    ))

  it.effect("with a spool, ships acknowledged events once; a shipment in doubt is settled from the rows there", () =>
    withDatabase((url) =>
      Effect.scoped(Effect.gen(function*() {
        const directory = mkdtempSync(path.join(tmpdir(), "keymeter-spool-"))
        const copy = mkdtempSync(path.join(tmpdir(), "keymeter-spool-"))
        yield* Effect.addFinalizer(() =>
          Effect.sync(() => [directory, copy].forEach((d) => rmSync(d, { recursive: true, force: true })))
        )
        const spooled = (folder: string, target = url) =>
          ClickhouseVerificationStore.make({ url: target, spool: { directory: folder, intervalMs: 3_600_000 } })
        const events = Array.from({ length: 30 }, (_, i) => event(T0 + (i % 3) * 40 * 24 * HOUR + i, `k${i % 5}`))
        yield* Effect.scoped(Effect.gen(function*() {
          const store = yield* spooled(directory)
          yield* Effect.forEach([events.slice(0, 10), events.slice(10, 20), events.slice(20)], (part) =>
            store.append(part), {
            concurrency: "unbounded"
          })
          // Acknowledged, on disk, not yet in ClickHouse (the interval is an hour).
          expect(total(yield* store.aggregate(query({ end: T0 + 90 * 24 * HOUR })))).toBe(0)
          for (const name of readdirSync(directory)) {
            if (name !== "lock") {
              copyFileSync(path.join(directory, name), path.join(copy, name))
            }
          }
        }))
        // Closing shipped them: three 40-day apart, in two partitions.
        const counted = (target: string) =>
          open(target, (store) =>
            store.aggregate(query({ end: T0 + 90 * 24 * HOUR, groupByKey: true })))
        expect(total(yield* counted(url))).toBe(30)
        // The copy, as a crash after its shipment's INSERT would leave it: nothing sent twice.
        const segment = readdirSync(copy).find((name) =>
          name.endsWith(".spool")
        )!
        const stateFile = path.join(copy, "state.json")
        const pending = {
          ...JSON.parse(readFileSync(stateFile, "utf8")),
          pending: statSync(path.join(copy, segment)).size
        }
        writeFileSync(stateFile, JSON.stringify(pending))
        const other = ClickhouseTestServer.databaseName()
        yield* Effect.addFinalizer(() => ClickhouseTestServer.dropDatabase(other))
        const otherCopy = mkdtempSync(path.join(tmpdir(), "keymeter-spool-"))
        for (const name of readdirSync(copy)) copyFileSync(path.join(copy, name), path.join(otherCopy, name))
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(otherCopy, { recursive: true, force: true })))
        yield* Effect.scoped(spooled(copy))
        expect(total(yield* counted(url))).toBe(30)
        // And as a crash before it: the rows are not there, so they are sent.
        const otherUrl = `${ClickhouseTestServer.url}/${other}`
        yield* Effect.scoped(spooled(otherCopy, otherUrl))
        expect(total(yield* counted(otherUrl))).toBe(30)
      }))
    ))

  it.effect("settles a claim its writer left pending from the batch's rows: stored, at work, abandoned, in part", () =>
    withDatabase((url, database) =>
      open(url, (store) =>
        Effect.gen(function*() {
          const NOW = T0 + 100 * HOUR
          const hour = T0 / HOUR
          // A writer that stopped after its claim (state 0), with 0..n of its batch's rows inserted.
          const claim = (key: string, batch: string, events: number, createdAt: number) =>
            run(
              database,
              `INSERT INTO idempotency_receipts VALUES ('ws', '${key}', 'recordVerifications', 'f', '{"recorded":${events}}', ` +
                `'${batch}', ${events}, ${hour}, ${hour}, 0, ${createdAt}, ${createdAt + 24 * HOUR})`
            )
          const rows = (batch: string, n: number) =>
            run(
              database,
              `INSERT INTO verifications (workspace_id, api_id, time, hour, key_id, identity_id, external_id, tags, ` +
                `outcome, batch) VALUES ${
                  Array.from({ length: n }, () => `('ws', 'api', ${T0}, ${hour}, 'k', '', '', [], 0, '${batch}')`).join(
                    ", "
                  )
                }`
            )
          const states = (key: string) =>
            Effect.promise(async () => {
              const client = createClient({
                url: ClickhouseTestServer.url!,
                database,
                log: { level: ClickHouseLogLevel.OFF }
              })
              try {
                const result = await client.query({
                  query: `SELECT state FROM idempotency_receipts WHERE key = '${key}' ORDER BY state`,
                  format: "JSONEachRow"
                })
                // Read before the client closes: closing aborts a response still streaming.
                return ((await result.json()) as Array<{ state: number }>).map((r) => r.state)
              } finally {
                await client.close()
              }
            })

          // Every row there: it was stored; the receipt answers, and is settled for next time.
          yield* claim("stored", "batch_s", 2, NOW - 1000)
          yield* rows("batch_s", 2)
          const stored = yield* store.findReceipt("ws", "stored", NOW)
          expect(Option.map(stored, (r) => r.response)).toEqual(Option.some("{\"recorded\":2}"))
          expect(yield* states("stored")).toEqual([0, 1])

          // No row yet, within the writer's deadline: it may still be at work.
          yield* claim("young", "batch_y", 2, NOW - 1000)
          const young = yield* Effect.flip(store.findReceipt("ws", "young", NOW))
          expect([young._tag, young.message]).toEqual([
            "IdempotencyKeyInUse",
            expect.stringMatching(/has not finished; retry in a few seconds$/)
          ])

          // No row past the deadline (30 s for its INSERT, and a margin): abandoned, the key is free.
          yield* claim("abandoned", "batch_a", 2, NOW - 36_000)
          expect(Option.isNone(yield* store.findReceipt("ws", "abandoned", NOW))).toBe(true)
          yield* store.append([event(T0, "k_again"), event(T0, "k_again")], {
            workspaceId: "ws",
            key: "abandoned",
            operation: "recordVerifications",
            fingerprint: "f",
            response: "{\"recorded\":2}",
            createdAt: NOW,
            expiresAt: NOW + 24 * HOUR
          })
          expect(Option.isSome(yield* store.findReceipt("ws", "abandoned", NOW + 1))).toBe(true)
          expect(total(yield* store.aggregate(query({ keyIds: ["k_again"], end: NOW })))).toBe(2)

          // Some rows only (ClickHouse failed between the parts of a batch): reported, never guessed.
          yield* claim("partial", "batch_p", 3, NOW - 36_000)
          yield* rows("batch_p", 1)
          const partial = yield* Effect.flip(store.findReceipt("ws", "partial", NOW))
          expect(partial.message).toMatch(/stored in part \(1 of 3 events, batch batch_p\)/)
        }))
    ))

  it.effect("scans the scope's rows with what each spent, how long it took and where", () =>
    withDatabase((url) =>
      open(url, (store) =>
        Effect.gen(function*() {
          const odd = "a'\\b\u0000é"
          yield* store.append([
            Verification.make({
              time: T0 + 5,
              workspaceId: "ws",
              apiId: odd,
              keyId: odd,
              outcome: "usageExceeded",
              identity: { id: "i1", externalId: odd },
              tags: ["b", odd],
              spentCredits: 7,
              latency: 1.2345678,
              region: odd
            }),
            Verification.make({
              time: T0 + HOUR,
              workspaceId: "ws",
              apiId: "b",
              keyId: "k2",
              outcome: "valid",
              spentCredits: 2 ** 40,
              latency: 5_000_000
            }),
            Verification.make({ time: T0 + 6, workspaceId: "ws_other", apiId: odd, keyId: "k1", outcome: "valid" })
          ])
          expect(rowsOf(yield* store.scan!(scope()))).toEqual([
            [T0 + 5, odd, odd, "i1", odd, "usageExceeded", [odd, "b"], 7, 1.235, odd],
            [T0 + HOUR, "b", "k2", "", "", "valid", [], 2 ** 32 - 1, (2 ** 32 - 1) / 1000, ""]
          ])
          expect(rowsOf(yield* store.scan!(scope({ within: [odd, "nope"] })))).toHaveLength(1)
          expect(yield* store.scan!(scope({ within: [] }))).toEqual([])
          expect(rowsOf(yield* store.scan!(scope({ from: T0 + 5.5, to: T0 + HOUR })))).toEqual([])
          expect(rowsOf(yield* store.scan!(scope({ from: T0 + 4.5, to: T0 + 5.5 })))).toHaveLength(1)
          expect(rowsOf(yield* store.scan!(scope({ maxRows: 2 })))).toHaveLength(2)
          const error = yield* Effect.flip(store.scan!(scope({ maxRows: 1 })))
          expect([error._tag, error.message]).toEqual([
            "QueryTooLarge",
            "The scan would read more than 1 rows; narrow it with a shorter time range or fewer apis"
          ])
        }))
    ))

  it.effect("adds the columns of migration 4 to a database of migration 3: earlier rows read no details", () =>
    withDatabase((url, database) =>
      Effect.gen(function*() {
        yield* open(url, () => Effect.void)
        // As a keymeter of migration 3 left it (one column added already: a start stopped midway).
        yield* run(database, "ALTER TABLE verifications DROP COLUMN latency_us")
        yield* run(database, "ALTER TABLE verifications DROP COLUMN region")
        yield* run(database, "DROP TABLE keymeter_migrations")
        yield* run(
          database,
          "CREATE TABLE keymeter_migrations (id UInt32, name String, applied_at Int64) ENGINE = MergeTree ORDER BY id"
        )
        yield* run(
          database,
          "INSERT INTO keymeter_migrations VALUES (1, 'verifications', 0), (2, 'idempotency', 0), (3, 'ratelimits', 0)"
        )
        yield* run(
          database,
          `INSERT INTO verifications (workspace_id, api_id, time, hour, key_id, identity_id, external_id, tags, outcome) ` +
            `VALUES ('ws', 'api', ${T0 + 1}, ${T0 / HOUR}, 'old', '', '', [], 0)`
        )
        const rows = yield* open(url, (store) =>
          Effect.zipRight(
            store.append([Verification.make({ ...event(T0 + 2, "new"), spentCredits: 3, latency: 0.5, region: "eu" })]),
            store.scan!(scope())
          ))
        expect(rowsOf(rows)).toEqual([
          [T0 + 1, "api", "old", "", "", "valid", [], 0, 0, ""],
          [T0 + 2, "api", "new", "", "", "valid", [], 3, 0.5, "eu"]
        ])
      })
    ))

  it.effect("reads whole days from the day tables and edge hours from the hour tables", () =>
    withDatabase((url, database) =>
      open(url, (store) =>
        Effect.gen(function*() {
          // Hours 0..71: days 0, 1, 2 whole.
          yield* store.append(Array.from({ length: 72 }, (_, h) => event(T0 + h * HOUR, `k${h % 3}`)))
          // Emptied behind the store's back: only what the day tables hold can still be counted.
          yield* run(database, "TRUNCATE TABLE r_hour_total")
          yield* run(database, "TRUNCATE TABLE r_hour")
          // From hour 5 to hour 71: hours 5..23 would come from hour rows (gone), days 1 and 2 from day rows.
          const days = yield* store.aggregate(query({ timeUnit: "day", start: T0 + 5 * HOUR, end: T0 + 71 * HOUR }))
          expect(total(days)).toBe(48)
          // Grouped by key, days come from r_day_key, which still holds them.
          const keys = yield* store.aggregate(query({ groupByKey: true, start: T0 + 24 * HOUR, end: T0 + 71 * HOUR }))
          expect(total(keys)).toBe(48)
          // An hour-unit query reads hour rows only: nothing left.
          const hours = yield* store.aggregate(query({ timeUnit: "hour", start: T0, end: T0 + 71 * HOUR }))
          expect(hours.size).toBe(0)
          // Hours of chosen keys come from r_hour_key (sorted by key), which still holds them;
          // hours of every key from r_hour (sorted by hour), which does not.
          const chosen = yield* store.aggregate(
            query({ timeUnit: "hour", keyIds: ["k1"], groupByKey: true, end: T0 + 71 * HOUR })
          )
          expect(total(chosen)).toBe(24)
          const everyKey = yield* store.aggregate(query({ timeUnit: "hour", groupByKey: true, end: T0 + 71 * HOUR }))
          expect(everyKey.size).toBe(0)
        }))
    ))
})
