import { ClickhouseTestServer } from "@keymeter/storage-clickhouse"
import { MemoryCatalog } from "@keymeter/storage-memory"
import * as Layer from "effect/Layer"
import { conformance } from "./StorageConformance.js"

// Verifications in ClickHouse, the catalog in memory (as the server pairs them with SQLite). Each
// property run creates a database and inserts a few batches (~0.3 s on 18.16): fewer runs.
conformance("clickhouse", Layer.merge(ClickhouseTestServer.layerFresh(), MemoryCatalog.layer), {
  skip: ClickhouseTestServer.skip(),
  numRuns: 20
})
