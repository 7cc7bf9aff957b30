// Core's Recorder over the memory store: events gathered for the delay and stored as one batch,
// durable events and flushes written at once, and verifications counted by any read after them.
import { describe, expect, it } from "@effect/vitest"
import { Analytics } from "@keymeter/core/Analytics"
import { Api } from "@keymeter/core/Api"
import * as Auth from "@keymeter/core/Auth"
import * as Decision from "@keymeter/core/Decision"
import * as Keymeter from "@keymeter/core/Keymeter"
import { Keys } from "@keymeter/core/Keys"
import { KeyVerifier } from "@keymeter/core/KeyVerifier"
import { Recorder, RecorderDelay } from "@keymeter/core/Recorder"
import { Catalog, VerificationStore } from "@keymeter/core/Storage"
import * as Verification from "@keymeter/core/Verification"
import { Workspace } from "@keymeter/core/Workspace"
import { MemoryStorage } from "@keymeter/storage-memory"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"

const WS = "ws_recorder"
const NOW = Date.UTC(2026, 0, 15, 12)

/** The memory store, counting its appends. */
const appends: Array<number> = []
const Counting = Layer.effect(
  VerificationStore,
  Effect.map(VerificationStore, (store) =>
    VerificationStore.of({
      ...store,
      append: (events) => Effect.zipRight(Effect.sync(() => appends.push(events.length)), store.append(events))
    }))
).pipe(Layer.provideMerge(MemoryStorage.layer))

const Test = Keymeter.layer.pipe(Layer.provideMerge(Counting), Layer.provide(Layer.succeed(RecorderDelay, 250)))

const event = (keyId: string) =>
  Verification.make({ time: NOW, workspaceId: WS, apiId: "api_a", keyId, outcome: "valid" })

/** Lets the writer fiber run what is due. */
const settle = Effect.repeatN(Effect.yieldNow(), 20)

describe("Recorder", () => {
  it.effect("stores what gathered within the delay as one batch", () =>
    Effect.gen(function*() {
      appends.length = 0
      const recorder = yield* Recorder
      // Room at once: queued without running an effect.
      for (let i = 0; i < 100; i++) expect(Exit.isExit(Decision.now(recorder.record(event(`k${i}`), false)))).toBe(true)
      yield* settle
      yield* TestClock.adjust(249)
      yield* settle
      expect(appends).toEqual([])
      expect(recorder.pending()).toBe(true)
      yield* TestClock.adjust(1)
      yield* settle
      expect(appends).toEqual([100])
      expect(recorder.pending()).toBe(false)
    }).pipe(Effect.provide(Test)))

  it.effect("writes at once for a durable event or a flush, with what is queued before it", () =>
    Effect.gen(function*() {
      appends.length = 0
      const recorder = yield* Recorder
      yield* recorder.record(event("a"), false)
      yield* recorder.record(event("b"), false)
      yield* recorder.record(event("c"), true)
      expect(appends).toEqual([3])
      yield* recorder.record(event("d"), false)
      yield* recorder.flush
      expect(appends).toEqual([3, 1])
      // Nothing queued: a flush writes nothing.
      yield* recorder.flush
      expect(appends).toEqual([3, 1])
    }).pipe(Effect.provide(Test)))

  it.effect("a verification is counted by any read that starts after it", () =>
    Effect.gen(function*() {
      const catalog = yield* Catalog
      yield* catalog.putWorkspace(new Workspace({ id: WS, name: "recorder" }))
      yield* catalog.putApi(new Api({ id: "api_a", workspaceId: WS, name: "a" }))
      yield* TestClock.setTime(NOW)
      const keys = yield* Keys
      const verifier = yield* KeyVerifier
      const analytics = yield* Analytics
      const admin = Auth.system(WS)
      const { key } = yield* keys.create(admin, { apiId: "api_a" })
      for (let i = 0; i < 3; i++) yield* verifier.verify(admin, { key: key!, apiId: "api_a" })
      // The clock has not moved: only the read's flush can have stored them.
      const counted = yield* analytics.getVerifications(admin, { apiId: "api_a" })
      expect(counted).toMatchObject([{ total: 3, valid: 3 }])
      yield* verifier.verify(admin, { key: "nope", apiId: "api_a" })
      expect(yield* analytics.getVerifications(admin, { apiId: "api_a" })).toMatchObject([{
        total: 4,
        valid: 3,
        notFound: 1
      }])
    }).pipe(Effect.provide(Test)))
})
