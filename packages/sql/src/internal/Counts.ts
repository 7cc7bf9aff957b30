/**
 * A store's counts (`AggregationResult`: a row per time bucket and group, a counter per outcome) as
 * rows of counted events for the executor: one row per non-zero counter, standing for that many
 * events equal in everything the counts keep. What the counts do not keep reads as nothing (no
 * latency or region; credits unless summed, then a row's are the total of its events); the executor
 * reads counts only for SELECTs that never ask for them.
 * Counts not by time bucket read as at `from`, the start of the bounds they were counted within.
 */
import type { AggregationResult } from "@keymeter/core/Aggregation"
import { addCounters, grown, OUTCOMES } from "@keymeter/core/Aggregation"
import type { Dictionary, RatelimitColumns, VerificationColumns } from "@keymeter/core/EventScan"
import type { Identity } from "@keymeter/core/Verification"
import { OutcomeIndex } from "@keymeter/core/Verification"
import type { Weighted } from "./Context.js"

/** Codes of values in the order first seen. */
class Coder<A> {
  readonly values: Array<A> = []
  private readonly codes = new Map<unknown, number>()
  code(key: unknown, value: A): number {
    let code = this.codes.get(key)
    if (code === undefined) {
      code = this.values.length
      this.values.push(value)
      this.codes.set(key, code)
    }
    return code
  }
  dictionary(codes: Uint32Array): Dictionary<A> {
    return { codes, values: this.values }
  }
}

/**
 * The rows of counted events a result makes, in order: a (row, outcome) pair per counter with
 * events; or, with the outcomes together, a row per result row with events, its counters as they
 * are (`Weighted.byOutcome`), `outcomes` then all 0 (no row reads it).
 */
const nonZero = (result: AggregationResult, together: boolean) => {
  const counts = result.counts
  // Counted first, then filled: typed arrays of the right length, not arrays grown row by row (a
  // heavy query's parts hold hundreds of thousands of rows, and the collector copied the growth).
  let n = 0
  for (let row = 0; row < result.size; row++) {
    for (let o = 0; o < OUTCOMES; o++) {
      if (counts[row * OUTCOMES + o]! > 0) {
        n++
        if (together) break
      }
    }
  }
  const rows = new Uint32Array(n)
  const outcomes = new Uint8Array(n)
  for (let row = 0, i = 0; row < result.size; row++) {
    for (let o = 0; o < OUTCOMES; o++) {
      if (counts[row * OUTCOMES + o]! > 0) {
        rows[i] = row
        outcomes[i++] = together ? 0 : o
        if (together) break
      }
    }
  }
  const weight = new Float64Array(n)
  let byOutcome: Float64Array | undefined
  if (together) {
    byOutcome = new Float64Array(n * OUTCOMES)
    for (let i = 0; i < n; i++) {
      const from = rows[i]! * OUTCOMES
      let total = 0
      for (let o = 0; o < OUTCOMES; o++) total += byOutcome[i * OUTCOMES + o] = counts[from + o]!
      weight[i] = total
    }
  } else for (let i = 0; i < n; i++) weight[i] = counts[rows[i]! * OUTCOMES + outcomes[i]!]!
  return { rows, outcomes, weight, byOutcome }
}

const NO_TAGS: ReadonlyArray<string> = []

/**
 * The dictionaries of one read's batches, kept across its parts: a part adds only the values it is
 * the first to hold, and the executor maps each value once for the whole read (a dictionary per
 * part was rebuilt, and mapped again, at every part).
 */
export class Dictionaries {
  /** Key ids (identifiers for decisions). */
  readonly keys = new Coder<string>()
  /** Identity ids (override ids for decisions). */
  readonly identityIds = new Coder<string>()
  readonly externalIds = new Coder<string>()
  /** Tag sets: by the store's array for a set (one per set), by the tag for a single tag. */
  readonly tagsets = new Coder<ReadonlyArray<string>>()
  readonly regions = new Coder<string>()
  constructor() {
    this.regions.code("", "")
    this.tagsets.code(NO_TAGS, NO_TAGS)
  }
}

/** A row's group but for its identity. */
const groupOf = (result: AggregationResult, row: number): string =>
  JSON.stringify([
    result.time?.[row] ?? 0,
    result.keyId?.[row] ?? "",
    result.tags?.[row] ?? NO_TAGS,
    result.tag?.[row] ?? ""
  ])

/**
 * Counts grouped by identity hold events with an identity only (as `getVerifications` groups
 * them): with the same counts grouped without identity (`all`), the events without one are the
 * difference, added as rows without identity.
 */
