/**
 * `keymeter`: administration of a SQLite file, safe beside a running server (it touches only the
 * catalog). Output is JSON on stdout; errors go to stderr with a non-zero exit.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Api } from "@keymeter/core/Api"
import * as Ids from "@keymeter/core/Ids"
import * as RootKey from "@keymeter/core/RootKey"
import { Catalog } from "@keymeter/core/Storage"
import { Workspace } from "@keymeter/core/Workspace"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { parseArgs } from "node:util"
import * as SqliteStorage from "./SqliteStorage.js"

/** Where the server keeps its data by default. */
export const DEFAULT_FILE = "./.keymeter/keymeter.db"

export const USAGE = `Usage: keymeter [--db <file>] <command> [options]

  workspace create --name <name> [--id <id>]
  workspace list
  root-key create --workspace <id> --permission <p> [--permission <p> ...] [--name <name>] [--expires-at <unix ms>]
  root-key list --workspace <id>
  root-key revoke --workspace <id> --id <root key id>
  api create --workspace <id> --name <name> [--id <id>]

The file is --db, else the path of KEYMETER_STORAGE=sqlite:<path>, else ${DEFAULT_FILE}.
The secret of a new root key is printed once; only its hash is stored.`

/** A command that cannot be carried out; `usage` when the command line itself is wrong. */
export class CliError extends Data.TaggedError("CliError")<{ readonly message: string; readonly usage?: boolean }> {}

const usage = (message: string) => new CliError({ message, usage: true })

const required = (values: Record<string, unknown>, name: string) =>
  typeof values[name] === "string" && values[name] !== ""
    ? Effect.succeed(values[name] as string)
    : Effect.fail(usage(`--${name} is required`))

const requireWorkspace = (id: string) =>
  Effect.flatMap(Catalog, (catalog) => catalog.getWorkspace(id)).pipe(
    Effect.flatMap(Option.match({
      onNone: () => Effect.fail(new CliError({ message: `No workspace ${JSON.stringify(id)}` })),
      onSome: Effect.succeed
    }))
  )

/** The file a command line names. */
export const fileOf = (argv: ReadonlyArray<string>, env: NodeJS.ProcessEnv) => {
  const at = argv.indexOf("--db")
  if (at >= 0 && argv[at + 1] !== undefined) return argv[at + 1]!
  const storage = env.KEYMETER_STORAGE
  if (storage?.startsWith("sqlite:")) return storage.slice("sqlite:".length)
  return DEFAULT_FILE
}

/** Runs one command; the result is what is printed. */
export const run = (argv: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const { positionals, values } = yield* Effect.try({
      try: () =>
        parseArgs({
          args: [...argv],
          allowPositionals: true,
          options: {
            db: { type: "string" },
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
    const sql = yield* SqlClient.SqlClient
    const now = Date.now()
    const command = positionals.join(" ")
    switch (command) {
      case "workspace create": {
        const name = yield* required(values, "name")
        const id = values.id ?? Ids.make(Ids.Prefix.workspace, now)
        if (Option.isSome(yield* catalog.getWorkspace(id))) {
          return yield* new CliError({ message: `Workspace ${JSON.stringify(id)} already exists` })
        }
        yield* catalog.putWorkspace(new Workspace({ id, name }))
        return { id, name }
      }
      case "workspace list":
        return yield* sql<{ id: string; name: string }>`SELECT id, name FROM workspaces ORDER BY id`
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
          return yield* new CliError({
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
          return yield* new CliError({ message: `Api ${JSON.stringify(api.id)} belongs to another workspace` })
        }
        return { apiId: api.id, workspaceId, name }
      }
      default:
        return yield* usage(command === "" ? "A command is required" : `Unknown command: ${command}`)
    }
  }).pipe(Effect.provide(SqliteStorage.layerCatalog({ filename: fileOf(argv, process.env) })))
