/**
 * The catalog half of the Storage port in PostgreSQL, shared by every server that points at it:
 * workspaces, root keys, apis, namespaces, overrides, identities, keys and credits. Each write that
 * must be atomic is one statement or one transaction; credit spends lock their balance row.
 * Its `revision` of a part moves when any server changes that part of the catalog (see {@link layer}).
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as CatalogPart from "@keymeter/core/CatalogPart"
import { Catalog } from "@keymeter/core/Storage"
import { SqlCatalog } from "@keymeter/storage-sql"
import type * as ConfigError from "effect/ConfigError"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as Migrations from "./Migrations.js"

/** PostgreSQL's ways: booleans, `strpos`, balance rows locked for their transaction. */
export const dialect: SqlCatalog.Dialect = {
  name: "PostgreSQL",
  bool: (value) => value,
  position: "strpos",
  rowLocks: true
}

/** A SQL failure as the port's error; the SQL text and file paths stay in the log. */
export const storageError = SqlCatalog.storageError(dialect)

/** The catalog on the SqlClient in context (migrated). */
export const make = SqlCatalog.make(dialect)

/** How the catalog follows other servers' changes. */
export interface FollowOptions {
  /**
   * How often `catalog_version` is read, in ms (default 1000): the longest another server's change
   * goes unseen when notifications are lost (a LISTEN connection can go deaf without an error).
   */
  readonly pollMs?: number | undefined
}

/**
 * The catalog over the PgClient in context, migrated, with a `revision` per part that moves at once
 * when this server writes it and when a notification says another did (each row written notifies
 * {@link Migrations.CHANNEL} with its table in its transaction, so at its commit);
 * `catalog_version` is polled as a safety net, and the LISTEN connection is made again (every part
 * moved) when the poll finds a change no notification announced.
 */
export const layer = (
  options: FollowOptions = {}
): Layer.Layer<Catalog, Migrations.SchemaError, PgClient.PgClient | SqlClient.SqlClient> =>
  Layer.scoped(
    Catalog,
    Effect.gen(function*() {
      yield* Migrations.run
      const catalog = yield* make
      const pg = yield* PgClient.PgClient
      const sql = yield* SqlClient.SqlClient
      const [{ name: self }] = yield* Effect.orDie(
        sql<{ name: string }>`SELECT current_setting('application_name') AS name`
      )
      const revisions = new CatalogPart.Revisions()
      let overridesRevision = 0
      let notified = false
      const hearing = yield* Deferred.make<void>()
      const listen = pg.listen(Migrations.CHANNEL).pipe(
        Stream.runForEach((payload) =>
          Effect.sync(() => {
            notified = true
            Deferred.unsafeDone(hearing, Exit.void)
            const space = payload.lastIndexOf(" ")
            if (payload.slice(0, space) === self) return
            const table = payload.slice(space + 1)
            // A server saying it listens (see below) changed nothing.
            if (table === "") return
            // A table this version does not know (a newer server's): every part may have moved.
            revisions.move(SqlCatalog.PARTS_OF_TABLE[table] ?? CatalogPart.ALL)
            if (table === "overrides" || table === "namespaces") overridesRevision++
          })
        ),
        Effect.catchAll((error) => Effect.logWarning("PostgreSQL notifications stopped; listening again", error)),
        Effect.zipRight(Effect.sleep(Duration.seconds(1))),
        Effect.forever
      )
      let listener = yield* Effect.forkScoped(listen)
      // The LISTEN is sent by that fiber: until it is registered, other servers' changes would go
      // unheard (seen only by the poll). So the layer is ready once this server hears itself say
      // so (an empty table: no part moves anywhere); past 5 s, it starts anyway and the poll covers.
      yield* pg.notify(Migrations.CHANNEL, `${self} `).pipe(
        Effect.zipRight(Deferred.await(hearing).pipe(Effect.timeoutOption(Duration.millis(100)))),
        Effect.orElseSucceed(Option.none),
        Effect.repeat({ until: Option.isSome, times: 50 }),
        Effect.flatMap((heard) =>
          Option.isSome(heard)
            ? Effect.void
            : Effect.logWarning("PostgreSQL: no notification heard at start; the poll follows other servers")
        )
      )
      const version = Effect.map(
        sql<{ n: number | string }>`SELECT n FROM catalog_version WHERE id = 0`,
        (rows) => Number(rows[0]!.n)
      )
      let seen = yield* Effect.orDie(version)
      yield* Effect.gen(function*() {
        const current = yield* version
        if (current !== seen) {
          seen = current
          if (!notified) {
            // A change nobody announced: the listener may be deaf. Forget, and listen anew.
            revisions.move(CatalogPart.ALL)
            overridesRevision++
            yield* Effect.logWarning("PostgreSQL: a catalog change came without a notification; listening again")
            yield* Fiber.interrupt(listener)
            listener = yield* Effect.forkScoped(listen)
          }
        }
        notified = false
      }).pipe(
        Effect.catchAll((error) => Effect.logWarning("PostgreSQL: could not read the catalog version", error)),
        Effect.repeat(Schedule.spaced(Duration.millis(options.pollMs ?? 1_000))),
        Effect.forkScoped
      )
      return Catalog.of({
        ...CatalogPart.tracking(catalog, revisions),
        revision: revisions.read,
        foreignOverridesRevision: () => overridesRevision
      })
    })
  )

/**
 * {@link layer} on the database at `url` (`postgres://user:pass@host:port/db`), on a pool of its
 * own whose connections carry this server's name (a random one), which notifications name.
 */
export const layerUrl = (
  url: string,
  options: FollowOptions & { readonly maxConnections?: number | undefined } = {}
): Layer.Layer<Catalog, Migrations.SchemaError | SqlError | ConfigError.ConfigError> =>
  layer(options).pipe(
    Layer.provide(PgClient.layer({
      url: Redacted.make(url),
      applicationName: `keymeter-${crypto.randomUUID()}`,
      maxConnections: options.maxConnections ?? 10
    })),
    Layer.provide(Reactivity.layer)
  )
