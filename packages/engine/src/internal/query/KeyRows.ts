/**
 * Reading the rows of a few keys from the key indexes of full chunks (`KeyIndex`), scanning the
 * chunk that is not full yet.
 */
import * as KeyIndex from "../KeyIndex.js"
import type { Run, U32List } from "../Run.js"
import { forEachChunk } from "../Run.js"

/**
 * Rows a key-index read of `keys` over main-run rows [a, b) would visit: their entries in full
 * chunks, and every row of a chunk without an index (it is scanned).
 */
export const keyRowsEstimate = (run: Run, keys: ReadonlyArray<number>, a: number, b: number): number => {
  let count = 0
  forEachChunk(a, b, (c, _, from, to) => {
    const index = run.chunks[c]!.keyIndex
    if (index === undefined) count += to - from
    else {
      for (const key of keys) {
        const [p, end] = KeyIndex.range(index, key, from, to)
        count += end - p
      }
    }
  })
  return count
}

/**
 * The entries (`row * 16 + outcome`) of `keys` in main-run rows [a, b), appended to `into` from
 * the key indexes of full chunks; the row ranges of chunks without an index go to `unindexed`.
 */
export const gather = (
  run: Run,
  keys: ReadonlyArray<number>,
  a: number,
  b: number,
  into: U32List,
  unindexed: (from: number, to: number) => void
) =>
  forEachChunk(a, b, (c, base, from, to) => {
    const index = run.chunks[c]!.keyIndex
    if (index === undefined) return unindexed(base + from, base + to)
    const entries = index.entries
    for (const key of keys) {
      const [p, end] = KeyIndex.range(index, key, from, to)
      for (let q = p; q < end; q++) into.push(base * 16 + entries[q]!)
    }
  })

/**
 * Adds the outcomes of `key`'s rows in hours [fromHour, toHour] to `counts[0 .. OUTCOMES)`: the main
 * run's from its key indexes, the late run's (which has none) scanned.
 */
export const countKeyHours = (
  main: Run,
  late: Run,
  key: number,
  fromHour: number,
  toHour: number,
  counts: Float64Array
) => {
  const [a, b] = main.rows(fromHour, toHour)
  countKey(main, key, a, b, counts)
  if (late.length > 0) {
    const [la, lb] = late.rows(fromHour, toHour)
    countKey(late, key, la, lb, counts)
  }
}

/** Adds the outcomes of `key`'s rows in main-run rows [a, b) to `counts[0 .. OUTCOMES)`. */
export const countKey = (run: Run, key: number, a: number, b: number, counts: Float64Array) =>
  forEachChunk(a, b, (c, _, from, to) => {
    const chunk = run.chunks[c]!
    const index = chunk.keyIndex
    if (index !== undefined) {
      const [p, end] = KeyIndex.range(index, key, from, to)
      const entries = index.entries
      for (let q = p; q < end; q++) counts[entries[q]! & 15]!++
    } else {
      const keys = chunk.key
      const outcomes = chunk.outcome
      for (let i = from; i < to; i++) if (keys[i] === key) counts[outcomes[i]!]!++
    }
  })
