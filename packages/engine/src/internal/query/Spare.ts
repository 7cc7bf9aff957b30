/**
 * Memory a query kept for the next one: its counters or its group table, so that queries do not
 * each allocate (outside V8's heap, for typed arrays) what the previous one has just let go. One
 * per thread is safe: a thread answers one query at a time, each within one synchronous call.
 */
export class Spare<A> {
  private kept: A | undefined

  /** Keeps ones whose `size` is at most `max`. */
  constructor(private readonly size: (kept: A) => number, private readonly max: number) {}

  /** The one kept, handed over (none is kept meanwhile) when there is one and `fits` it. */
  take(fits?: (kept: A) => boolean): A | undefined {
    const kept = this.kept
    if (kept === undefined || (fits !== undefined && !fits(kept))) return undefined
    this.kept = undefined
    return kept
  }

  /** Keeps `value` when it is larger than the one kept (than nothing, when none is) and not over the limit. */
  keep(value: A): void {
    const size = this.size(value)
    if (size <= this.max && size > (this.kept === undefined ? 0 : this.size(this.kept))) this.kept = value
  }
}
