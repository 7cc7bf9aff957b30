/**
 * Counters of composite groups (key, identity, tag set codes together): an open-addressing hash
 * table on the combined code, a number below 2^53. A `Map` keyed by such numbers boxes every key
 * above 2^31 and costs ten times more per event on the scans that group by two dimensions or more.
 */
import { OUTCOMES } from "@keymeter/core/Aggregation"

/** A well-mixed 32-bit hash of a number below 2^53 (murmur3's finaliser over its two halves). */
const hash = (id: number): number => {
  let h = (id | 0) ^ Math.imul((id / 4294967296) | 0, 0x85EBCA6B)
  h = Math.imul(h ^ (h >>> 16), 0x7FEB352D)
  h = Math.imul(h ^ (h >>> 15), 0x846CA68B)
  return h ^ (h >>> 16)
}

/** Whether combined codes of groups below `cardinality` could pass 2^53 (then groups are keyed by text). */
const textKeyed = (cardinality: { readonly key: number; readonly identity: number; readonly tagset: number }) =>
  cardinality.key * cardinality.identity * cardinality.tagset >= Number.MAX_SAFE_INTEGER

/**
 * Empties the entries of the first `size` slots. A function of its own, the loop its last statement:
 * when its code was compiled during a long loop (on-stack replacement), the statements after the
 * loop had never run, and that code, kept for the next long loop, was thrown away at each loop's end
 * (151 deoptimizations over the 10M mix, one per bucket of a composite grouping).
 */
const emptyEntries = (entries: Int32Array, positions: Int32Array, size: number): void => {
  for (let slot = 0; slot < size; slot++) entries[positions[slot]!] = 0
}

export class GroupTable {
  /** Slot of each table entry plus one (0: empty). */
  private entries: Int32Array
  /** The combined code of each slot, and where in `entries` it is. */
  private ids: Float64Array
  private positions: Int32Array
  /** Codes of each slot: key, identity, tag set. */
  codes: Uint32Array
  /**
   * `counts[slot * OUTCOMES + outcome]`: a table counts one bucket's rows, fewer than 2^32 (row
   * ids are u32), so 4 bytes a counter, half the memory a composite grouping's table grows into.
   */
  counts: Uint32Array
  /** Spent credits beside each counter, when the table sums them (see the constructor). */
  credits: Float64Array | undefined
  size = 0
  private mask: number
  private byText: Map<string, number> | undefined
  private nIdentity: number
  private nTagset: number
  private onNew: (size: number) => void

  /**
   * Groups of codes below `cardinality`; `onNew` runs before a group is added (it may throw to
   * stop an answer that grows too large).
   */
  constructor(
    cardinality: { readonly key: number; readonly identity: number; readonly tagset: number },
    onNew: (size: number) => void = () => {},
    sumsCredits = false
  ) {
    this.nIdentity = cardinality.identity
    this.nTagset = cardinality.tagset
    this.byText = textKeyed(cardinality) ? new Map() : undefined
    this.onNew = onNew
    this.entries = new Int32Array(1024)
    this.mask = 1023
    this.ids = new Float64Array(512)
    this.positions = new Int32Array(512)
    this.codes = new Uint32Array(512 * 3)
    this.counts = new Uint32Array(512 * OUTCOMES)
    this.credits = sumsCredits ? new Float64Array(512 * OUTCOMES) : undefined
  }

  /** Counts one event of `outcome` into the group (key, identity, tagset), with its credits when summed. */
  add(key: number, identity: number, tagset: number, outcome: number, credits?: number): void {
    // The slot first: finding it may grow the table, which replaces `counts`.
    const at = this.slot(key, identity, tagset) * OUTCOMES + outcome
    this.counts[at]!++
    if (credits !== undefined) this.credits![at]! += credits
  }

  /** The slot of a group, added when new. */
  slot(key: number, identity: number, tagset: number): number {
    if (this.byText !== undefined) return this.slotByText(key, identity, tagset)
    const id = (key * this.nIdentity + identity) * this.nTagset + tagset
    const entries = this.entries
    const mask = this.mask
    let at = hash(id) & mask
    for (;;) {
      const entry = entries[at]!
      if (entry === 0) break
      if (this.ids[entry - 1] === id) return entry - 1
      at = (at + 1) & mask
    }
    const slot = this.size
    this.onNew(slot)
    if (slot === this.ids.length) {
      this.grow()
      return this.slot(key, identity, tagset)
    }
    this.size++
    entries[at] = slot + 1
    this.positions[slot] = at
    this.ids[slot] = id
    this.codes[slot * 3] = key
    this.codes[slot * 3 + 1] = identity
    this.codes[slot * 3 + 2] = tagset
    return slot
  }

  /** {@link slot} when combined codes would pass 2^53 (cardinalities beyond any real api's). */
  private slotByText(key: number, identity: number, tagset: number): number {
    const text = `${key},${identity},${tagset}`
    let slot = this.byText!.get(text)
    if (slot !== undefined) return slot
    slot = this.size
    this.onNew(slot)
    if (slot === this.ids.length) this.grow()
    this.size++
    this.byText!.set(text, slot)
    this.codes[slot * 3] = key
    this.codes[slot * 3 + 1] = identity
    this.codes[slot * 3 + 2] = tagset
    return slot
  }

  /** Groups in the room the table has grown (it grows when they are all taken). */
  get capacity(): number {
    return this.ids.length
  }

  /**
   * This table emptied, for another answer's groups (the constructor's arguments), with the memory
   * it has grown: a thread's scans reuse one table rather than each growing its own from 512 groups.
   */
  reset(
    cardinality: { readonly key: number; readonly identity: number; readonly tagset: number },
    onNew: (size: number) => void,
    sumsCredits: boolean
  ): this {
    this.clear()
    this.nIdentity = cardinality.identity
    this.nTagset = cardinality.tagset
    this.byText = textKeyed(cardinality) ? this.byText ?? new Map() : undefined
    this.onNew = onNew
    this.credits = !sumsCredits
      ? undefined
      : this.credits?.length === this.counts.length
      ? this.credits
      : new Float64Array(this.counts.length)
    return this
  }

  /** Empties the table, keeping its memory. */
  clear(): void {
    this.byText?.clear()
    emptyEntries(this.entries, this.positions, this.size)
    this.counts.fill(0, 0, this.size * OUTCOMES)
    this.credits?.fill(0, 0, this.size * OUTCOMES)
    this.size = 0
  }

  private grow(): void {
    const capacity = this.ids.length * 2
    const ids = new Float64Array(capacity)
    ids.set(this.ids)
    const codes = new Uint32Array(capacity * 3)
    codes.set(this.codes)
    const counts = new Uint32Array(capacity * OUTCOMES)
    counts.set(this.counts)
    if (this.credits !== undefined) {
      const credits = new Float64Array(capacity * OUTCOMES)
      credits.set(this.credits)
      this.credits = credits
    }
    this.ids = ids
    this.codes = codes
    this.counts = counts
    // The table stays at most half full.
    this.entries = new Int32Array(capacity * 2)
    this.positions = new Int32Array(capacity)
    this.mask = capacity * 2 - 1
    for (let slot = 0; slot < this.size; slot++) {
      let at = hash(ids[slot]!) & this.mask
      while (this.entries[at] !== 0) at = (at + 1) & this.mask
      this.entries[at] = slot + 1
      this.positions[slot] = at
    }
  }
}