export const withNoIdentity = (identified: AggregationResult, all: AggregationResult): AggregationResult => {
  const rest = new Map<string, { row: number; counts: Float64Array; credits: Float64Array | undefined }>()
  const nine = (values: Float64Array, row: number) => values.slice(row * OUTCOMES, (row + 1) * OUTCOMES)
  for (let row = 0; row < all.size; row++) {
    rest.set(groupOf(all, row), {
      row,
      counts: nine(all.counts, row),
      credits: all.credits === undefined ? undefined : nine(all.credits, row)
    })
  }
  for (let row = 0; row < identified.size; row++) {
    const group = rest.get(groupOf(identified, row))
    if (group === undefined) continue
    for (let o = 0; o < OUTCOMES; o++) group.counts[o]! -= identified.counts[row * OUTCOMES + o]!
    if (group.credits !== undefined) {
      for (let o = 0; o < OUTCOMES; o++) group.credits[o]! -= identified.credits![row * OUTCOMES + o]!
    }
  }
  const extra = [...rest.values()].filter((group) => group.counts.some((count) => count > 0))
  const size = identified.size + extra.length
  const counts = new Float64Array(size * OUTCOMES)
  counts.set(identified.counts.subarray(0, identified.size * OUTCOMES))
  extra.forEach((group, k) => counts.set(group.counts, (identified.size + k) * OUTCOMES))
  let credits: Float64Array | undefined
  if (identified.credits !== undefined && all.credits !== undefined) {
    credits = new Float64Array(size * OUTCOMES)
    credits.set(identified.credits.subarray(0, identified.size * OUTCOMES))
    extra.forEach((group, k) => credits!.set(group.credits!, (identified.size + k) * OUTCOMES))
  }
  const time = identified.time === undefined || all.time === undefined
    ? undefined
    : Float64Array.from([...identified.time.subarray(0, identified.size), ...extra.map((g) => all.time![g.row]!)])
  return {
    size,
    counts,
    credits,
    time,
    keyId: identified.keyId === undefined
      ? undefined
      : [...identified.keyId.slice(0, identified.size), ...extra.map((g) => all.keyId![g.row]!)],
    identity: [...(identified.identity ?? []).slice(0, identified.size), ...extra.map(() => undefined)] as Array<
      Identity
    >,
    tags: identified.tags === undefined
      ? undefined
      : [...identified.tags.slice(0, identified.size), ...extra.map((g) => all.tags![g.row]!)],
    tag: identified.tag === undefined
      ? undefined
      : [...identified.tag.slice(0, identified.size), ...extra.map((g) => all.tag![g.row]!)]
  }
}

/** What tells a row of counts from another of its read, for the columns the read has. */
const dimensionsOf = (result: AggregationResult): Array<(row: number) => unknown> => {
  const out: Array<(row: number) => unknown> = []
  if (result.time !== undefined) out.push((row) => result.time![row])
  if (result.keyId !== undefined) out.push((row) => result.keyId![row])
  if (result.identity !== undefined) {
    out.push((row) => result.identity![row]?.id)
    out.push((row) => result.identity![row]?.externalId)
  }
  if (result.tag !== undefined) out.push((row) => result.tag![row])
  // A tag set by its array: stores hand out one array per set, and two arrays of one set only
  // leave two rows the executor adds up anyway.
  if (result.tags !== undefined) out.push((row) => result.tags![row])
  return out
}

/**
 * Counts of several reads added up by group: the parts of a query's bounds, counted one at a time,
 * as one read of them all would count them (a group in two parts is one row, not two). Groups are
 * found through a map per column, by the stores' own values (no key built per row).
 */
export class MergedCounts {
  private readonly root = new Map<unknown, any>()
  private counts = new Float64Array(1024 * OUTCOMES)
  /** Credits beside the counters, when the results sum them. */
  private credits: Float64Array<ArrayBuffer> | undefined
  private readonly source: Array<{ readonly result: AggregationResult; readonly row: number }> = []
  private shape: AggregationResult | undefined

  get size(): number {
    return this.source.length
  }

  add(result: AggregationResult): void {
    this.shape ??= result
    if (result.credits !== undefined) this.credits ??= new Float64Array(this.counts.length)
    const dimensions = dimensionsOf(result)
    const last = dimensions.length - 1
    for (let row = 0; row < result.size; row++) {
      let node = this.root
      for (let d = 0; d < last; d++) {
        const value = dimensions[d]!(row)
        let next = node.get(value)
        if (next === undefined) node.set(value, next = new Map())
        node = next
      }
      const value = last < 0 ? undefined : dimensions[last]!(row)
      let at: number | undefined = node.get(value)
      if (at === undefined) {
        at = this.source.length
        node.set(value, at)
        this.source.push({ result, row })
        if ((at + 1) * OUTCOMES > this.counts.length) {
          this.counts = grown(this.counts)
          if (this.credits !== undefined) this.credits = grown(this.credits)
        }
      }
      addCounters(this.counts, at * OUTCOMES, result.counts, row * OUTCOMES)
      const credits = result.credits
      if (credits !== undefined) addCounters(this.credits!, at * OUTCOMES, credits, row * OUTCOMES)
    }
  }

