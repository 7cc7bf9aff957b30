#!/usr/bin/env node
/**
 * The `keymeter` admin command: workspaces, root keys and apis on the catalog a command line names
 * (a SQLite file, the default, or a PostgreSQL database), importing that adapter (an optional
 * peer: without it, say what to install). JSON on stdout; errors on stderr with a non-zero exit.
 */
import * as Admin from "@keymeter/core/Admin"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as AdminCommandLine from "./AdminCommandLine.js"
import * as StorageSpec from "./StorageSpec.js"

const argv = process.argv.slice(2)
if (argv.includes("--help") || argv.includes("-h") || argv.length === 0) {
  process.stdout.write(AdminCommandLine.USAGE + "\n")
  process.exit(argv.length === 0 ? 2 : 0)
}

const target = AdminCommandLine.catalogOf(argv, process.env)
const exit = await Effect.runPromiseExit(
  Effect.flatMap(
    "invalid" in target
      ? Effect.fail<Admin.AdminError | StorageSpec.InvalidStorageSpec>(
        new Admin.AdminError({ message: target.invalid, usage: true })
      )
      : StorageSpec.adminCatalog(target),
    (catalog) => Effect.provide(Effect.flatMap(AdminCommandLine.commandOf(argv), Admin.run), catalog)
  ).pipe(
    // stdout is the command's JSON answer: what the adapters log (migrations, say) goes to stderr.
    Effect.provide(Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger)))
  )
)
let code = 0
if (exit._tag === "Success") {
  process.stdout.write(JSON.stringify(exit.value, null, 2) + "\n")
} else {
  const failure = exit.cause._tag === "Fail" ? exit.cause.error as { message?: string; usage?: boolean } : undefined
  process.stderr.write(`keymeter: ${failure?.message ?? "unexpected failure"}\n`)
  if (failure === undefined) process.stderr.write(String(exit.cause) + "\n")
  if (failure?.usage) process.stderr.write("\n" + AdminCommandLine.USAGE + "\n")
  code = failure?.usage ? 2 : 1
}
// Done once the output is flushed: a PostgreSQL client's socket can outlive its closed pool and
// would keep the process waiting.
process.stdout.write("", () => process.exit(code))
