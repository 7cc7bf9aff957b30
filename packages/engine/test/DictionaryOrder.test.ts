/**
 * DictionaryOrder: the default ordering's ranks of a growing dictionary. Against a model that
 * ranks the whole dictionary afresh after each growth: the same order of codes, equal values
 * (tag sets that join to the same string) equal ranks, whatever the steps it grew by.
 */
import { describe, expect, it } from "@effect/vitest"
import { columnOrder } from "@keymeter/core/Aggregation"
import * as FastCheck from "effect/FastCheck"
import { DictionaryOrder } from "../src/internal/DictionaryOrder.js"

/** Ranks of codes [first, n) by a full sort: equal keys equal ranks, ranks dense from 0. */
const model = <K>(keys: ReadonlyArray<K>, first: number, compare: (a: K, b: K) => number): Array<number> => {
  const codes = keys.map((_, code) => code).slice(first).sort((a, b) => compare(keys[a]!, keys[b]!))
  const rank: Array<number> = []
  let r = 0
  codes.forEach((code, i) => {
    if (i > 0 && compare(keys[codes[i - 1]!]!, keys[code]!) !== 0) r++
    rank[code] = r
  })
  return rank
}

/** The dictionary grown by the steps in `sizes` (cumulative), the ranks checked after each. */
const grows = <A, K>(
  all: ReadonlyArray<A>,
  steps: ReadonlyArray<number>,
  compare: (a: K, b: K) => number,
  first: number,
  keyOf: (value: A) => K
) => {
  const values: Array<A | undefined> = all.slice(0, first)
  const order = new DictionaryOrder<A, K>(values, compare, first, keyOf)
  for (const step of steps) {
    for (let i = 0; i < step && values.length < all.length; i++) values.push(all[values.length])
    const { count, rank } = order.current()
    const keys = values.map((v, code) => (code < first ? undefined : keyOf(v!))) as Array<K>
    const expected = model(keys, first, compare)
    for (let code = first; code < values.length; code++) expect(rank[code]).toBe(expected[code])
    expect(count).toBe(values.length === first ? 0 : Math.max(...expected.slice(first)) + 1)
  }
}

const stepsArb = FastCheck.array(FastCheck.integer({ min: 0, max: 12 }), { minLength: 1, maxLength: 8 })

describe("DictionaryOrder", () => {
  it("ranks key ids as the default ordering does, however the dictionary grew", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.uniqueArray(FastCheck.string({ maxLength: 4 }), { maxLength: 40 }),
        stepsArb,
        (keys, steps) => grows(keys, steps, columnOrder.keyId.compare, 0, (k: string) => k)
      ),
      { numRuns: 200 }
    )
  })

  it("ranks tag sets by their joined tags: sets that join alike share a rank", () => {
    const tagArb = FastCheck.constantFrom("a", "b", "a,b", "b,a", "", "c")
    FastCheck.assert(
      FastCheck.property(
        FastCheck.array(FastCheck.array(tagArb, { maxLength: 3 }), { maxLength: 30 }),
        stepsArb,
        (tagsets, steps) => grows([[], ...tagsets], steps, columnOrder.tags.compare, 0, columnOrder.tags.keyOf)
      ),
      { numRuns: 200 }
    )
    // ["a,b"] and ["a", "b"] join to "a,b": one rank.
    const values: Array<ReadonlyArray<string>> = [[], ["a", "b"], ["c"], ["a,b"]]
    const { count, rank } = new DictionaryOrder(values, columnOrder.tags.compare, 0, columnOrder.tags.keyOf).current()
    expect([...rank]).toEqual([0, 1, 2, 1])
    expect(count).toBe(3)
  })

  it("ranks identities by id then external id, from code 1 (0 holds none)", () => {
    const identityArb = FastCheck.record({
      id: FastCheck.constantFrom("i1", "i2", "i3"),
      externalId: FastCheck.constantFrom("e1", "e2", "")
    })
    FastCheck.assert(
      FastCheck.property(
        FastCheck.uniqueArray(identityArb, { maxLength: 9, selector: (i) => `${i.id}/${i.externalId}` }),
        stepsArb,
        (identities, steps) => grows([undefined, ...identities], steps, columnOrder.identity.compare, 1, (i) => i!)
      ),
      { numRuns: 200 }
    )
  })
})
