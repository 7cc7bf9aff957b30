/**
 * The default ordering of an answer's rows — time, keyId, identity id (then external id), tag, tag
 * set joined with `,` — as counting sorts on each column's ranks, and the comparison that agrees
 * with it.
 */
import type { AggregationResult, ColumnRanks } from "../Aggregation.js"
import type { Identity } from "../Verification.js"

export const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

/**
 * Ranks of a column's values: `ranks[row]` orders rows as `compare` orders their values (equal
 * values, equal ranks), or their keys (`keyOf`, made once per value) when given. Values are ranked
 * once each, however many rows hold them: rows of one answer repeat a few thousand distinct keys,
 * identities or tag sets.
 */
export const rankColumn = <A, K = A>(
  values: ArrayLike<A>,
  size: number,
  compare: (a: K, b: K) => number,
  keyOf?: (value: A) => K
): { readonly ranks: Uint32Array; readonly count: number } => {
  const ranks = new Uint32Array(size)
  const distinct = firstSeen(values, size, ranks)
  const keys = keyOf === undefined ? distinct as unknown as Array<K> : distinct.map(keyOf)
  const sorted = keys.map((_, i) => i).sort((a, b) => compare(keys[a]!, keys[b]!))
  const rankOf = new Uint32Array(keys.length)
  let rank = 0
  for (let i = 1; i < sorted.length; i++) {
    // Distinct objects may hold equal values (two identity objects alike): they share a rank.
    if (compare(keys[sorted[i - 1]!]!, keys[sorted[i]!]!) !== 0) rank++
    rankOf[sorted[i]!] = rank
  }
  relabel(ranks, size, rankOf)
  return { ranks, count: keys.length }
}

/** The distinct values of a column in the order first seen; `codes[row]`, the row's among them. */
const firstSeen = <A>(values: ArrayLike<A>, size: number, codes: Uint32Array): Array<A> => {
  const index = new Map<A, number>()
  const distinct: Array<A> = []
  for (let row = 0; row < size; row++) {
    const value = values[row]!
    let at = index.get(value)
    if (at === undefined) {
      at = distinct.length
      index.set(value, at)
      distinct.push(value)
    }
    codes[row] = at
  }
  return distinct
}

/** `codes[row] = to[codes[row]]` for every row. */
const relabel = (codes: Uint32Array, size: number, to: Uint32Array): void => {
  for (let row = 0; row < size; row++) codes[row] = to[codes[row]!]!
}

export const compareNumbers = (a: number, b: number): number => a - b
export const compareIdentities = (a: Identity, b: Identity): number =>
  compareStrings(a.id, b.id) || compareStrings(a.externalId, b.externalId)
const compareTagSets = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): number =>
  compareStrings(joinTags(a), joinTags(b))
/** A tag set as the default ordering compares it. */
export const joinTags = (tags: ReadonlyArray<string>): string => tags.join(",")

/**
 * Ranks an adapter gave for a column, if any, with at most a few times as many distinct ranks as
 * rows (a counting sort's counters are allocated per rank): a dictionary's ranks of an answer of a
 * few rows are ranked again among themselves, as numbers.
 */
export const givenRanks = (given: ColumnRanks | undefined, size: number): ColumnRanks | undefined =>
  given === undefined || given.count <= 4 * size + 1024 ? given : rankColumn(given.ranks, size, compareNumbers)

/**
 * The rows in the default ordering — time, keyId, identity id (then external id), tag, tag set
 * joined with `,` — as stable counting sorts by each column's ranks, the last column first: linear
 * in the rows, where a comparison sort of strings costs seconds on large answers. The loops live
 * in functions of their own: after a loop here V8's on-stack replacement left code it had never
 * run, which gave up and ran the rest of every large call interpreted.
 */
export const defaultOrder = (rows: AggregationResult): Uint32Array => {
  const size = rows.size
  const sort = { order: positions(size), scratch: new Uint32Array(size) }
  const given = rows.ranks
  if (rows.tags) {
    sortByRanks(sort, size, givenRanks(given?.tags, size) ?? rankColumn(rows.tags, size, compareStrings, joinTags))
  }
  if (rows.tag) sortByRanks(sort, size, givenRanks(given?.tag, size) ?? rankColumn(rows.tag, size, compareStrings))
  if (rows.identity) {
    sortByRanks(sort, size, givenRanks(given?.identity, size) ?? rankColumn(rows.identity, size, compareIdentities))
  }
  if (rows.keyId) {
    sortByRanks(sort, size, givenRanks(given?.keyId, size) ?? rankColumn(rows.keyId, size, compareStrings))
  }
  if (rows.time) sortByRanks(sort, size, timeRanks(rows.time, size))
  return sort.order
}

/**
 * Ranks of a time column: counted along the rows when their times never decrease (as engines give
 * a series, bucket after bucket), else by {@link rankColumn}. Ranking 30,000 bucket starts through a
 * map of numbers cost ~1 ms.
 */
export const timeRanks = (
  time: ArrayLike<number>,
  size: number
): { readonly ranks: Uint32Array; readonly count: number } => {
  for (let row = 1; row < size; row++) {
    if (time[row]! < time[row - 1]!) return rankColumn(time, size, compareNumbers)
  }
  const ranks = new Uint32Array(size)
  let rank = 0
  for (let row = 1; row < size; row++) {
    if (time[row] !== time[row - 1]) rank++
    ranks[row] = rank
  }
  return { ranks, count: size === 0 ? 0 : rank + 1 }
}

/** `[0, 1, …, size - 1]`. */
export const positions = (size: number): Uint32Array => {
  const order = new Uint32Array(size)
  for (let i = 0; i < size; i++) order[i] = i
  return order
}

/** One stable counting sort of `sort.order` by `ranks` (through `sort.scratch`, then swapped). */
const sortByRanks = (
  sort: { order: Uint32Array; scratch: Uint32Array },
  size: number,
  { count, ranks }: { readonly ranks: Uint32Array; readonly count: number }
): void => {
  const order = sort.order
  const scratch = sort.scratch
  const starts = new Uint32Array(count + 1)
  for (let i = 0; i < size; i++) starts[ranks[order[i]!]! + 1]!++
  for (let r = 1; r <= count; r++) starts[r]! += starts[r - 1]!
  for (let i = 0; i < size; i++) {
    const row = order[i]!
    scratch[starts[ranks[row]!]!++] = row
  }
  sort.order = scratch
  sort.scratch = order
}

/**
 * Two rows in the default ordering, compared column by column: as {@link defaultOrder} orders
 * them, rows equal in every column by their position (its sorts are stable).
 */
export const compareDefault = (rows: AggregationResult, a: number, b: number): number =>
  (rows.time !== undefined ? rows.time[a]! - rows.time[b]! : 0) ||
  (rows.keyId !== undefined ? compareStrings(rows.keyId[a]!, rows.keyId[b]!) : 0) ||
  (rows.identity !== undefined ? compareIdentities(rows.identity[a]!, rows.identity[b]!) : 0) ||
  (rows.tag !== undefined ? compareStrings(rows.tag[a]!, rows.tag[b]!) : 0) ||
  (rows.tags !== undefined ? compareTagSets(rows.tags[a]!, rows.tags[b]!) : 0) ||
  a - b
