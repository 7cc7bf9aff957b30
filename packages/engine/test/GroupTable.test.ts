/**
 * GroupTable: the hash table of composite groups the scan uses when dense counters would be too
 * many. Checked against a Map of the same adds, for small codes, codes whose combined number nears
 * 2^53 (hashed on both halves), and codes past it (keyed by text): every group once, with its
 * codes and nine counters, through growth past the first 512 slots and after `clear`; `onNew`
 * announces each new group's number before adding it, and a throw from it adds nothing; credits
 * are summed beside the counters when asked.
 */
import { describe, expect, it } from "@effect/vitest"
import * as FastCheck from "effect/FastCheck"
import { GroupTable } from "../src/internal/query/GroupTable.js"

type Cardinality = { readonly key: number; readonly identity: number; readonly tagset: number }

const modes: ReadonlyArray<readonly [string, Cardinality]> = [
  ["small codes", { key: 60, identity: 40, tagset: 30 }],
  ["codes near 2^53, hashed", { key: 2 ** 20, identity: 2 ** 20, tagset: 2 ** 12 }],
  ["codes past 2^53, keyed by text", { key: 2 ** 20, identity: 2 ** 20, tagset: 2 ** 14 }]
]

/** Adds of (key, identity, tagset, outcome) below `cardinality`, with repeats. */
const addsArb = (cardinality: Cardinality) => {
  const code = (n: number) =>
    FastCheck.oneof(FastCheck.integer({ min: 0, max: Math.min(n, 40) - 1 }), FastCheck.integer({ min: 0, max: n - 1 }))
  const add = FastCheck.tuple(
    code(cardinality.key),
    code(cardinality.identity),
    code(cardinality.tagset),
    FastCheck.integer({ min: 0, max: 8 })
  )
  return FastCheck.array(add, { maxLength: 2500, size: "max" })
}

/** The table's groups as `key,identity,tagset` → nine counters (a group held twice is lost). */
const contents = (table: GroupTable) => {
  const out = new Map<string, Array<number>>()
  for (let slot = 0; slot < table.size; slot++) {
    const id = Array.from(table.codes.subarray(slot * 3, slot * 3 + 3)).join(",")
    out.set(id, Array.from(table.counts.subarray(slot * 9, slot * 9 + 9)))
  }
  expect(out.size, "groups held twice").toBe(table.size)
  return out
}

const oracle = (adds: ReadonlyArray<readonly [number, number, number, number]>) => {
  const out = new Map<string, Array<number>>()
  for (const [key, identity, tagset, outcome] of adds) {
    const id = `${key},${identity},${tagset}`
    let counts = out.get(id)
    if (counts === undefined) out.set(id, counts = new Array<number>(9).fill(0))
    counts[outcome]!++
  }
  return out
}

