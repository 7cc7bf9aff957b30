import { RatelimitStore, VerificationStore } from "@keymeter/core/Storage"
import { ClickhouseRatelimitStore, ClickhouseVerificationStore } from "@keymeter/storage-clickhouse"
import { MemoryCatalog } from "@keymeter/storage-memory"
import { ClickhouseTestServer } from "@keymeter/testing"
import { conformance } from "@keymeter/testing/StorageConformance"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/**
 * Both stores on a database of their own for each build, dropped when it is released; their
 * aggregations read over the native protocol (the stores' own tests read over HTTP).
 */
const fresh = Layer.scopedContext(
  Effect.gen(function*() {
    const url = yield* ClickhouseTestServer.freshDatabase({ native: true })
    const verifications = yield* ClickhouseVerificationStore.make({ url })
    const ratelimits = yield* ClickhouseRatelimitStore.make({ url })
    return Context.make(VerificationStore, verifications).pipe(Context.add(RatelimitStore, ratelimits))
  })
)

// Events in ClickHouse, the catalog in memory (as the server pairs them with SQLite). Each
// property run creates a database and inserts a few batches (~0.3 s on 18.16): fewer runs.
conformance("clickhouse", Layer.merge(fresh, MemoryCatalog.layer), {
  skip: ClickhouseTestServer.skip(),
  numRuns: 20,
  timeoutMs: 120_000
})
