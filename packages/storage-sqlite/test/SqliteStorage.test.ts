import { SqliteClient } from "@effect/sql-sqlite-node"
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import * as Aggregation from "@keymeter/core/Aggregation"
import type { AggregationQuery } from "@keymeter/core/Aggregation"
import { Catalog, VerificationStore } from "@keymeter/core/Storage"
import * as Verification from "@keymeter/core/Verification"
import type { Verification as Event } from "@keymeter/core/Verification"
import { Workspace } from "@keymeter/core/Workspace"
import { Migrations, SqliteStorage } from "@keymeter/storage-sqlite"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import { createHash } from "node:crypto"
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const HOUR = 3_600_000
const T0 = Date.parse("2025-01-01T00:00:00Z")
const tempFile = () => join(mkdtempSync(join(tmpdir(), "keymeter-sqlite-")), "k.db")

const event = (time: number, keyId: string, outcome: Event["outcome"] = "valid"): Event =>
  Verification.make({ time, workspaceId: "ws", apiId: "api", keyId, outcome })

const query = (overrides: Partial<AggregationQuery> = {}) =>
  Aggregation.makeQuery({ workspaceId: "ws", apiId: "api", end: T0 + 1000 * HOUR, maxRows: 1000, ...overrides })

const total = (result: { counts: Float64Array; size: number }) => result.counts.reduce((a, b) => a + b, 0)

