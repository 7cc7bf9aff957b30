/**
 * Reading the rows of a few keys from the key indexes of full chunks (`KeyIndex`), scanning the
 * chunk that is not full yet.
 */
import * as KeyIndex from "../KeyIndex.js"
import type { Run, U32List } from "../Run.js"
import { CHUNK_BITS, CHUNK_SIZE } from "../Run.js"

/**
 * Rows a key-index read of `keys` over main-run rows [a, b) would visit: their entries in full
 * chunks, and every row of a chunk without an index (it is scanned).
 */
export const keyRowsEstimate = (run: Run, keys: ReadonlyArray<number>, a: number, b: number): number => {
  let count = 0
  if (a >= b) return 0
  for (let c = a >>> CHUNK_BITS; c <= (b - 1) >>> CHUNK_BITS; c++) {
    const base = c * CHUNK_SIZE
    const from = Math.max(a - base, 0)
    const to = Math.min(b - base, CHUNK_SIZE)
    const index = run.chunks[c]!.keyIndex
    if (index === undefined) count += to - from
    else {
      for (const key of keys) {
        const [p, end] = KeyIndex.range(index, key, from, to)
        count += end - p
      }
    }
  }
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
) => {
  if (a >= b) return
  for (let c = a >>> CHUNK_BITS; c <= (b - 1) >>> CHUNK_BITS; c++) {
    const chunk = run.chunks[c]!
    const base = c * CHUNK_SIZE
    const from = Math.max(a - base, 0)
    const to = Math.min(b - base, CHUNK_SIZE)
    const index = chunk.keyIndex
    if (index === undefined) {
      unindexed(base + from, base + to)
      continue
    }
    for (const key of keys) {
      const [p, end] = KeyIndex.range(index, key, from, to)
      const entries = index.entries
      for (let q = p; q < end; q++) into.push(base * 16 + entries[q]!)
    }
  }
}

/** Adds the outcomes of `key`'s rows in main-run rows [a, b) to `counts[0 .. OUTCOMES)`. */
export const countKey = (run: Run, key: number, a: number, b: number, counts: Float64Array) => {
  if (a >= b) return
  for (let c = a >>> CHUNK_BITS; c <= (b - 1) >>> CHUNK_BITS; c++) {
    const chunk = run.chunks[c]!
    const base = c * CHUNK_SIZE
    const from = Math.max(a - base, 0)
    const to = Math.min(b - base, CHUNK_SIZE)
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
  }
}
