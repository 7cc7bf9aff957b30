import { SqliteStorage } from "@keymeter/storage-sqlite"
import { conformance } from "@keymeter/testing/StorageConformance"

// The default keeps every test's data in the in-memory hot index: queries are answered from it.
conformance("sqlite", SqliteStorage.layer({ filename: ":memory:" }))
// Without the hot index, the rollups and their planner answer everything.
conformance("sqlite, rollups only", SqliteStorage.layer({ filename: ":memory:", hotDays: 0 }))
// Compacting after every write puts whole days on the day tables in nearly every query.
conformance(
  "sqlite, rollups only, compacting eagerly",
  SqliteStorage.layer({ filename: ":memory:", hotDays: 0, compaction: { batchDays: 1 } })
)
