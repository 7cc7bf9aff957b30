/**
 * The SQLite store's hot range: its background load after open, commits during a load, and the
 * rebuild that drops aged days; answers checked against the reference oracle.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { RememberedAnswers } from "@keymeter/core/Analytics"
import * as Keymeter from "@keymeter/core/Keymeter"
import { SqliteStorage, SqliteVerificationStore } from "@keymeter/storage-sqlite"
import { Reference } from "@keymeter/testing"
import { ask, eventArb, FROM, queryArb, seedCatalog, store, TO, WS } from "@keymeter/testing/StorageConformance"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as Layer from "effect/Layer"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const DAY = 86_400_000

const hotRangeLoaded = Effect.flatMap(SqliteVerificationStore.HotRange, (hotRange) => hotRange.loaded)

const emptyRollups = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  for (
    const table of ["r_hour", "r_hour_total", "r_day", "r_day_total", "r_day_key", "r_day_identity", "r_day_tagset"]
  ) {
    yield* sql.unsafe(`DELETE FROM ${table}`)
  }
})

/** A new file holding the catalog and `events`; resolves with the layer that opens it again. */
const fileHolding = (events: ReadonlyArray<Reference.RawEvent>, hotDays: number) =>
  Effect.gen(function*() {
    const filename = join(mkdtempSync(join(tmpdir(), "keymeter-hot-")), "k.db")
    // Every query asks the store (rollups are emptied behind its back below): no answer remembered.
    const open = Keymeter.layer.pipe(
      Layer.provideMerge(SqliteStorage.layer({ filename, hotDays })),
      Layer.provide(Layer.succeed(RememberedAnswers, 0))
    )
    yield* Effect.zipRight(seedCatalog, store(events)).pipe(Effect.provide(open))
    return open
  })

/**
 * Stores each event in a transaction of its own, a turn of the event loop apart, as a hot-range
 * load's reads are: the commits fall between them.
 */
const storeOneByOne = (events: ReadonlyArray<Reference.RawEvent>, now?: number) =>
  Effect.forEach(
    events,
    (event) =>
      Effect.zipRight(store([event], 1, now), Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))),
    {
      discard: true
    }
  )

/** api_1's answers over [start, end], grouped three ways, are non-empty and equal the reference's over `all`. */
const expectAnswers = (all: ReadonlyArray<Reference.RawEvent>, start: number, end: number) =>
  Effect.forEach([["hour"], ["day", "key"], ["identity", "tags"]], (groupBy) =>
    Effect.gen(function*() {
      const query = { apiId: "api_1", start, end, groupBy }
      const answer = yield* ask(query)
      expect(answer.length).toBeGreaterThan(0)
      expect(answer, JSON.stringify(query)).toEqual(Reference.answer(all, { ...query, workspaceId: WS }))
    }), { discard: true })

describe("SqliteStorage hot index", () => {
  it.effect(
    "counts once every batch committed while the hot range loads in the background",
    () =>
      Effect.gen(function*() {
        const events = FastCheck.sample(eventArb, { numRuns: 3000, seed: 21 })
        const during = FastCheck.sample(eventArb, { numRuns: 400, seed: 22 })
        const open = yield* fileHolding(events, 30)

        yield* Effect.gen(function*() {
          // One transaction per event, a turn of the event loop apart, as the load's reads are: the
          // commits fall between them, into hours already read (memory must take the event) and
          // hours not yet read (the load will read it).
          yield* storeOneByOne(during)
          yield* hotRangeLoaded
          yield* emptyRollups
          const all = [...events, ...during]
          yield* expectAnswers(all, TO - 25 * DAY, TO)
        }).pipe(Effect.provide(open))
      }),
    { timeout: 60_000 }
  )

  it.effect(
    "drops days that age out of the hot range by rebuilding the api beside the live one",
    () =>
      Effect.gen(function*() {
        const events = FastCheck.sample(eventArb, { numRuns: 3000, seed: 31 })
        // The last two days and three newer ones: the range moves on, and an api holding more than
        // hotDays (5) + an eighth is rebuilt while these commits go on, into the hours it rebuilds.
        const later = FastCheck.sample(eventArb, { numRuns: 400, seed: 32 })
          .map((event) => ({ ...event, time: TO - 2 * DAY + (event.time - FROM) % (5 * DAY) }))
        const open = yield* fileHolding(events, 5)

        yield* Effect.gen(function*() {
          yield* hotRangeLoaded
          const held = Effect.flatMap(SqliteVerificationStore.HotRange, (hotRange) => hotRange.events)
          const heldBefore = yield* held
          const cold = { apiId: "api_1", start: TO - 4 * DAY, end: TO + 3 * DAY, groupBy: ["day"] }
          yield* storeOneByOne(later, TO + 4 * DAY)
          yield* hotRangeLoaded
          // Without dropping days, memory would hold what it held and every later event.
          expect(yield* held).toBeLessThan(heldBefore + later.length)
          const all = [...events, ...later]
          expect(yield* ask(cold)).toEqual(Reference.answer(all, { ...cold, workspaceId: WS }))
          yield* emptyRollups
          // Memory still answers the new range, batches committed during the rebuild included...
          yield* expectAnswers(all, TO, TO + 3 * DAY)
          // ... but no longer days before it, which it held before the rebuild: SQL answers (emptied).
          expect(yield* ask(cold)).toEqual(Reference.answer([], { ...cold, workspaceId: WS }))
        }).pipe(Effect.provide(open))
      }),
    { timeout: 60_000 }
  )

  it.effect(
    "reloads the last hotDays days after a reopen; older windows are answered by the rollups",
    () =>
      Effect.gen(function*() {
        const events = FastCheck.sample(eventArb, { numRuns: 3000, seed: 11 })
        const more = FastCheck.sample(eventArb, { numRuns: 300, seed: 12 })
        const open = yield* fileHolding(events, 5)

        yield* Effect.gen(function*() {
          // After the reopen: events in the hot range and late ones before it.
          yield* store(more)
          const all = [...events, ...more]
          for (const query of FastCheck.sample(queryArb, { numRuns: 150, seed: 13 })) {
            expect(yield* ask(query), JSON.stringify(query)).toEqual(
              Reference.answer(all, { ...query, workspaceId: WS })
            )
          }
          // With the rollups emptied behind the store's back, only memory can still answer: windows
          // inside the hot range keep their answers, windows reaching before it come from SQL.
          yield* hotRangeLoaded
          yield* emptyRollups
          const hot = { apiId: "api_1", start: TO - 3 * DAY, end: TO, groupBy: ["day", "key"] }
          const hotAnswer = yield* ask(hot)
          expect(hotAnswer.length).toBeGreaterThan(0)
          expect(hotAnswer).toEqual(Reference.answer(all, { ...hot, workspaceId: WS }))
          const cold = { apiId: "api_1", start: FROM, end: TO }
          expect(yield* ask(cold)).toEqual(Reference.answer([], { ...cold, workspaceId: WS }))
        }).pipe(Effect.provide(open))
      }),
    { timeout: 60_000 }
  )
})
