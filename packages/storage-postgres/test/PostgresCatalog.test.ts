// The PostgreSQL catalog as several servers share it: migrations run once when servers start
// together, a newer schema is refused, and a change made through one server moves every other
// server's revision (notifications, and the poll when the listener went deaf).
import * as Reactivity from "@effect/experimental/Reactivity"
import * as PgClient from "@effect/sql-pg/PgClient"
import { describe, expect, it } from "@effect/vitest"
import { Api } from "@keymeter/core/Api"
import { Catalog } from "@keymeter/core/Storage"
import { Workspace } from "@keymeter/core/Workspace"
import { Migrations, PostgresCatalog } from "@keymeter/storage-postgres"
import { PostgresTestServer } from "@keymeter/testing"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"

const skip = PostgresTestServer.skip()

/** A server's catalog on the database at `url`. */
const server = (url: string, pollMs?: number) =>
  Effect.map(Layer.build(PostgresCatalog.layerUrl(url, { maxConnections: 2, pollMs })), Context.get(Catalog))

/** Runs SQL on the database at `url`, as an operator would. */
const query = (url: string, statement: string) =>
  Effect.scoped(
    Effect.flatMap(PgClient.make({ url: Redacted.make(url), maxConnections: 1 }), (sql) =>
      sql.unsafe<Record<string, unknown>>(statement))
  ).pipe(Effect.provide(Reactivity.layer), Effect.orDie)

/** Waits until `done` holds, polling every millisecond; the time it took, in ms (fails after `ms`). */
const until = (done: () => boolean, ms = 5_000) =>
  Effect.gen(function*() {
    const started = performance.now()
    while (!done()) {
      if (performance.now() - started > ms) return yield* Effect.die(new Error(`not within ${ms} ms`))
      yield* Effect.sleep(1)
    }
    return performance.now() - started
  })

const quantile = (sorted: ReadonlyArray<number>, q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!

describe.skipIf(skip !== undefined)("PostgreSQL catalog shared by servers", () => {
  it.scopedLive("migrates once when four servers start together", () =>
    Effect.gen(function*() {
      const url = yield* PostgresTestServer.freshDatabase()
      const catalogs = yield* Effect.all(Array.from({ length: 4 }, () => server(url)), { concurrency: "unbounded" })
      expect(catalogs).toHaveLength(4)
      const rows = yield* query(url, "SELECT id FROM keymeter_migrations ORDER BY id")
      expect(rows.map((row) => row.id)).toEqual(Migrations.migrations.map((m) => m.id))
    }))

  it.scopedLive("refuses a database migrated by a newer keymeter, with a message", () =>
    Effect.gen(function*() {
      const url = yield* PostgresTestServer.freshDatabase()
      yield* server(url)
      yield* query(url, `INSERT INTO keymeter_migrations (id, name) VALUES (${Migrations.LATEST + 1}, 'future')`)
      const refused = yield* Effect.flip(server(url))
      expect(refused.message).toMatch(
        new RegExp(`schema version ${Migrations.LATEST + 1}, written by a newer keymeter; this version reads up to`)
      )
    }))

  it.scopedLive("a change through one server moves every server's revision at its commit", () =>
    Effect.gen(function*() {
      const url = yield* PostgresTestServer.freshDatabase()
      // The second server polls once a minute: within the test only notifications can move it.
      const [one, two] = yield* Effect.all([server(url), server(url, 60_000)])
      yield* one.putWorkspace(new Workspace({ id: "ws_shared", name: "shared" }))
      const delays: Array<number> = []
      for (let i = 0; i < 50; i++) {
        const before = two.revision!("apis")
        const mine = one.revision!("apis")
        const started = performance.now()
        yield* one.putApi(new Api({ id: `api_${i}`, workspaceId: "ws_shared", name: `api ${i}` }))
        // The writer's own revision moves when the write completes.
        expect(one.revision!("apis")).not.toBe(mine)
        yield* until(() => two.revision!("apis") !== before)
        delays.push(performance.now() - started)
      }
      delays.sort((a, b) => a - b)
      const p50 = quantile(delays, 0.5)
      const p99 = quantile(delays, 0.99)
      console.log(
        `catalog change seen by another server: p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms (50 writes)`
      )
      // Every change was seen, each within `until`'s five seconds, far before the poll.
      expect(delays).toHaveLength(50)
    }))

  it.scopedLive("a deaf listener is noticed by the poll, and listening starts again", () =>
    Effect.gen(function*() {
      const url = yield* PostgresTestServer.freshDatabase()
      const listening = () =>
        query(url, "SELECT pid, application_name AS name FROM pg_stat_activity WHERE query LIKE 'LISTEN%'")
      const writer = yield* server(url)
      // Listening once its catalog is built (it heard itself on the channel).
      const writers = new Set((yield* listening()).map((row) => row.name))
      expect(writers.size).toBe(1)
      const reader = yield* server(url, 200)
      yield* writer.putWorkspace(new Workspace({ id: "ws_deaf", name: "deaf" }))
      // Let the reader's listener and poll settle, then cut every LISTEN connection.
      yield* Effect.sleep(500)
      const before = yield* listening()
      const readers = before.filter((row) => !writers.has(row.name))
      // One reader (a listener it replaced may still show its last LISTEN until cut).
      expect(new Set(readers.map((row) => row.name)).size).toBe(1)
      const readerName = readers[0]!.name
      const readerPids = new Set(readers.map((row) => row.pid))
      const cut = yield* query(
        url,
        "SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE query LIKE 'LISTEN%'"
      )
      expect(cut.length).toBe(before.length)
      const revision = reader.revision!("apis")
      yield* writer.putApi(new Api({ id: "api_after_cut", workspaceId: "ws_deaf", name: "after" }))
      // Seen by the poll (200 ms) although no notification can arrive.
      yield* until(() => reader.revision!("apis") !== revision, 3_000)
      // Listening again: the reader holds a LISTEN connection again, on a new backend.
      const relistened = Effect.map(
        listening(),
        (rows) => rows.some((row) => row.name === readerName && !readerPids.has(row.pid))
      )
      let again = false
      for (let tries = 0; tries < 50 && !again; tries++) {
        again = yield* relistened
        if (!again) yield* Effect.sleep(100)
      }
      expect(again).toBe(true)
      const later = reader.revision!("apis")
      yield* writer.putApi(new Api({ id: "api_later", workspaceId: "ws_deaf", name: "later" }))
      yield* until(() => reader.revision!("apis") !== later, 3_000)
    }))
})
