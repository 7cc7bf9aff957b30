/**
 * The `keymeter` admin command line: which catalog it names (a SQLite file or a PostgreSQL
 * database) and which of core's admin commands (`Admin.Command`) it asks for.
 */
import * as Admin from "@keymeter/core/Admin"
import { redactUrl } from "@keymeter/core/Errors"
import * as Either from "effect/Either"
import { parseArgs } from "node:util"

/** Where the standalone server keeps its data by default. */
export const DEFAULT_FILE = "./.keymeter/keymeter.db"

export const USAGE = `Usage: keymeter [--db <file> | --storage <sqlite:<file> | postgres://...>] <command> [options]

  workspace create --name <name> [--id <id>]
  workspace list
  root-key create --workspace <id> --permission <p> [--permission <p> ...] [--name <name>] [--expires-at <unix ms>]
  root-key list --workspace <id>
  root-key revoke --workspace <id> --id <root key id>
  api create --workspace <id> --name <name> [--id <id>]

The catalog is --db (a SQLite file) or --storage, else KEYMETER_STORAGE (sqlite:<path> or a
postgres:// URL), else ${DEFAULT_FILE}.
The secret of a new root key is printed once; only its hash is stored.`

/** The catalog a command line names: a SQLite file or a PostgreSQL URL (or why `--storage` names neither). */
export const catalogOf = (
  argv: ReadonlyArray<string>,
  env: Record<string, string | undefined>
): { readonly sqlite: string } | { readonly postgres: string } | { readonly invalid: string } => {
  const at = (flag: string) => {
    const i = argv.indexOf(flag)
    return i >= 0 ? argv[i + 1] : undefined
  }
  const named = (storage: string) =>
    /^postgres(ql)?:\/\//.test(storage)
      ? { postgres: storage }
      : storage.startsWith("sqlite:") && storage.length > "sqlite:".length
      ? { sqlite: storage.slice("sqlite:".length) }
      : undefined
  const db = at("--db")
  if (db !== undefined) return { sqlite: db }
  const storage = at("--storage")
  if (storage !== undefined) {
    return named(storage) ??
      { invalid: `--storage must be sqlite:<path> or a postgres:// URL, got ${JSON.stringify(redactUrl(storage))}` }
  }
  // The server's variable, when it names a catalog (with memory, the default file).
  return (env.KEYMETER_STORAGE !== undefined ? named(env.KEYMETER_STORAGE) : undefined) ?? { sqlite: DEFAULT_FILE }
}

const usage = (message: string) => Either.left(new Admin.AdminError({ message, usage: true }))

/** The command a command line asks for, or the usage error it is. */
export const commandOf = (argv: ReadonlyArray<string>): Either.Either<Admin.Command, Admin.AdminError> => {
  let parsed: ReturnType<typeof parse>
  try {
    parsed = parse(argv)
  } catch (error) {
    return usage(error instanceof Error ? error.message : String(error))
  }
  const { positionals, values } = parsed
  const required = (name: "name" | "workspace" | "id") => {
    const value = values[name]
    return typeof value === "string" && value !== "" ? value : undefined
  }
  const missing = (name: string) => usage(`--${name} is required`)
  const command = positionals.join(" ")
  switch (command) {
    case "workspace create": {
      const name = required("name")
      return name === undefined ? missing("name") : Either.right(Admin.Command.WorkspaceCreate({ name, id: values.id }))
    }
    case "workspace list":
      return Either.right(Admin.Command.WorkspaceList())
    case "root-key create": {
      const workspaceId = required("workspace")
      if (workspaceId === undefined) return missing("workspace")
      let expiresAt: number | undefined
      const given = values["expires-at"]
      if (given !== undefined) {
        expiresAt = Number(given)
        if (!/^\d+$/.test(given) || !Number.isSafeInteger(expiresAt)) {
          return usage("--expires-at must be unix milliseconds")
        }
      }
      return Either.right(
        Admin.Command.RootKeyCreate({ workspaceId, permissions: values.permission ?? [], name: values.name, expiresAt })
      )
    }
    case "root-key list": {
      const workspaceId = required("workspace")
      return workspaceId === undefined ? missing("workspace") : Either.right(Admin.Command.RootKeyList({ workspaceId }))
    }
    case "root-key revoke": {
      const workspaceId = required("workspace")
      if (workspaceId === undefined) return missing("workspace")
      const id = required("id")
      return id === undefined ? missing("id") : Either.right(Admin.Command.RootKeyRevoke({ workspaceId, id }))
    }
    case "api create": {
      const workspaceId = required("workspace")
      if (workspaceId === undefined) return missing("workspace")
      const name = required("name")
      return name === undefined
        ? missing("name")
        : Either.right(Admin.Command.ApiCreate({ workspaceId, name, id: values.id }))
    }
    default:
      return usage(command === "" ? "A command is required" : `Unknown command: ${command}`)
  }
}

const parse = (argv: ReadonlyArray<string>) =>
  parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      db: { type: "string" },
      storage: { type: "string" },
      name: { type: "string" },
      id: { type: "string" },
      workspace: { type: "string" },
      permission: { type: "string", multiple: true },
      "expires-at": { type: "string" }
    }
  })
