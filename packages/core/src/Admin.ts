/**
 * The admin commands: workspaces, root keys and apis, on any catalog, safe beside running servers
 * (they touch only the catalog). Root key secrets are returned once; only their hash is stored.
 * The `keymeter` CLI reads them from a command line (`keymeter/src/AdminCommandLine.ts`).
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Api } from "./Api.js"
import * as Ids from "./Ids.js"
import * as RootKey from "./RootKey.js"
import { Catalog } from "./Storage.js"
import { Workspace } from "./Workspace.js"

/** An admin command, as a command line or a program gives it. */
export type Command = Data.TaggedEnum<{
  WorkspaceCreate: { readonly name: string; readonly id?: string | undefined }
  WorkspaceList: {}
  RootKeyCreate: {
    readonly workspaceId: string
    readonly permissions: ReadonlyArray<string>
    readonly name?: string | undefined
    readonly expiresAt?: number | undefined
  }
  RootKeyList: { readonly workspaceId: string }
  RootKeyRevoke: { readonly workspaceId: string; readonly id: string }
  ApiCreate: { readonly workspaceId: string; readonly name: string; readonly id?: string | undefined }
}>
export const Command = Data.taggedEnum<Command>()

/** A command that cannot be carried out; `usage` when the command itself is wrong. */
export class AdminError
  extends Data.TaggedError("AdminError")<{ readonly message: string; readonly usage?: boolean }>
{}

const requireWorkspace = (id: string) =>
  Effect.flatMap(Catalog, (catalog) => catalog.getWorkspace(id)).pipe(
    Effect.flatMap(Option.match({
      onNone: () => Effect.fail(new AdminError({ message: `No workspace ${JSON.stringify(id)}` })),
      onSome: Effect.succeed
    }))
  )

/** Runs one command on the catalog in context; the result is what is printed (as JSON). */
export const run = (command: Command) =>
  Effect.gen(function*() {
    const catalog = yield* Catalog
    const now = Date.now()
    switch (command._tag) {
      case "WorkspaceCreate": {
        const id = command.id ?? Ids.make(Ids.Prefix.workspace, now)
        if (Option.isSome(yield* catalog.getWorkspace(id))) {
          return yield* new AdminError({ message: `Workspace ${JSON.stringify(id)} already exists` })
        }
        yield* catalog.putWorkspace(new Workspace({ id, name: command.name }))
        return { id, name: command.name }
      }
      case "WorkspaceList":
        return (yield* catalog.listWorkspaces).map(({ id, name }) => ({ id, name }))
      case "RootKeyCreate": {
        const { expiresAt, permissions, workspaceId } = command
        if (permissions.length === 0 || permissions.some((p) => p === "")) {
          return yield* new AdminError({
            message: "--permission is required (repeat it for several; * grants everything)",
            usage: true
          })
        }
        yield* requireWorkspace(workspaceId)
        const { rootKey, secret: key } = RootKey.mint({
          workspaceId,
          name: command.name ?? "cli",
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
      case "RootKeyList": {
        yield* requireWorkspace(command.workspaceId)
        const keys = yield* catalog.listRootKeys(command.workspaceId)
        return keys.map(({ hash: _hash, ...key }) => key)
      }
      case "RootKeyRevoke": {
        const { id, workspaceId } = command
        if (!(yield* catalog.deleteRootKey(workspaceId, id))) {
          return yield* new AdminError({
            message: `No root key ${JSON.stringify(id)} in workspace ${JSON.stringify(workspaceId)}`
          })
        }
        return { id, revoked: true }
      }
      case "ApiCreate": {
        const { name, workspaceId } = command
        yield* requireWorkspace(workspaceId)
        const api = new Api({ id: command.id ?? Ids.make(Ids.Prefix.api, now), workspaceId, name })
        if ((yield* catalog.putApi(api)) === "conflict") {
          return yield* new AdminError({ message: `Api ${JSON.stringify(api.id)} belongs to another workspace` })
        }
        return { apiId: api.id, workspaceId, name }
      }
    }
  })
