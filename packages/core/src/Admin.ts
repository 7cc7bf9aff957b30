/**
 * The `keymeter` admin commands: workspaces, root keys and apis, on any catalog (the CLI picks it
 * from the command line: a SQLite file or a PostgreSQL database), safe beside running servers
 * (they touch only the catalog). Root key secrets are returned once; only their hash is stored.
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { parseArgs } from "node:util"
import { Api } from "./Api.js"
import * as Ids from "./Ids.js"
import * as RootKey from "./RootKey.js"
import { Catalog } from "./Storage.js"
import { Workspace } from "./Workspace.js"

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
      { invalid: `--storage must be sqlite:<path> or a postgres:// URL, got ${JSON.stringify(storage)}` }
  }
  // The server's variable, when it names a catalog (with memory, the default file).
  return (env.KEYMETER_STORAGE !== undefined ? named(env.KEYMETER_STORAGE) : undefined) ?? { sqlite: DEFAULT_FILE }
}

/** A command that cannot be carried out; `usage` when the command line itself is wrong. */
export class AdminError
  extends Data.TaggedError("AdminError")<{ readonly message: string; readonly usage?: boolean }>
{}

const usage = (message: string) => new AdminError({ message, usage: true })

const required = (values: Record<string, unknown>, name: string) =>
  typeof values[name] === "string" && values[name] !== ""
    ? Effect.succeed(values[name] as string)
    : Effect.fail(usage(`--${name} is required`))

const requireWorkspace = (id: string) =>
  Effect.flatMap(Catalog, (catalog) => catalog.getWorkspace(id)).pipe(
    Effect.flatMap(Option.match({
      onNone: () => Effect.fail(new AdminError({ message: `No workspace ${JSON.stringify(id)}` })),
      onSome: Effect.succeed
    }))
  )

/** Runs one command on the catalog in context; the result is what is printed (as JSON). */
export const run = (argv: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const { positionals, values } = yield* Effect.try({
      try: () =>
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
        }),
      catch: (error) => usage(error instanceof Error ? error.message : String(error))
    })
    const catalog = yield* Catalog
    const now = Date.now()
    const command = positionals.join(" ")
    switch (command) {
      case "workspace create": {
        const name = yield* required(values, "name")
        const id = values.id ?? Ids.make(Ids.Prefix.workspace, now)
        if (Option.isSome(yield* catalog.getWorkspace(id))) {
          return yield* new AdminError({ message: `Workspace ${JSON.stringify(id)} already exists` })
        }
        yield* catalog.putWorkspace(new Workspace({ id, name }))
        return { id, name }
      }
      case "workspace list":
        return (yield* catalog.listWorkspaces).map(({ id, name }) => ({ id, name }))
      case "root-key create": {
        const workspaceId = yield* required(values, "workspace")
        const permissions = values.permission ?? []
        if (permissions.length === 0 || permissions.some((p) => p === "")) {
          return yield* usage("--permission is required (repeat it for several; * grants everything)")
        }
        let expiresAt: number | undefined
        if (values["expires-at"] !== undefined) {
          expiresAt = Number(values["expires-at"])
          if (!/^\d+$/.test(values["expires-at"]) || !Number.isSafeInteger(expiresAt)) {
            return yield* usage("--expires-at must be unix milliseconds")
          }
        }
        yield* requireWorkspace(workspaceId)
        const { rootKey, secret: key } = RootKey.mint({
          workspaceId,
          name: values.name ?? "cli",
          permissions,
          now,
          expiresAt
        })
        yield* catalog.putRootKey(rootKey)
        return {
          id: rootKey.id,
          key,
          workspaceId,
          name: rootKey.name,
          permissions,
          ...(expiresAt !== undefined ? { expiresAt } : {})
        }
      }
      case "root-key list": {
        const workspaceId = yield* required(values, "workspace")
        yield* requireWorkspace(workspaceId)
        const keys = yield* catalog.listRootKeys(workspaceId)
        return keys.map(({ hash: _hash, ...key }) => key)
      }
      case "root-key revoke": {
        const workspaceId = yield* required(values, "workspace")
        const id = yield* required(values, "id")
        if (!(yield* catalog.deleteRootKey(workspaceId, id))) {
          return yield* new AdminError({
            message: `No root key ${JSON.stringify(id)} in workspace ${JSON.stringify(workspaceId)}`
          })
        }
        return { id, revoked: true }
      }
      case "api create": {
        const workspaceId = yield* required(values, "workspace")
        const name = yield* required(values, "name")
        yield* requireWorkspace(workspaceId)
        const api = new Api({ id: values.id ?? Ids.make(Ids.Prefix.api, now), workspaceId, name })
        if ((yield* catalog.putApi(api)) === "conflict") {
          return yield* new AdminError({ message: `Api ${JSON.stringify(api.id)} belongs to another workspace` })
        }
        return { apiId: api.id, workspaceId, name }
      }
      default:
        return yield* usage(command === "" ? "A command is required" : `Unknown command: ${command}`)
    }
  })
