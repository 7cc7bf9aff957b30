import { VerificationStore } from "@keymeter/core/Storage"
import { ClickhouseVerificationStore } from "@keymeter/storage-clickhouse"
import { MemoryCatalog } from "@keymeter/storage-memory"
import { ClickhouseTestServer } from "@keymeter/testing"
import { conformance } from "@keymeter/testing/StorageConformance"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** The store on a database of its own for each build, dropped when it is released. */
const fresh = Layer.scoped(
  VerificationStore,
  Effect.flatMap(ClickhouseTestServer.freshDatabase(), (url) => ClickhouseVerificationStore.make({ url }))
)

// Verifications in ClickHouse, the catalog in memory (as the server pairs them with SQLite). Each
// property run creates a database and inserts a few batches (~0.3 s on 18.16): fewer runs.
conformance("clickhouse", Layer.merge(fresh, MemoryCatalog.layer), {
  skip: ClickhouseTestServer.skip(),
  numRuns: 20,
  timeoutMs: 120_000
})
