import { SqliteStorage } from "@keymeter/storage-sqlite"
import { conformance } from "./StorageConformance.js"

conformance("sqlite", SqliteStorage.layer({ filename: ":memory:" }))
