/**
 * What the standalone server does before it listens: apply the provisioning file, or on an empty
 * store create the default workspace and print its root key once.
 */
import * as Provisioning from "@keymeter/core/Provisioning"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { readFileSync } from "node:fs"

/** Reads, validates and applies the provisioning document at `path`. */
export const provision = (path: string) =>
  Effect.gen(function*() {
    const text = yield* Effect.try({
      try: () => readFileSync(path, "utf8"),
      catch: (error) =>
        new Provisioning.ProvisioningError({
          message: `Cannot read the provisioning file ${path}: ${error instanceof Error ? error.message : error}`
        })
    })
    const json = yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: (error) =>
        new Provisioning.ProvisioningError({
          message: `The provisioning file ${path} is not valid JSON: ${error instanceof Error ? error.message : error}`
        })
    })
    const applied = yield* Provisioning.apply(yield* Provisioning.decode(json))
    yield* Effect.logInfo(
      `Provisioned ${applied.workspaces} workspace(s), ${applied.rootKeys} root key(s), ${applied.apis} api(s), ` +
        `${applied.namespaces} namespace(s) from ${path}`
    )
  })

/** On an empty store, the bootstrap workspace and root key; the key is printed, once. */
export const bootstrap = Effect.gen(function*() {
  const secret = yield* Provisioning.bootstrap
  if (Option.isNone(secret)) return
  yield* Console.log(
    [
      "",
      `keymeter: created workspace ${Provisioning.DEFAULT_WORKSPACE_ID} and a root key holding every permission (*).`,
      "It is shown this once; store it now:",
      "",
      `    ${secret.value}`,
      ""
    ].join("\n")
  )
})

/** Provisioning when a file is given, else the bootstrap. */
export const run = (provisionPath: Option.Option<string>) =>
  Option.match(provisionPath, { onNone: () => bootstrap, onSome: provision })
