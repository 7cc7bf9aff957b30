/**
 * DayIndex: the cache of per-day aggregates the day-index path sums. Against a model of random
 * writes (`touch`) and reads (`between`): a read gives every day as of its last write, computing
 * exactly the days never computed or written since they were; `fresh` gives exactly the others.
 */
import { describe, expect, it } from "@effect/vitest"
import * as FastCheck from "effect/FastCheck"
import type { Day } from "../src/internal/DayIndex.js"
import { DayIndex } from "../src/internal/DayIndex.js"

const opArb = FastCheck.oneof(
  FastCheck.record({ touch: FastCheck.integer({ min: 0, max: 6 }) }),
  FastCheck.tuple(FastCheck.integer({ min: 0, max: 6 }), FastCheck.integer({ min: 0, max: 6 })).map(([x, y]) => ({
    between: [Math.min(x, y), Math.max(x, y)] as const
  }))
)

describe("DayIndex", () => {
  it("gives each day as of its last write, computing only days never computed or written since", () => {
    FastCheck.assert(
      FastCheck.property(FastCheck.array(opArb, { maxLength: 60 }), (ops) => {
        const index = new DayIndex()
        // Model: writes per day, and the writes a day's cached aggregates saw.
        const writes = new Map<number, number>()
        const cached = new Map<number, number>()
        for (const op of ops) {
          if ("touch" in op) {
            index.touch(op.touch)
            writes.set(op.touch, (writes.get(op.touch) ?? 0) + 1)
            continue
          }
          const [from, to] = op.between
          const computed: Array<number> = []
          const days = index.between(from, to, (day): Day => {
            computed.push(day)
            return {
              keyTotals: Uint32Array.of(writes.get(day) ?? 0),
              identityCounts: undefined,
              tagCounts: undefined,
              hourTagCounts: undefined
            }
          })
          const all = Array.from({ length: to - from + 1 }, (_, i) => from + i)
          expect(computed).toEqual(all.filter((day) => cached.get(day) !== (writes.get(day) ?? 0)))
          expect(days.map((day) => day.keyTotals![0])).toEqual(all.map((day) => writes.get(day) ?? 0))
          for (const day of all) cached.set(day, writes.get(day) ?? 0)
          // Fresh: computed, and not written since; the others are not given.
          for (let day = 0; day <= 6; day++) {
            const fresh = cached.get(day) === (writes.get(day) ?? 0) && cached.has(day)
            expect(index.fresh(day)?.keyTotals![0]).toEqual(fresh ? cached.get(day) : undefined)
          }
        }
      }),
      { seed: 71, numRuns: 2000 }
    )
  })
})
