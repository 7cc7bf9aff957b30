/**
 * A number for each pair of whole numbers (0 to 2^31 - 1), kept in typed arrays (open addressing):
 * a GROUP BY of two keys finds its groups without an object per group or per first key, which the
 * collector would copy while other work waits.
 */
export class PairIndex {
  private table = new Table(INITIAL)
  /**
   * The table before the last growth, while its pairs move to the new one a few per add: moving a
   * million pairs at once held the event loop for tens of ms, in one step no query can pause within.
   * It is never written: a pair is in it (at or after `moved`) or in `table`, never in both.
   */
  private old: Table | undefined = undefined
  private moved = 0
  /** Pairs held. */
  size = 0

  /** The pair's number, or -1. */
  find(a: number, b: number): number {
    const found = this.table.find(a, b)
    return found !== -1 || this.old === undefined ? found : this.old.find(a, b)
  }

  /** Gives a pair not held yet its number. */
  add(a: number, b: number, value: number): void {
    if ((this.size + 1) * 2 > this.table.length) this.grow()
    this.table.put(a, b, value)
    this.size++
    if (this.old !== undefined) this.move(MOVED_PER_ADD)
  }

  /** The pair's number: the one it has, or the next free one (`size`). */
  intern(a: number, b: number): number {
    const found = this.find(a, b)
    if (found >= 0) return found
    const value = this.size
    this.add(a, b, value)
    return value
  }

  private grow(): void {
    // Adds until the next growth (half the new table's room) move more slots than the old one has.
    if (this.old !== undefined) this.move(Infinity)
    this.old = this.table
    this.moved = 0
    this.table = new Table(this.old.length * 2)
  }

  /** Moves the old table's pairs in its next `slots` slots. */
  private move(slots: number): void {
    const old = this.old!
    const end = Math.min(old.length, this.moved + slots)
    for (let at = this.moved; at < end; at++) {
      const first = old.firsts[at]!
      if (first !== -1) this.table.put(first, old.seconds[at]!, old.values[at]!)
    }
    this.moved = end
    if (end === old.length) this.old = undefined
  }
}

class Table {
  readonly firsts: Int32Array
  readonly seconds: Int32Array
  readonly values: Int32Array
  private readonly mask: number
  constructor(readonly length: number) {
    this.firsts = new Int32Array(length).fill(-1)
    this.seconds = new Int32Array(length)
    this.values = new Int32Array(length)
    this.mask = length - 1
  }

  find(a: number, b: number): number {
    const firsts = this.firsts
    for (let at = slot(a, b, this.mask);; at = (at + 1) & this.mask) {
      const first = firsts[at]!
      if (first === -1) return -1
      if (first === a && this.seconds[at] === b) return this.values[at]!
    }
  }

  put(a: number, b: number, value: number): void {
    let at = slot(a, b, this.mask)
    while (this.firsts[at] !== -1) at = (at + 1) & this.mask
    this.firsts[at] = a
    this.seconds[at] = b
    this.values[at] = value
  }
}

const INITIAL = 1024
/** Old slots moved per add: the old table has twice as many slots as adds before the next growth. */
const MOVED_PER_ADD = 4

const slot = (a: number, b: number, mask: number): number => {
  let h = Math.imul(a, 0x9e3779b1) ^ Math.imul(b + 0x7f4a7c15, 0x85ebca6b)
  h ^= h >>> 15
  return h & mask
}
