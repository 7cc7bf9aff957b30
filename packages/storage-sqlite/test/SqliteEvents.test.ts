/**
 * The SQLite verification store's events in full (`v_events`): what a scan reads back, page by
 * page and decoded through the dictionaries, the row budget, how long events are kept, and the
 * index the scan reads.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import * as Aggregation from "@keymeter/core/Aggregation"
import type { ScanScope } from "@keymeter/core/EventScan"
import { VerificationStore } from "@keymeter/core/Storage"
import * as Time from "@keymeter/core/Time"
import * as Verification from "@keymeter/core/Verification"
import { SqliteStorage } from "@keymeter/storage-sqlite"
import { columnRows } from "@keymeter/testing/Reference"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Events from "../src/internal/Events.js"

const { DAY, HOUR } = Time
const T0 = Date.parse("2025-03-01T00:00:00Z")

const scope = (fields: Partial<ScanScope> = {}): ScanScope => ({
  workspaceId: "ws",
  within: undefined,
  from: T0,
  to: T0 + DAY,
  maxRows: 1_000_000,
  ...fields
})

describe("SqliteVerificationStore events in full", () => {
  it.effect("scans the events of a scope decoded through the dictionaries, page by page", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0 + DAY)
      yield* Effect.gen(function*() {
        const store = yield* VerificationStore
        yield* store.append([
          Verification.make({
            time: T0 + 5,
            workspaceId: "ws",
            apiId: "a",
            keyId: "k1",
            outcome: "usageExceeded",
            identity: { id: "i1", externalId: "e1" },
            tags: ["b", "a"],
            spentCredits: 7,
            latency: 1.2345678,
            region: "eu-west-1"
          }),
          // Beyond what the columns hold: clamped, as every store does.
          Verification.make({
            time: T0 + HOUR,
            workspaceId: "ws",
            apiId: "b",
            keyId: "k2",
            outcome: "valid",
            spentCredits: 2 ** 40,
            latency: 5_000_000
          }),
          Verification.make({ time: T0 + 6, workspaceId: "ws_other", apiId: "a", keyId: "k1", outcome: "valid" })
        ])
        expect(columnRows(yield* store.scan!(scope()))).toEqual([
          [T0 + 5, "a", "k1", "i1", "e1", "usageExceeded", ["a", "b"], 7, 1.235, "eu-west-1"],
          [T0 + HOUR, "b", "k2", "", "", "valid", [], 2 ** 32 - 1, (2 ** 32 - 1) / 1000, ""]
        ])
        expect(columnRows(yield* store.scan!(scope({ within: ["b", "b", "nope"] })))).toHaveLength(1)
        expect(yield* store.scan!(scope({ within: [] }))).toEqual([])
        expect(columnRows(yield* store.scan!(scope({ from: T0 + 5.5, to: T0 + HOUR })))).toEqual([])
        expect(columnRows(yield* store.scan!(scope({ from: T0 + 4.5, to: T0 + 5.5 })))).toHaveLength(1)

        // 70,000 events of one api: 69 pages of 1,024 rows at most, a batch each; the budget counts across apis.
        const many = Array.from({ length: 70_000 }, (_, i) =>
          Verification.make({
            time: T0 + 2 * HOUR + (i % 1000),
            workspaceId: "ws",
            apiId: "c",
            keyId: `k${i % 3}`,
            outcome: "valid",
            region: i % 2 === 0 ? "us" : ""
          }))
        yield* store.append(many)
        const batches = yield* store.scan!(scope({ within: ["c"] }))
        expect(batches.map((b) => b.length)).toEqual([...Array<number>(68).fill(1_024), 70_000 - 68 * 1_024])
        const rows = columnRows(batches)
        expect(rows.filter((r) => r[9] === "us")).toHaveLength(35_000)
        expect(rows.every((r, i) => i === 0 || (r[0] as number) >= (rows[i - 1]![0] as number))).toBe(true)
        expect((yield* store.scan!(scope({ maxRows: 70_002 }))).reduce((n, b) => n + b.length, 0)).toBe(70_002)
        const error = yield* Effect.flip(store.scan!(scope({ maxRows: 70_001 })))
        expect([error._tag, error.message]).toEqual([
          "QueryTooLarge",
          "The scan would read more than 70001 rows; narrow it with a shorter time range or fewer apis"
        ])
      }).pipe(Effect.provide(SqliteStorage.layer({ filename: ":memory:", compaction: { idleMs: 100 * DAY } })))
    }))

  it.effect("keeps events in full for eventDays, and their counts for good", () =>
    Effect.gen(function*() {
      // Before the writers start (see the rate-limit store's test of decisionDays).
      yield* TestClock.setTime(T0)
      yield* Effect.gen(function*() {
        const store = yield* VerificationStore
        const sql = yield* SqlClient.SqlClient
        const held = Effect.map(sql.unsafe("SELECT count(*) FROM v_events").values, (rows) => rows[0]![0])
        const keys = Effect.map(
          store.scan!(scope({ from: 0, to: T0 + 30 * DAY })),
          (batches) => columnRows(batches).map((r) => r[2])
        )
        const at = (time: number, keyId: string) =>
          Verification.make({ time, workspaceId: "ws", apiId: "a", keyId, outcome: "valid" })
        // Past its days already when it comes: counted, never held.
        yield* store.append([at(T0 - 40 * DAY, "a"), at(T0 - 10 * DAY, "b"), at(T0 - HOUR, "c")])
        expect(yield* held).toBe(2)
        expect(yield* keys).toEqual(["b", "c"])

        // 25 days on, "b" is 35 days old: not answered, and deleted by the writer's next sweep (the
        // second append's commit comes after the first one's sweep).
        yield* TestClock.adjust(25 * DAY)
        expect(yield* keys).toEqual(["c"])
        yield* store.append([at(T0 + 25 * DAY - 1, "d")])
        yield* store.append([at(T0 + 25 * DAY, "e")])
        expect(yield* held).toBe(3)
        expect(yield* keys).toEqual(["c", "d", "e"])
        const counts = yield* store.aggregate(
          Aggregation.makeQuery({
            workspaceId: "ws",
            apiId: "a",
            start: T0 - 50 * DAY,
            end: T0 + 30 * DAY,
            maxRows: 10
          })
        )
        expect(counts.counts.reduce((a, b) => a + b, 0)).toBe(5)
      }).pipe(
        Effect.provide(SqliteStorage.layer({ filename: ":memory:", eventDays: 30, compaction: { idleMs: 100 * DAY } }))
      )
    }))

  it.effect("keeps events across a reopen of the file, and reads them through the (p, time) index in order", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0 + DAY)
      const filename = join(mkdtempSync(join(tmpdir(), "keymeter-events-")), "k.db")
      const layer = SqliteStorage.layer({ filename, compaction: { idleMs: 100 * DAY } })
      yield* Effect.flatMap(VerificationStore, (store) =>
        store.append([
          Verification.make({
            time: T0 + 1,
            workspaceId: "ws",
            apiId: "a",
            keyId: "k",
            outcome: "valid",
            tags: ["t"],
            identity: { id: "i", externalId: "e" },
            region: "r"
          })
        ])).pipe(Effect.provide(layer))
      yield* Effect.gen(function*() {
        const store = yield* VerificationStore
        expect(columnRows(yield* store.scan!(scope()))).toEqual([[
          T0 + 1,
          "a",
          "k",
          "i",
          "e",
          "valid",
          ["t"],
          0,
          0,
          "r"
        ]])
        const sql = yield* SqlClient.SqlClient
        const plan = yield* sql.unsafe(`EXPLAIN QUERY PLAN ${Events.PAGE}`, [0, 0, 1, -1, 0, 10]).values
        const details = plan.map((row) => String(row[3])).join("; ")
        expect(details).toMatch(/USING INDEX v_events_time \(p=\? AND time>\? AND time<\?\)/)
        expect(details).not.toMatch(/TEMP B-TREE/)
      }).pipe(Effect.provide(layer))
    }))
})
