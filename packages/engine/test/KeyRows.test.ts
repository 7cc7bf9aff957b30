/**
 * KeyRows: reads of a few keys' rows from the key indexes of full chunks, the unfilled chunk
 * scanned once for all the keys (`countKeys`) or handed back (`gather`, `keyRowsEstimate`). On main runs of 150,000 rows
 * (two full chunks with key indexes, keys new in the second, one run whose first chunk was cut by
 * a merge and indexed again), random key sets and row ranges (chunk edges included) are read as a
 * plain scan of the run's columns reads them.
 */
import { describe, expect, it } from "@effect/vitest"
import * as FastCheck from "effect/FastCheck"
import { Partition } from "../src/internal/Partition.js"
import { countKeys, gather, keyRowsEstimate, keySlots } from "../src/internal/query/KeyRows.js"
import type { Run } from "../src/internal/Run.js"
import { CHUNK_SIZE, U32List } from "../src/internal/Run.js"
import { random } from "./Fixture.js"

const KEYS = 300

/**
 * 150,000 rows in hour order; keys 200 to 299 appear from row 100,000 on. With `merged`, 30,000
 * late rows (mostly of the new keys) land in the first chunk's hours and are merged: the chunk is
 * cut, refilled and indexed again.
 */
const mainRun = (seed: number, merged: boolean): Run => {
  const next = random(seed)
  const partition = new Partition(100)
  for (let k = 0; k < 200; k++) partition.keyCode(`k${k}`)
  let hour = 1000
  const add = (h: number, key: number) => partition.addCoded(h, key, 0, 0, Math.floor(next() * 9), 0, 0, 0, 0)
  const oldKey = () => Math.floor(next() ** 3 * 200)
  const newKey = () => 200 + Math.floor(next() * 100)
  for (let r = 0; r < 150_000 - (merged ? 30_000 : 0); r++) {
    if (r === 100_000 || (merged && r === 60_000)) { for (let k = 200; k < KEYS; k++) partition.keyCode(`k${k}`) }
    if (next() < 0.01) hour++
    add(hour, r >= 100_000 && next() < 0.3 ? newKey() : oldKey())
    if (merged && r === 100_000) {
      // Hour of row 60,000 or so.
      for (let l = 0; l < 30_000; l++) add(1000 + 600 + Math.floor(next() * 40), next() < 0.7 ? newKey() : oldKey())
      partition.maybeMerge()
      expect(partition.lateRun().length).toBe(0)
    }
  }
  const run = partition.main
  expect(run.length).toBe(150_000)
  expect(run.chunks.map((chunk) => chunk.keyIndex !== undefined)).toEqual([true, true, false])
  return run
}

/** What a plain scan of the columns reads for `keys` in rows [a, b). */
const scanned = (run: Run, keys: ReadonlyArray<number>, a: number, b: number) => {
  const wanted = new Set(keys)
  const indexedEntries: Array<number> = []
  const unindexed: Array<readonly [number, number]> = []
  const counts = new Map(keys.map((key) => [key, new Array<number>(9).fill(0)]))
  for (let r = a; r < b; r++) {
    const chunk = run.chunks[Math.floor(r / CHUNK_SIZE)]!
    const i = r % CHUNK_SIZE
    const key = chunk.key[i]!
    if (!wanted.has(key)) continue
    counts.get(key)![chunk.outcome[i]!]!++
    if (chunk.keyIndex !== undefined) indexedEntries.push(r * 16 + chunk.outcome[i]!)
  }
  for (let c = Math.floor(a / CHUNK_SIZE); a < b && c <= Math.floor((b - 1) / CHUNK_SIZE); c++) {
    if (run.chunks[c]!.keyIndex === undefined) {
      unindexed.push([Math.max(a, c * CHUNK_SIZE), Math.min(b, (c + 1) * CHUNK_SIZE)])
    }
  }
  return { indexedEntries, unindexed, counts }
}

const rangeArb = (length: number) => {
  const edge = FastCheck.oneof(
    FastCheck.constantFrom(0, 1, CHUNK_SIZE - 1, CHUNK_SIZE, CHUNK_SIZE + 1, 2 * CHUNK_SIZE, length - 1, length),
    FastCheck.integer({ min: 0, max: length })
  )
  return FastCheck.tuple(edge, edge).map(([x, y]) => [Math.min(x, y), Math.max(x, y)] as const)
}

describe("KeyRows", () => {
  for (const merged of [false, true]) {
    it(`reads keys' rows as a scan of the columns does${merged ? ", after a merge cut a chunk" : ""}`, () => {
      const run = mainRun(merged ? 62 : 61, merged)
      FastCheck.assert(
        FastCheck.property(
          FastCheck.uniqueArray(FastCheck.integer({ min: 0, max: KEYS - 1 }), { minLength: 1, maxLength: 40 }),
          rangeArb(run.length),
          (keys, [a, b]) => {
            const want = scanned(run, keys, a, b)
            const into = new U32List(16)
            const unindexed: Array<readonly [number, number]> = []
            gather(run, keys, a, b, into, (from, to) => unindexed.push([from, to]))
            expect(Array.from(into.data.subarray(0, into.length)).sort((x, y) => x - y)).toEqual(want.indexedEntries)
            expect(unindexed).toEqual(want.unindexed)
            const unindexedRows = want.unindexed.reduce((sum, [from, to]) => sum + to - from, 0)
            expect(keyRowsEstimate(run, keys, a, b)).toBe(want.indexedEntries.length + unindexedRows)
            // All the keys counted together, each into its own counters.
            const counts = new Float64Array(keys.length * 9)
            countKeys(run, keys, a, b, counts, keySlots(keys, KEYS))
            keys.forEach((key, k) => {
              expect(Array.from(counts.subarray(k * 9, (k + 1) * 9)), `key ${key}`).toEqual(want.counts.get(key))
            })
          }
        ),
        { seed: 63, numRuns: 120 }
      )
    })
  }
})
