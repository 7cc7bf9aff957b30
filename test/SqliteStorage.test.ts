import { SqliteStorage } from "@keymeter/storage-sqlite"
import { conformance } from "./StorageConformance.js"

conformance("sqlite", SqliteStorage.layer({ filename: ":memory:" }))
// Compacting after every write puts whole days on the day tables in nearly every query.
conformance("sqlite, compacting eagerly", SqliteStorage.layer({ filename: ":memory:", compaction: { batchDays: 1 } }))
