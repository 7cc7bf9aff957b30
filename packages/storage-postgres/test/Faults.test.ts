// PostgreSQL going away under a running keymeter: keys it has read keep verifying, writes fail as
// storage errors (503 over HTTP), and everything works again once it is back, without a restart.
import * as Reactivity from "@effect/experimental/Reactivity"
import * as PgClient from "@effect/sql-pg/PgClient"
import { describe, expect, it } from "@effect/vitest"
import { Api } from "@keymeter/core/Api"
import * as Auth from "@keymeter/core/Auth"
import * as Decision from "@keymeter/core/Decision"
import * as Keymeter from "@keymeter/core/Keymeter"
import { Keys } from "@keymeter/core/Keys"
import { KeyVerifier } from "@keymeter/core/KeyVerifier"
import { Catalog } from "@keymeter/core/Storage"
import { Workspace } from "@keymeter/core/Workspace"
import { MemoryRatelimitStore, MemoryVerificationStore } from "@keymeter/storage-memory"
import { PostgresCatalog } from "@keymeter/storage-postgres"
import { PostgresTestServer } from "@keymeter/testing"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"

const skip = PostgresTestServer.skip()

/** Runs SQL on the server's maintenance database, as an operator would. */
const admin = (statement: string) =>
  Effect.scoped(
    Effect.flatMap(PgClient.make({ url: Redacted.make(PostgresTestServer.url!), maxConnections: 1 }), (sql) =>
      sql.unsafe(statement))
  ).pipe(Effect.provide(Reactivity.layer), Effect.orDie)

describe.skipIf(skip !== undefined)("PostgreSQL going away", () => {
  it.scopedLive(
    "cached keys keep verifying, writes fail as storage errors, and it recovers without a restart",
    () =>
      Effect.gen(function*() {
        const url = yield* PostgresTestServer.freshDatabase()
        const database = new URL(url).pathname.slice(1)
        const services = yield* Layer.build(
          Keymeter.layer.pipe(
            Layer.provideMerge(
              Layer.mergeAll(
                PostgresCatalog.layerUrl(url, { maxConnections: 2 }),
                MemoryVerificationStore.layer,
                MemoryRatelimitStore.layer
              )
            )
          )
        )
        yield* Effect.gen(function*() {
          const catalog = yield* Catalog
          const keys = yield* Keys
          const verifier = yield* KeyVerifier
          const principal = Auth.system("ws_faults")
          yield* catalog.putWorkspace(new Workspace({ id: "ws_faults", name: "faults" }))
          yield* catalog.putApi(new Api({ id: "api_faults", workspaceId: "ws_faults", name: "faults" }))
          const { key } = yield* keys.create(principal, { apiId: "api_faults", externalId: "customer" })
          expect((yield* verifier.verify(principal, { key: key! })).code).toBe("VALID")

          // Down: no new connection to the database, the existing ones cut.
          yield* admin(`ALTER DATABASE ${database} ALLOW_CONNECTIONS false`)
          yield* admin(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${database}'`)
          expect((yield* verifier.verify(principal, { key: key! })).code).toBe("VALID")
          // Decided from memory, without an effect run.
          expect(Decision.now(verifier.verify(principal, { key: key! }))).toMatchObject(Exit.succeed({ code: "VALID" }))
          const refused = yield* Effect.flip(keys.create(principal, { apiId: "api_faults" }))
          expect(refused._tag).toBe("StorageError")

          // Back: the next writes work on the same services.
          yield* admin(`ALTER DATABASE ${database} ALLOW_CONNECTIONS true`)
          const created = yield* keys.create(principal, { apiId: "api_faults" }).pipe(
            Effect.retry({ times: 50, while: (error) => error._tag === "StorageError" }),
            Effect.tap(() => Effect.void)
          )
          expect((yield* verifier.verify(principal, { key: created.key! })).code).toBe("VALID")
        }).pipe(Effect.provide(services))
      }),
    30_000
  )
})