describe("SqliteStorage", () => {
  it.effect("keeps events and dictionaries across a reopen of the file", () =>
    Effect.gen(function*() {
      const filename = tempFile()
      const write = Effect.flatMap(VerificationStore, (store) =>
        store.append([event(T0, "k1"), event(T0 + HOUR, "k2", "expired"), event(T0 + 30 * HOUR, "k1")]))
      yield* write.pipe(Effect.provide(SqliteStorage.layer({ filename })))
      const reopened = yield* Effect.flatMap(VerificationStore, (store) =>
        Effect.gen(function*() {
          // A new key after the reopen must not reuse a code of the old ones.
          yield* store.append([event(T0 + 31 * HOUR, "k3")])
          return yield* store.aggregate(query({ groupByKey: true }))
        })).pipe(Effect.provide(SqliteStorage.layer({ filename })))
      expect(reopened.keyId).toEqual(["k1", "k2", "k3"])
      expect(Array.from(reopened.counts)).toEqual([
        2,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        1,
        1,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0
      ])
    }))

  it.effect("migrates a database written by an older version, keeping its data", () =>
    Effect.gen(function*() {
      const filename = tempFile()
      // An "older keymeter": only the first migration.
      yield* Effect.gen(function*() {
        yield* Migrator.make({})({
          loader: Migrator.fromRecord({ "0001_catalog": Migrations.migrations["0001_catalog"] })
        })
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO workspaces (id, name) VALUES ('ws_old', 'Old')`
      }).pipe(Effect.provide(SqliteClient.layer({ filename })))
      const workspace = yield* Effect.flatMap(Catalog, (catalog) => catalog.getWorkspace("ws_old")).pipe(
        Effect.provide(SqliteStorage.layer({ filename }))
      )
      expect(workspace._tag).toBe("Some")
      const versions = yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql<{ migration_id: number }>`SELECT migration_id FROM effect_sql_migrations ORDER BY 1`).pipe(
          Effect.provide(SqliteClient.layer({ filename }))
        )
      const known = Object.keys(Migrations.migrations).map((id) =>
        Number(id.split("_")[0])
      )
      expect(versions.map((v) => v.migration_id)).toEqual(known)
      expect(known.length).toBeGreaterThan(1)
    }))

  it.effect("refuses a database from a newer version with a clear message", () =>
    Effect.gen(function*() {
      const filename = tempFile()
      yield* Effect.flatMap(VerificationStore, () => Effect.void).pipe(
        Effect.provide(SqliteStorage.layer({ filename }))
      )
      yield* Effect.flatMap(
        SqlClient.SqlClient,
        (sql) =>
          sql`INSERT INTO effect_sql_migrations (migration_id, name) VALUES (${
            Migrations.LATEST + 7
          }, 'from_the_future')`
      ).pipe(
        Effect.provide(SqliteClient.layer({ filename }))
      )
      const exit = yield* Effect.exit(Effect.void.pipe(Effect.provide(SqliteStorage.layer({ filename }))))
      expect(Exit.isFailure(exit)).toBe(true)
      const error = Exit.isFailure(exit) ? exit.cause.toJSON() : undefined
      expect(JSON.stringify(error)).toMatch(
        new RegExp(`schema version ${Migrations.LATEST + 7}, written by a newer keymeter`)
      )
    }))

  it.effect("refuses another application's database and leaves it byte-identical", () =>
    Effect.gen(function*() {
      const sha256 = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex")
      const opened = (filename: string) =>
        Effect.exit(Effect.void.pipe(Effect.provide(SqliteStorage.layer({ filename }))))
      // Tables of another application, one of them named like one of keymeter's.
      const foreign = tempFile()
      yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
        Effect.all([
          sql`CREATE TABLE apis (name TEXT)`,
          sql`INSERT INTO apis (name) VALUES ('theirs')`,
          sql`CREATE TABLE orders (id INTEGER PRIMARY KEY)`
        ])).pipe(Effect.provide(SqliteClient.layer({ filename: foreign, disableWAL: true })))
      // An empty file marked by another application.
      const marked = tempFile()
      yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe("PRAGMA application_id = 42")).pipe(
        Effect.provide(SqliteClient.layer({ filename: marked, disableWAL: true }))
      )
      for (
        const [file, message] of [
          [foreign, /is not a keymeter database \(it holds tables of another application: apis, orders\)/],
          [marked, /belongs to another application \(its SQLite application_id is 42\)/]
        ] as const
      ) {
        const before = sha256(file)
        const exit = yield* opened(file)
        expect(Exit.isFailure(exit)).toBe(true)
        expect(JSON.stringify(Exit.isFailure(exit) ? exit.cause.toJSON() : undefined)).toMatch(message)
        expect(sha256(file)).toBe(before)
        expect(existsSync(`${file}-wal`)).toBe(false)
      }
    }))

  it.effect("marks its files, and takes its own from before the mark", () =>
    Effect.gen(function*() {
      const filename = tempFile()
      const applicationId = Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql.unsafe<{ application_id: number }>("PRAGMA application_id")
      ).pipe(Effect.map(([row]) => row!.application_id), Effect.provide(SqliteClient.layer({ filename })))
      yield* Effect.void.pipe(Effect.provide(SqliteStorage.layer({ filename })))
      expect(yield* applicationId).toBe(Migrations.APPLICATION_ID)
      // A file written before keymeter marked its files: recognised by its migrations, then marked.
      yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe("PRAGMA application_id = 0")).pipe(
        Effect.provide(SqliteClient.layer({ filename }))
      )
      expect(yield* applicationId).toBe(0)
      const workspace = yield* Effect.flatMap(Catalog, (catalog) =>
        catalog.putWorkspace(new Workspace({ id: "ws_1", name: "one" }))).pipe(
          Effect.provide(SqliteStorage.layer({ filename }))
        )
      expect(workspace).toBe("created")
      expect(yield* applicationId).toBe(Migrations.APPLICATION_ID)
    }))

  it.live(
    "lets one server write a file: a second is refused after waiting, a released lock is taken at once",
    () =>
      Effect.gen(function*() {
        const filename = tempFile()
        const started = Date.now()
        const second = yield* Effect.either(
          Effect.void.pipe(Effect.provide(SqliteStorage.layer({ filename })))
        ).pipe(Effect.provide(SqliteStorage.layer({ filename })))
        expect(Either.isLeft(second) && second.left._tag).toBe("FileInUse")
        expect(Either.isLeft(second) && second.left.message).toMatch(
          new RegExp(`Another keymeter server is writing to ${filename} \\(it holds ${filename}-lock\\)`)
        )
        // It waited for the holder before refusing (a supervisor's restart races the dying process).
        expect(Date.now() - started).toBeGreaterThanOrEqual(4_000)
        // Released with the first store: taken at once, with the lock's file still there.
        expect(existsSync(`${filename}-lock`)).toBe(true)
        const again = Date.now()
        yield* Effect.void.pipe(Effect.provide(SqliteStorage.layer({ filename })))
        expect(Date.now() - again).toBeLessThan(2_000)
      }),
    20_000
  )

  it.effect("ignores a pid-file lock of earlier builds, whoever it names", () =>
    Effect.gen(function*() {
      const filename = tempFile()
      // This very process, and a live unrelated one (pid 1): neither holds the file.
      for (const pid of [process.pid, 1]) {
        writeFileSync(`${filename}.lock`, String(pid))
        const workspace = yield* Effect.flatMap(Catalog, (catalog) =>
          catalog.putWorkspace(new Workspace({ id: `ws_${pid}`, name: "w" }))).pipe(
            Effect.provide(SqliteStorage.layer({ filename }))
          )
        expect(workspace).toBe("created")
      }
    }))

  it.effect("keeps the file, its companions and its folder to their owner", () =>
    Effect.gen(function*() {
      const folder = join(mkdtempSync(join(tmpdir(), "keymeter-sqlite-")), "data")
      const filename = join(folder, "k.db")
      yield* Effect.flatMap(VerificationStore, (store) => store.append([event(T0, "k1")])).pipe(
        Effect.flatMap(() =>
          Effect.sync(() => {
            expect(statSync(folder).mode & 0o777).toBe(0o700)
            for (const suffix of ["", "-wal", "-shm", "-lock"]) {
              expect([suffix, statSync(filename + suffix).mode & 0o777]).toEqual([suffix, 0o600])
            }
          })
        ),
        Effect.provide(SqliteStorage.layer({ filename }))
      )
    }))

  it.live("commits concurrent appends together; a failed transaction fails every caller in it, storing none", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const store = yield* VerificationStore
      // Any transaction that stores the key "poison" fails.
      yield* sql.unsafe(
        "CREATE TEMP TRIGGER poison BEFORE INSERT ON v_keys WHEN NEW.value = 'poison' BEGIN SELECT RAISE(ABORT, 'poisoned'); END"
      )
      // Hold the connection so the writer's next transaction waits and later appends queue up.
      const hold = yield* Effect.fork(sql.withTransaction(Effect.sleep("300 millis")))
      yield* Effect.sleep("20 millis")
      const first = yield* Effect.fork(Effect.either(store.append([event(T0, "first")])))
      yield* Effect.sleep("20 millis")
      const queued = yield* Effect.fork(Effect.all([
        Effect.either(store.append([event(T0, "a1"), event(T0, "a2")])),
        Effect.either(store.append([event(T0, "poison")])),
        Effect.either(store.append([event(T0, "c1")]))
      ], { concurrency: "unbounded" }))
      yield* Fiber.join(hold)
      expect(Either.isRight(yield* Fiber.join(first))).toBe(true)
      const results = yield* Fiber.join(queued)
      expect(results.map(Either.isLeft)).toEqual([true, true, true])
      const stored = yield* store.aggregate(query({ groupByKey: true }))
      expect(stored.keyId).toEqual(["first"])
      // The failed transaction's dictionary entries were forgotten: the same keys store fine now.
      yield* sql.unsafe("DROP TRIGGER poison")
      yield* store.append([event(T0, "a1"), event(T0, "c1")])
      const after = yield* store.aggregate(query({ groupByKey: true }))
      expect([...after.keyId!].sort()).toEqual(["a1", "c1", "first"])
      expect(total(after)).toBe(3)
    }).pipe(Effect.provide(SqliteStorage.layer({ filename: ":memory:" }))))

  // Without the hot index: the rollups must answer.
  it.live("compacts closed days and reads whole days from the day tables", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const store = yield* VerificationStore
      // Days 0 and 1 in full, then one event on day 2: days 0 and 1 close.
      yield* store.append(Array.from({ length: 48 }, (_, h) => event(T0 + h * HOUR, `k${h % 3}`)))
      yield* store.append([event(T0 + 50 * HOUR, "k0")])
      const [[compacted]] = yield* sql.unsafe("SELECT compacted_through FROM v_partitions").values
      expect(compacted).toBe(T0 / 86_400_000 + 1)
      const [[dayRows]] = yield* sql.unsafe("SELECT count(*) FROM r_day_key").values
      expect(dayRows).toBe(6)
      // Remove the hour rows of day 1: a day-bucket query still counts it (it reads day rows),
      // an hour-bucket query no longer does (it reads hour rows).
      yield* sql.unsafe("DELETE FROM r_hour WHERE hour BETWEEN ? AND ?", [T0 / HOUR + 24, T0 / HOUR + 47])
      const days = yield* store.aggregate(query({ timeUnit: "day", groupByKey: true, start: T0, end: T0 + 50 * HOUR }))
      expect(total(days)).toBe(49)
      const hours = yield* store.aggregate(
        query({ timeUnit: "hour", groupByKey: true, start: T0, end: T0 + 50 * HOUR })
      )
      expect(total(hours)).toBe(25)
      // A late event for a compacted day lands in the day tables too.
      yield* store.append([event(T0 + 30 * HOUR, "late")])
      const late = yield* store.aggregate(query({ timeUnit: "day", keyIds: ["late"], start: T0, end: T0 + 50 * HOUR }))
      expect(total(late)).toBe(1)
    }).pipe(Effect.provide(SqliteStorage.layer({ filename: ":memory:", hotDays: 0, compaction: { batchDays: 1 } }))))

  it.live("compacts pending days when the writer is idle", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const store = yield* VerificationStore
      yield* store.append([event(T0, "k"), event(T0 + 25 * HOUR, "k")])
      const compacted = sql.unsafe("SELECT compacted_through FROM v_partitions").values
      expect((yield* compacted)[0]![0]).toBe(-1)
      yield* Effect.sleep("300 millis")
      expect((yield* compacted)[0]![0]).toBe(T0 / 86_400_000)
    }).pipe(Effect.provide(SqliteStorage.layer({ filename: ":memory:", compaction: { idleMs: 100 } }))))

  it.effect("leaves exactly one override row for concurrent sets of one target", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const catalog = yield* Catalog
      yield* catalog.putWorkspace(new Workspace({ id: "ws", name: "w" }))
      yield* sql`INSERT INTO namespaces (id, workspace_id, name) VALUES ('rlns_1', 'ws', 'email')`
      const results = yield* Effect.all(
        Array.from({ length: 25 }, (_, i) =>
          catalog.upsertOverride({
            id: `rlor_${i}`,
            namespaceId: "rlns_1",
            identifier: "user_*",
            limit: i,
            duration: 1000,
            async: false,
            now: i
          })),
        { concurrency: "unbounded" }
      )
      expect(
        new Set(results.map((o) => o.id)).size
      ).toBe(1)
      const rows = yield* sql<{ id: string; limit: number }>`SELECT id, "limit" FROM overrides`
      expect(rows).toHaveLength(1)
      expect(results.map((o) => o.limit)).toContain(rows[0]!.limit)
    }).pipe(Effect.provide(SqliteStorage.layer({ filename: ":memory:" }))))
})
