/**
 * The rows of each key in one full chunk, built once when the chunk fills (a counting sort over
 * its 65,536 rows: sequential, cache-resident work, unlike appending to a list per key on every
 * event). Entries are `localRow * 16 + outcome`, grouped by key and ascending by row, so a key's
 * outcomes over a row range are read without touching the chunk's columns.
 */
import type { Chunk, KeyIndex } from "./Run.js"
import { CHUNK_SIZE, lowerBound } from "./Run.js"

export type { KeyIndex } from "./Run.js"

/** Counting scratch, reused across builds (sized to the partition's key dictionary). */
let scratch = new Uint32Array(1024)

/** Builds the index of a full chunk whose keys are all below `keyCount`. */
export const build = (chunk: Chunk, keyCount: number): KeyIndex => {
  if (scratch.length < keyCount + 1) scratch = new Uint32Array(Math.max(keyCount + 1, scratch.length * 2))
  const count = scratch
  count.fill(0, 0, keyCount + 1)
  const keyColumn = chunk.key
  const outcome = chunk.outcome
  let distinct = 0
  for (let i = 0; i < CHUNK_SIZE; i++) {
    if (count[keyColumn[i]!]++ === 0) distinct++
  }
  const keys = new Uint32Array(distinct)
  const starts = new Uint32Array(distinct + 1)
  // Prefix sums over the keys present, in key order; `count` becomes each key's write position.
  let at = 0
  let k = 0
  for (let key = 0; key < keyCount; key++) {
    const n = count[key]!
    if (n === 0) continue
    keys[k] = key
    starts[k++] = at
    count[key] = at
    at += n
  }
  starts[distinct] = at
  const entries = new Uint32Array(CHUNK_SIZE)
  for (let i = 0; i < CHUNK_SIZE; i++) entries[count[keyColumn[i]!]++] = i * 16 + outcome[i]!
  return { keys, starts, entries }
}

/** The entries of `key` with local rows in [from, to), as [first, end) positions; empty if absent. */
export const range = (index: KeyIndex, key: number, from: number, to: number): [number, number] => {
  const at = lowerBound(index.keys, index.keys.length, key)
  if (at === index.keys.length || index.keys[at] !== key) return [0, 0]
  const start = index.starts[at]!
  const end = index.starts[at + 1]!
  const first = from <= 0 ? start : lowerBound(index.entries, end, from * 16, start)
  return [first, to >= CHUNK_SIZE ? end : lowerBound(index.entries, end, to * 16, first)]
}
