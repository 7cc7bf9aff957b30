/**
 * Running the standalone keymeter server from an Effect program: the same server `npm start` runs,
 * composed by hand, so it can be extended (other storage, extra layers) in code.
 *
 *   node --conditions=@keymeter/source --import tsx examples/standalone.ts
 *
 * It provisions examples/provision.json (workspace ws_acme, root keys sk_acme_admin_8f3e1c7a9b2d4e6f0a1c and
 * sk_acme_reader_5d2b9e4f7c1a3e8b6d0f, api api_main, namespace email) and listens on PORT (default 8787).
 */
import { NodeRuntime } from "@effect/platform-node"
import { Server } from "@keymeter/http"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Startup, StorageSpec } from "keymeter"
import { fileURLToPath } from "node:url"

const port = Number(process.env.PORT ?? 8787)
const host = process.env.HOST ?? "127.0.0.1"
const provisioning = fileURLToPath(new URL("./provision.json", import.meta.url))

const Ready = Layer.effectDiscard(Console.log(`READY http://${host}:${port}`))

const Main = Ready.pipe(
  Layer.provide(Server.layer({ port, host })),
  Layer.provide(Layer.effectDiscard(Startup.provision(provisioning))),
  Layer.provide(StorageSpec.layer({ _tag: "memory" }))
)

Layer.launch(Main).pipe(Effect.orDie, NodeRuntime.runMain)