describe("GroupTable", () => {
  for (const [name, cardinality] of modes) {
    it(`counts adds into their groups like a Map, through growth and clear: ${name}`, () => {
      let grown = 0
      FastCheck.assert(
        FastCheck.property(addsArb(cardinality), addsArb(cardinality), (first, second) => {
          const table = new GroupTable(cardinality)
          for (const adds of [first, second]) {
            // Each group's slot is taken first, as growth during `add` loses a count (see below).
            const slots = new Map<string, Set<number>>()
            for (const [key, identity, tagset, outcome] of adds) {
              const id = `${key},${identity},${tagset}`
              if (!slots.has(id)) slots.set(id, new Set())
              slots.get(id)!.add(table.slot(key, identity, tagset))
              table.add(key, identity, tagset, outcome)
            }
            // A group keeps its slot as the table grows.
            expect([...slots.values()].every((s) => s.size === 1)).toBe(true)
            expect(contents(table)).toEqual(oracle(adds))
            if (table.size > 1024) grown++
            table.clear()
            expect(table.size).toBe(0)
          }
        }),
        { seed: 51, numRuns: 25 }
      )
      expect(grown).toBeGreaterThan(20)
    })
  }

  it("announces each new group's number before adding it; a throw adds nothing", () => {
    const announced: Array<number> = []
    const table = new GroupTable({ key: 5000, identity: 3, tagset: 2 }, (size) => {
      announced.push(size)
      if (size === 1500) throw new Error("too many")
    })
    for (let key = 0; key < 1500; key++) table.add(key, key % 3, key % 2, key % 9)
    table.add(7, 1, 1, 0)
    // Every group's number, in order (a number is announced again where the table grows).
    expect([...new Set(announced)]).toEqual(Array.from({ length: 1500 }, (_, i) => i))
    expect(announced.every((n, i) => i === 0 || announced[i - 1]! <= n)).toBe(true)
    expect(() => table.add(1500, 0, 0, 0)).toThrow("too many")
    expect(table.size).toBe(1500)
    // The group (7, 1, 1) was the eighth, added twice.
    expect(table.slot(7, 1, 1)).toBe(7)
    expect(Array.from(table.counts.subarray(7 * 9, 8 * 9))).toEqual([1, 0, 0, 0, 0, 0, 0, 1, 0])
  })

  // The add that makes the 513th (1,025th, ...) group grows the table, which replaces `counts`:
  // it was once counted in the array replaced.
  it("counts the add whose new group makes the table grow", () => {
    const table = new GroupTable({ key: 10_000, identity: 1, tagset: 1 })
    for (let key = 0; key < 1100; key++) table.add(key, 0, 0, 0)
    expect(table.size).toBe(1100)
    expect(Array.from({ length: 1100 }, (_, slot) => table.counts[slot * 9])).toEqual(new Array(1100).fill(1))
  })

  it("sums credits beside the counters when asked, through growth and clear", () => {
    const table = new GroupTable({ key: 10_000, identity: 3, tagset: 2 }, () => {}, true)
    for (const round of [1, 2]) {
      // 1,100 groups (the table grows twice), each added to three times with credits key % 7, twice valid.
      for (let n = 0; n < 3; n++) {
        for (let key = 0; key < 1100; key++) table.add(key, key % 3, key % 2, n === 2 ? 4 : 0, (key % 7) * round)
      }
      for (let key = 0; key < 1100; key++) {
        const at = table.slot(key, key % 3, key % 2) * 9
        expect([table.counts[at], table.counts[at + 4]], `counts of ${key}`).toEqual([2, 1])
        expect([table.credits![at], table.credits![at + 4]], `credits of ${key}`).toEqual([
          2 * (key % 7) * round,
          (key % 7) * round
        ])
      }
      table.clear()
    }
    // Without the option, no credits are kept.
    expect(new GroupTable({ key: 1, identity: 1, tagset: 1 }).credits).toBeUndefined()
  })

  // Scans reuse one table: `reset` empties it (left full by a scan stopped midway, too) for
  // another answer's cardinalities, credits and `onNew`.
  it("counts like a new table once reset, for other cardinalities, with or without credits", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.array(FastCheck.tuple(FastCheck.constantFrom(...modes), FastCheck.boolean()), {
          minLength: 2,
          maxLength: 5
        }),
        FastCheck.integer({ min: 0, max: 2 ** 31 }),
        (uses, seed) => {
          const table = new GroupTable(uses[0]![0][1])
          for (const [[, cardinality], sumsCredits] of uses) {
            const announced: Array<number> = []
            table.reset(cardinality, (size) => announced.push(size), sumsCredits)
            expect(table.size).toBe(0)
            expect(table.credits === undefined).toBe(!sumsCredits)
            const adds = FastCheck.sample(addsArb(cardinality), { numRuns: 1, seed: seed++ })[0]!
            for (const [key, identity, tagset, outcome] of adds) {
              table.add(key, identity, tagset, outcome, sumsCredits ? 1 : undefined)
            }
            expect(contents(table)).toEqual(oracle(adds))
            expect(new Set(announced).size).toBe(table.size)
            if (sumsCredits) {
              for (let slot = 0; slot < table.size; slot++) {
                const at = slot * 9
                expect(Array.from(table.credits!.subarray(at, at + 9))).toEqual(
                  Array.from(table.counts.subarray(at, at + 9))
                )
              }
            }
          }
        }
      ),
      { seed: 52, numRuns: 30 }
    )
  })
})
