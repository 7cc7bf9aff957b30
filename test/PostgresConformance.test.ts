import { MemoryRatelimitStore, MemoryVerificationStore } from "@keymeter/storage-memory"
import { PostgresCatalog } from "@keymeter/storage-postgres"
import { PostgresTestServer } from "@keymeter/testing"
import { conformance } from "@keymeter/testing/StorageConformance"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** The catalog on a database of its own for each build, dropped when it is released. */
const fresh = Layer.unwrapScoped(
  Effect.map(PostgresTestServer.freshDatabase(), (url) => PostgresCatalog.layerUrl(url, { maxConnections: 4 }))
)

// The catalog in PostgreSQL, verifications in memory (a server pairs it with ClickHouse). Each
// property run creates and migrates a database: fewer runs.
conformance("postgres catalog", Layer.mergeAll(fresh, MemoryVerificationStore.layer, MemoryRatelimitStore.layer), {
  skip: PostgresTestServer.skip(),
  numRuns: 20,
  timeoutMs: 120_000
})
