// The recorders' batching writer on its own: batches by delay, room waited for when full, and
// what is queued at the scope's end stored before it closes.
import { describe, expect, it } from "@effect/vitest"
import * as Decision from "@keymeter/core/Decision"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import * as EventRecorder from "../src/internal/EventRecorder.js"

/** Lets the writer and waiting fibers run what is due. */
const settle = Effect.repeatN(Effect.yieldNow(), 20)

const recorder = (capacity: number, batches: Array<ReadonlyArray<number>>) =>
  EventRecorder.make<number>({
    append: (events) => Effect.sync(() => void batches.push([...events])),
    capacity,
    delay: 100,
    what: "test"
  })

describe("EventRecorder", () => {
  it.scoped("a full queue makes callers wait for room; none is lost, the order kept", () =>
    Effect.gen(function*() {
      const batches: Array<ReadonlyArray<number>> = []
      const r = yield* recorder(4, batches)
      for (let i = 1; i <= 4; i++) expect(Exit.isExit(Decision.now(r.decideRecord(i)))).toBe(true)
      // No room: the next two wait, in order.
      const fifth = r.decideRecord(5)
      expect(Exit.isExit(fifth)).toBe(false)
      const waiting = yield* Effect.fork(Effect.zipRight(fifth, r.decideRecord(6)))
      yield* settle
      expect(waiting.unsafePoll()).toBeNull()
      yield* TestClock.adjust(100)
      yield* settle
      yield* Fiber.join(waiting)
      expect(batches).toEqual([[1, 2, 3, 4]])
      expect(r.pending()).toBe(true)
      yield* TestClock.adjust(100)
      yield* settle
      expect(batches).toEqual([[1, 2, 3, 4], [5, 6]])
      expect(r.pending()).toBe(false)
    }))

  it.scoped("a durable event or a flush writes at once, with what was queued before it", () =>
    Effect.gen(function*() {
      const batches: Array<ReadonlyArray<number>> = []
      const r = yield* recorder(100, batches)
      yield* r.record(1, false)
      yield* r.record(2, true)
      expect(batches).toEqual([[1, 2]])
      yield* r.record(3, false)
      yield* r.flush
      expect(batches).toEqual([[1, 2], [3]])
      yield* r.flush
      expect(batches).toEqual([[1, 2], [3]])
    }))

  it.effect("stores what is still queued when its scope closes", () =>
    Effect.gen(function*() {
      const batches: Array<ReadonlyArray<number>> = []
      const scope = yield* Scope.make()
      const r = yield* Scope.extend(recorder(100, batches), scope)
      for (let i = 0; i < 3; i++) yield* r.record(i, false)
      yield* settle
      yield* Scope.close(scope, Exit.void)
      expect(batches.flat()).toEqual([0, 1, 2])
    }))
})
