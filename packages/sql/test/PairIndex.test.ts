import { describe, expect, it } from "@effect/vitest"
import { PairIndex } from "../src/internal/PairIndex.js"

describe("PairIndex", () => {
  it("numbers each pair once, in the order first seen, across growth", () => {
    const index = new PairIndex()
    const seen = new Map<string, number>()
    // Pairs that collide in the low bits, large codes, and zeros; many more than the first table holds.
    for (let i = 0; i < 20_000; i++) {
      const a = (i * 7919) % 3001
      const b = i % 3 === 0 ? 0 : (i * 104_729) % 2_147_483_647
      const key = `${a},${b}`
      const expected = seen.get(key) ?? seen.size
      if (!seen.has(key)) seen.set(key, expected)
      expect(index.intern(a, b)).toBe(expected)
    }
    expect(index.size).toBe(seen.size)
    for (const [key, value] of seen) {
      const [a, b] = key.split(",").map(Number)
      expect(index.find(a!, b!)).toBe(value)
    }
    expect(index.find(3002, 1)).toBe(-1)
  })

  it("finds every pair while those of the table before a growth move a few at a time", () => {
    const index = new PairIndex()
    // The first table has 1,024 slots: the 513th pair grows it, and the 512 before are still to
    // move (a few per add) when they are looked for.
    for (let n = 0; n <= 512; n++) index.add(n, n * 31, n)
    for (let n = 0; n <= 512; n++) expect(index.find(n, n * 31)).toBe(n)
    expect(index.intern(7, 7 * 31)).toBe(7)
    expect(index.intern(7, 8)).toBe(513)
    // Through several more growths, moving or not, every number stays its pair's.
    for (let n = 513; n < 5_000; n++) index.add(n, n * 31, n + 1)
    for (let n = 0; n < 5_000; n++) expect(index.find(n, n * 31)).toBe(n <= 512 ? n : n + 1)
    expect(index.find(7, 8)).toBe(513)
    expect(index.size).toBe(5_001)
  })

  it("keeps the numbers it is given", () => {
    const index = new PairIndex()
    index.add(5, 6, 41)
    index.add(6, 5, 7)
    expect([index.find(5, 6), index.find(6, 5), index.find(5, 5)]).toEqual([41, 7, -1])
  })
})
