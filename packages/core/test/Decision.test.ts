// Decisions: the first turn is taken at once, what is missing is loaded and the decision taken
// again, the entry is lazy (each run decides anew), and decisions compose without an effect.
import { describe, expect, it } from "@effect/vitest"
import * as Decision from "@keymeter/core/Decision"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"

/** A cache of one value, loaded on a miss, counting decisions and loads. */
const cached = () => {
  let value: number | undefined
  const counts = { decided: 0, loaded: 0 }
  const lookup = () =>
    value ?? new Decision.Missing(Effect.sync(() => {
      counts.loaded++
      value = 21
    }))
  const decide = () => {
    counts.decided++
    const found = lookup()
    return found instanceof Decision.Missing ? found : Exit.succeed(found * 2)
  }
  return { counts, decide }
}

describe("Decision", () => {
  it.effect("loads what is missing and decides again; once loaded, decides at once", () =>
    Effect.gen(function*() {
      const { counts, decide } = cached()
      const first = Decision.now(Decision.make(decide))
      expect(Exit.isExit(first)).toBe(false)
      expect(counts).toEqual({ decided: 1, loaded: 0 })
      expect(yield* first).toBe(42)
      expect(counts).toEqual({ decided: 2, loaded: 1 })
      expect(Decision.now(Decision.make(decide))).toEqual(Exit.succeed(42))
      expect(counts).toEqual({ decided: 3, loaded: 1 })
    }))

  it.effect("an entry decides when it runs, each time it runs", () =>
    Effect.gen(function*() {
      let taken = 0
      const take = Decision.make(() => Exit.succeed(++taken))
      expect(taken).toBe(0)
      expect(yield* take).toBe(1)
      expect(yield* take).toBe(2)
      // Another effect is left as it is by now.
      const other = Effect.sync(() => ++taken)
      expect(Decision.now(other)).toBe(other)
      expect(taken).toBe(2)
    }))

  it.effect("andThen goes on at once after a decided turn, and after the effect of one that is not", () =>
    Effect.gen(function*() {
      const decided = Decision.andThen(Exit.succeed(1), (n) => Exit.succeed(n + 1))
      expect(decided).toEqual(Exit.succeed(2))
      const later = Decision.andThen(Effect.sync(() => 1), (n) => Exit.succeed(n + 1))
      expect(Exit.isExit(later)).toBe(false)
      expect(yield* Decision.start(() => later)).toBe(2)
      const missing = new Decision.Missing(Effect.void)
      expect(Decision.andThen(missing, () => Exit.succeed(0))).toBe(missing)
      // A failure decided is the answer, decided too: `f` is not called.
      let called = false
      const refused = Decision.andThen(Exit.fail("no"), () => {
        called = true
        return Exit.succeed(0)
      })
      expect(refused).toEqual(Exit.fail("no"))
      expect(called).toBe(false)
      expect(Decision.failed(Exit.fail("no"))).toEqual(Exit.fail("no"))
      expect(Decision.failed(Exit.void)).toBeUndefined()
    }))
})
