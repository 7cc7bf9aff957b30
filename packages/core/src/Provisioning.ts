/**
 * Provisioning: a declarative document of workspaces and what they hold, applied idempotently at
 * start; and the first-start bootstrap that gives a new install one usable root key.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Api } from "./Api.js"
import { Namespace } from "./Namespace.js"
import * as RootKey from "./RootKey.js"
import { Catalog } from "./Storage.js"
import * as Validation from "./Validation.js"
import { Workspace } from "./Workspace.js"

/** The document could not be applied; `message` says which entry and why. */
export class ProvisioningError extends Schema.TaggedError<ProvisioningError>()("ProvisioningError", {
  message: Schema.String
}) {}

const Name = Validation.wellFormed(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(255)))

/** Shortest root key secret accepted from a provisioning document. */
export const MIN_SECRET_LENGTH = 32

/** Schema of a provisioning document. */
export const ProvisioningDocument = Schema.Struct({
  workspaces: Schema.Array(Schema.Struct({
    id: Name,
    name: Name,
    rootKeys: Schema.optional(Schema.Array(Schema.Struct({
      // Only an unsalted hash of it is stored: short secrets would be guessed from a copied file.
      key: Schema.String.pipe(
        Schema.minLength(MIN_SECRET_LENGTH, {
          message: () => `must have at least ${MIN_SECRET_LENGTH} characters (only its hash is stored)`
        })
      ),
      name: Schema.optional(Name),
      permissions: Schema.Array(Schema.String.pipe(Schema.minLength(1))),
      expiresAt: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.nonNegative())),
      disabled: Schema.optional(Schema.Boolean)
    }))),
    apis: Schema.optional(Schema.Array(Schema.Struct({ id: Name, name: Name }))),
    namespaces: Schema.optional(Schema.Array(Schema.Struct({ id: Name, name: Name })))
  }))
}).annotations({ identifier: "ProvisioningDocument" })

/** A provisioning document. */
export type ProvisioningDocument = Schema.Schema.Type<typeof ProvisioningDocument>

/** Validates a parsed document. */
export const decode = (input: unknown) =>
  Effect.mapError(
    Validation.decode(ProvisioningDocument)(input),
    (error) => new ProvisioningError({ message: `Invalid provisioning document: ${error.message}` })
  )

/** Summary of what {@link apply} wrote. */
export interface Applied {
  readonly workspaces: number
  readonly rootKeys: number
  readonly apis: number
  readonly namespaces: number
}

/**
 * Writes the document: workspaces, apis and namespaces by id, root keys by the hash of their
 * secret. Applying the same document again changes nothing. An id (or secret) that belongs to
 * another workspace, or a namespace name taken by another id, is an error.
 */
export const apply = (document: ProvisioningDocument) =>
  Effect.gen(function*() {
    const catalog = yield* Catalog
    const now = yield* Clock.currentTimeMillis
    const conflict = (what: string) => Effect.fail(new ProvisioningError({ message: what }))
    let rootKeys = 0
    let apis = 0
    let namespaces = 0
    for (const ws of document.workspaces) {
      yield* catalog.putWorkspace(new Workspace({ id: ws.id, name: ws.name }))
      for (const [index, key] of (ws.rootKeys ?? []).entries()) {
        const result = yield* catalog.putRootKey(
          RootKey.mint({
            workspaceId: ws.id,
            name: key.name ?? `provisioned ${index + 1}`,
            permissions: key.permissions,
            now,
            expiresAt: key.expiresAt,
            disabled: key.disabled,
            secret: key.key
          }).rootKey
        )
        if (result === "conflict") {
          yield* conflict(`workspace ${ws.id}: root key ${index + 1} is already a root key of another workspace`)
        }
        rootKeys++
      }
      for (const api of ws.apis ?? []) {
        const result = yield* catalog.putApi(new Api({ id: api.id, workspaceId: ws.id, name: api.name }))
        if (result === "conflict") yield* conflict(`workspace ${ws.id}: api ${api.id} belongs to another workspace`)
        apis++
      }
      for (const ns of ws.namespaces ?? []) {
        const result = yield* catalog.putNamespace(new Namespace({ id: ns.id, workspaceId: ws.id, name: ns.name }))
        if (result === "conflict") {
          yield* conflict(
            `workspace ${ws.id}: namespace ${ns.id} (${JSON.stringify(ns.name)}) clashes with an existing ` +
              "namespace id or name"
          )
        }
        namespaces++
      }
    }
    return { workspaces: document.workspaces.length, rootKeys, apis, namespaces } satisfies Applied
  })

/** Id of the workspace the bootstrap creates. */
export const DEFAULT_WORKSPACE_ID = "ws_default"

/**
 * On an empty catalog, creates the workspace `ws_default` and a root key holding `*`, and returns
 * that key's secret (the only time it is available). Returns none when the catalog holds anything.
 */
export const bootstrap = Effect.gen(function*() {
  const catalog = yield* Catalog
  if (!(yield* catalog.isEmpty)) return Option.none<string>()
  const now = yield* Clock.currentTimeMillis
  const { rootKey, secret } = RootKey.mint({
    workspaceId: DEFAULT_WORKSPACE_ID,
    name: "bootstrap",
    permissions: ["*"],
    now
  })
  yield* catalog.putWorkspace(new Workspace({ id: DEFAULT_WORKSPACE_ID, name: "Default" }))
  yield* catalog.putRootKey(rootKey)
  return Option.some(secret)
})
