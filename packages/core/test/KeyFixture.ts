// What the Keys and KeyVerifier suites share: a workspace with apis over the memory storage, the
// clock at NOW, and helpers that create and verify keys.
import { Api } from "@keymeter/core/Api"
import * as Auth from "@keymeter/core/Auth"
import * as Keymeter from "@keymeter/core/Keymeter"
import { Keys } from "@keymeter/core/Keys"
import { KeyVerifier } from "@keymeter/core/KeyVerifier"
import { Catalog } from "@keymeter/core/Storage"
import * as Windows from "@keymeter/core/Windows"
import { Workspace } from "@keymeter/core/Workspace"
import { MemoryStorage } from "@keymeter/storage-memory"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"

export const WS = "ws_keys"
export const admin = Auth.system(WS)
export const NOW = Date.UTC(2026, 0, 15, 12)
export const Test = Keymeter.layer.pipe(Layer.provideMerge(MemoryStorage.layer))
/** Windows that look shared (as Redis's do): no sync path, every take and give-back an effect. */
export const SharedWindows = Keymeter.layerWith(
  Layer.sync(Windows.Windows, () => {
    const local = Windows.makeLocal()
    return {
      shared: true,
      takeAll: (requests, now) => Effect.suspend(() => local.takeAll(requests, now)),
      refundAll: (taken, now) => Effect.suspend(() => local.refundAll(taken, now))
    }
  })
)
  .pipe(Layer.provideMerge(MemoryStorage.layer))

export const setup = Effect.gen(function*() {
  const catalog = yield* Catalog
  yield* catalog.putWorkspace(new Workspace({ id: WS, name: "keys" }))
  yield* catalog.putWorkspace(new Workspace({ id: "ws_other", name: "other" }))
  yield* catalog.putApi(new Api({ id: "api_a", workspaceId: WS, name: "a" }))
  yield* catalog.putApi(new Api({ id: "api_b", workspaceId: WS, name: "b" }))
  yield* catalog.putApi(new Api({ id: "api_o", workspaceId: "ws_other", name: "o" }))
  yield* TestClock.setTime(NOW)
  const keys = yield* Keys
  const verifier = yield* KeyVerifier
  return {
    keys,
    verifier,
    // A new key's answer always holds its secret (only an idempotent repeat leaves it out).
    create: (fields: object = {}, principal = admin) =>
      Effect.map(keys.create(principal, { apiId: "api_a", ...fields }), (created) => ({
        keyId: created.keyId,
        key: created.key!
      })),
    verify: (key: string, fields: object = {}, principal = admin) =>
      verifier.verify(principal, { key, ...fields }, { durable: true })
  }
})