  /** The counts added so far, as one result with the columns of the results added. */
  result(): AggregationResult {
    const shape = this.shape
    const source = this.source
    const column = <A>(pick: (result: AggregationResult) => ReadonlyArray<A> | undefined): Array<A> | undefined =>
      shape === undefined || pick(shape) === undefined
        ? undefined
        : source.map(({ result, row }) => pick(result)![row]!)
    return {
      size: source.length,
      counts: this.counts.subarray(0, source.length * OUTCOMES),
      credits: this.credits?.subarray(0, source.length * OUTCOMES),
      time: shape?.time === undefined ? undefined : Float64Array.from(source, ({ result, row }) => result.time![row]!),
      keyId: column((r) => r.keyId),
      identity: column((r) => r.identity),
      tag: column((r) => r.tag),
      tags: column((r) => r.tags)
    }
  }
}

/** One api's counted verifications (with their spent credits, summed, when the result has them). */
export const verificationCounts = (
  apiId: string,
  result: AggregationResult,
  from: number,
  dictionaries: Dictionaries,
  together = false
): VerificationColumns & Weighted => {
  const { byOutcome, outcomes, rows, weight } = nonZero(result, together)
  const n = rows.length
  const { externalIds, identityIds, keys, regions, tagsets } = dictionaries
  const columns = {
    key: new Uint32Array(n),
    identity: new Uint32Array(n),
    external: new Uint32Array(n),
    tags: new Uint32Array(n)
  }
  const time = new Float64Array(n)
  // Credits are summed by outcome: their rows are never read with the outcomes together.
  const credits = together ? undefined : result.credits
  const spentCredits = new Float64Array(n)
  for (let i = 0; i < n; i++) {
    const row = rows[i]!
    time[i] = result.time?.[row] ?? from
    if (credits !== undefined) spentCredits[i] = credits[row * OUTCOMES + outcomes[i]!]!
    const keyId = result.keyId?.[row] ?? ""
    columns.key[i] = keys.code(keyId, keyId)
    const identity: Identity | undefined = result.identity?.[row]
    columns.identity[i] = identityIds.code(identity?.id ?? "", identity?.id ?? "")
    columns.external[i] = externalIds.code(identity?.externalId ?? "", identity?.externalId ?? "")
    // By single tag: the row's tags are that one (all the SELECT reads of them is arrayJoin).
    const tag = result.tag?.[row]
    const tags = result.tags?.[row]
    columns.tags[i] = tag !== undefined
      ? tagsets.code(tag, [tag])
      : tags === undefined || tags.length === 0
      ? 0
      : tagsets.code(tags, tags)
  }
  return {
    length: n,
    weight,
    byOutcome,
    time,
    apiId: { codes: new Uint32Array(n), values: [apiId] },
    keyId: keys.dictionary(columns.key),
    identityId: identityIds.dictionary(columns.identity),
    externalId: externalIds.dictionary(columns.external),
    outcome: outcomes,
    tags: tagsets.dictionary(columns.tags),
    spentCredits,
    latency: new Float64Array(n),
    region: regions.dictionary(new Uint32Array(n))
  }
}

const PASSED = OutcomeIndex.get("valid")!

/**
 * One namespace's counted decisions, from counts in `RatelimitEvent`'s projection: the identifier
 * as the key, the override as the identity, passed as `valid`, blocked as `rateLimited`.
 */
export const ratelimitCounts = (
  namespaceId: string,
  result: AggregationResult,
  from: number,
  dictionaries: Dictionaries,
  together = false
): RatelimitColumns & Weighted => {
  const { byOutcome, outcomes, rows, weight } = nonZero(result, together)
  const n = rows.length
  const { identityIds: overrides, keys: identifiers } = dictionaries
  const identifier = new Uint32Array(n)
  const override = new Uint32Array(n)
  const time = new Float64Array(n)
  const passed = new Uint8Array(n)
  for (let i = 0; i < n; i++) {
    const row = rows[i]!
    time[i] = result.time?.[row] ?? from
    passed[i] = outcomes[i] === PASSED ? 1 : 0
    const id = result.keyId?.[row] ?? ""
    identifier[i] = identifiers.code(id, id)
    const overrideId = result.identity?.[row]?.id ?? ""
    override[i] = overrides.code(overrideId, overrideId)
  }
  return {
    length: n,
    weight,
    byOutcome,
    time,
    namespaceId: { codes: new Uint32Array(n), values: [namespaceId] },
    identifier: identifiers.dictionary(identifier),
    passed,
    latency: new Float64Array(n),
    overrideId: overrides.dictionary(override)
  }
}

/** One event of outcome `o`, the rest of its columns empty. */
const oneOf = (o: number): AggregationResult => {
  const counts = new Float64Array(OUTCOMES)
  counts[o] = 1
  return { size: 1, counts }
}

/**
 * A row of each outcome (`rows[o]`, weight 1), as `Input.outcomes` gives them: the events of a
 * row of counts with its outcomes together differ in nothing else.
 */
export const outcomeRows = {
  verifications: Array.from({ length: OUTCOMES }, (_, o) => verificationCounts("", oneOf(o), 0, new Dictionaries())),
  ratelimits: Array.from({ length: OUTCOMES }, (_, o) => ratelimitCounts("", oneOf(o), 0, new Dictionaries()))
} as const
