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

  it("keeps the numbers it is given", () => {
    const index = new PairIndex()
    index.add(5, 6, 41)
    index.add(6, 5, 7)
    expect([index.find(5, 6), index.find(6, 5), index.find(5, 5)]).toEqual([41, 7, -1])
  })
})
