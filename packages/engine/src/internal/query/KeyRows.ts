/**
 * Reading the rows of a few keys from the key indexes of full chunks (`KeyIndex`), scanning the
 * chunk that is not full yet.
 */
import { OUTCOMES } from "@keymeter/core/Aggregation"
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
 * The outcomes of each of `keys`' rows in hours [fromHour, toHour]: key `keys[k]`'s counters at
 * `k * OUTCOMES`. The main run's full chunks answer from their key indexes, key by key; the rows
 * of chunks without one (the main run's newest, the late run) are scanned once for all the keys,
 * not once per key (a top 10 read the newest chunk, up to 65,536 rows, ten times; a top 10 with
 * a hundred ties, a hundred times). `keyCount`: the partition's number of keys.
 */
export const countKeysHours = (
  main: Run,
  late: Run,
  keys: ReadonlyArray<number>,
  fromHour: number,
  toHour: number,
  keyCount: number
): Float64Array => {
  const counts = new Float64Array(keys.length * OUTCOMES)
  const slots = keySlots(keys, keyCount)
  const [a, b] = main.rows(fromHour, toHour)
  countKeys(main, keys, a, b, counts, slots)
  if (late.length > 0) {
    const [la, lb] = late.rows(fromHour, toHour)
    countKeys(late, keys, la, lb, counts, slots)
  }
  return counts
}

/**
 * Each of `keys`' place plus one, by key code (0: not asked), for a scan of rows without a key
 * index: made once, when first asked (`keyCount`: the partition's number of keys).
 */
export const keySlots = (keys: ReadonlyArray<number>, keyCount: number): () => Int32Array => {
  let slots: Int32Array | undefined
  return () => {
    if (slots === undefined) {
      slots = new Int32Array(keyCount)
      for (let k = 0; k < keys.length; k++) slots[keys[k]!] = k + 1
    }
    return slots
  }
}

/**
 * Adds the outcomes of each of `keys`' rows in run rows [a, b) to its counters in `counts` (key
 * `keys[k]`'s at `k * OUTCOMES`), as {@link countKeysHours} does.
 */
export const countKeys = (
  run: Run,
  keys: ReadonlyArray<number>,
  a: number,
  b: number,
  counts: Float64Array,
  slotsOf: () => Int32Array
) =>
  forEachChunk(a, b, (c, _, from, to) => {
    const chunk = run.chunks[c]!
    const index = chunk.keyIndex
    if (index !== undefined) {
      const entries = index.entries
      for (let k = 0; k < keys.length; k++) {
        const [p, end] = KeyIndex.range(index, keys[k]!, from, to)
        const at = k * OUTCOMES
        for (let q = p; q < end; q++) counts[at + (entries[q]! & 15)]!++
      }
    } else {
      const slots = slotsOf()
      const column = chunk.key
      const outcomes = chunk.outcome
      for (let i = from; i < to; i++) {
        const slot = slots[column[i]!]!
        if (slot !== 0) counts[(slot - 1) * OUTCOMES + outcomes[i]!]!++
      }
    }
  })
