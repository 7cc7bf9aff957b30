/**
 * Entry of the `keymeter` admin command.
 */
import * as Effect from "effect/Effect"
import * as Cli from "./Cli.js"

const argv = process.argv.slice(2)
if (argv.includes("--help") || argv.includes("-h") || argv.length === 0) {
  process.stdout.write(Cli.USAGE + "\n")
  process.exit(argv.length === 0 ? 2 : 0)
}

const exit = await Effect.runPromiseExit(Cli.run(argv))
if (exit._tag === "Success") {
  process.stdout.write(JSON.stringify(exit.value, null, 2) + "\n")
} else {
  const failure = exit.cause._tag === "Fail" ? exit.cause.error as { message?: string; usage?: boolean } : undefined
  process.stderr.write(`keymeter: ${failure?.message ?? "unexpected failure"}\n`)
  if (failure === undefined) process.stderr.write(String(exit.cause) + "\n")
  if (failure?.usage) process.stderr.write("\n" + Cli.USAGE + "\n")
  process.exitCode = failure?.usage ? 2 : 1
}
