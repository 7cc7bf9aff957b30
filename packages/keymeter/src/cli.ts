#!/usr/bin/env node
/**
 * The `keymeter` admin command. It administers a SQLite file, so it lives with the SQLite adapter
 * (`@keymeter/storage-sqlite`'s Cli), an optional peer: without it, say what to install.
 */
try {
  await import("@keymeter/storage-sqlite/bin")
} catch (error) {
  const missing = (error as { code?: string }).code === "ERR_MODULE_NOT_FOUND" &&
    String((error as Error).message).includes("@keymeter/storage-sqlite")
  if (!missing) throw error
  process.stderr.write(
    "keymeter: the admin CLI works on a SQLite file and needs the package @keymeter/storage-sqlite; " +
      "install it with: npm install @keymeter/storage-sqlite\n"
  )
  process.exitCode = 1
}
