/**
 * A number for each pair of whole numbers (0 to 2^31 - 1), kept in typed arrays (open addressing):
 * a GROUP BY of two keys finds its groups without an object per group or per first key, which the
 * collector would copy while other work waits.
 */
export class PairIndex {
  private firsts = new Int32Array(INITIAL).fill(-1)
  private seconds = new Int32Array(INITIAL)
  private values = new Int32Array(INITIAL)
  private mask = INITIAL - 1
  /** Pairs held. */
  size = 0

  /** The pair's number, or -1. */
  find(a: number, b: number): number {
    const firsts = this.firsts
    for (let at = slot(a, b, this.mask);; at = (at + 1) & this.mask) {
      const first = firsts[at]!
      if (first === -1) return -1
      if (first === a && this.seconds[at] === b) return this.values[at]!
    }
  }

  /** Gives a pair not held yet its number. */
  add(a: number, b: number, value: number): void {
    if ((this.size + 1) * 2 > this.firsts.length) this.grow()
    this.put(a, b, value)
    this.size++
  }

  /** The pair's number: the one it has, or the next free one (`size`). */
  intern(a: number, b: number): number {
    const found = this.find(a, b)
    if (found >= 0) return found
    const value = this.size
    this.add(a, b, value)
    return value
  }

  private put(a: number, b: number, value: number): void {
    let at = slot(a, b, this.mask)
    while (this.firsts[at] !== -1) at = (at + 1) & this.mask
    this.firsts[at] = a
    this.seconds[at] = b
    this.values[at] = value
  }

  private grow(): void {
    const [firsts, seconds, values] = [this.firsts, this.seconds, this.values]
    const length = firsts.length * 2
    this.firsts = new Int32Array(length).fill(-1)
    this.seconds = new Int32Array(length)
    this.values = new Int32Array(length)
    this.mask = length - 1
    for (let at = 0; at < firsts.length; at++) {
      if (firsts[at] !== -1) this.put(firsts[at]!, seconds[at]!, values[at]!)
    }
  }
}

const INITIAL = 1024

const slot = (a: number, b: number, mask: number): number => {
  let h = Math.imul(a, 0x9e3779b1) ^ Math.imul(b + 0x7f4a7c15, 0x85ebca6b)
  h ^= h >>> 15
  return h & mask
}
