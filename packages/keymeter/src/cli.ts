#!/usr/bin/env node
/**
 * The `keymeter` admin command (it administers a SQLite file; see `@keymeter/storage-sqlite`'s Cli).
 */
import "@keymeter/storage-sqlite/bin"
