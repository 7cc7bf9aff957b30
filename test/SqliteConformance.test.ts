import { SqliteStorage } from "@keymeter/storage-sqlite"
import { conformance } from "@keymeter/testing/StorageConformance"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

// The default keeps every test's data in the in-memory hot index: queries are answered from it.
conformance("sqlite", SqliteStorage.layer({ filename: ":memory:" }))
// Without the hot index, the rollups and their planner answer everything.
conformance("sqlite, rollups only", SqliteStorage.layer({ filename: ":memory:", hotDays: 0 }))
// Compacting after every write puts whole days on the day tables in nearly every query.
conformance(
  "sqlite, rollups only, compacting eagerly",
  SqliteStorage.layer({ filename: ":memory:", hotDays: 0, compaction: { batchDays: 1 } })
)
// On a file: the catalog's revision is the file's data version, read on a connection of its own.
conformance(
  "sqlite, on a file",
  Layer.unwrapEffect(
    Effect.sync(() =>
      SqliteStorage.layer({ filename: join(mkdtempSync(join(tmpdir(), "keymeter-conformance-")), "keymeter.db") })
    )
  )
)
