import type { Scratch, Tracking } from "./Compile.js"

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

/**
 * Dense counters kept for the next query, all zero: each harvest zeroes the counters it reads, so a
 * scan that completes leaves its counters as it found them and hands them on (one that throws drops
 * them). A fresh array each scan allocated 41 MB outside V8's heap over the 10M mix's 300 first
 * sights, each zero-filled by the system page by page. At most 2^21 counters (8 MiB).
 */
const spareCounters = new Spare<Uint32Array>((counters) => counters.length, 1 << 21)

/**
 * The marks and list of tracked groups (`Scratch.seen`, `touched`) kept for the next scan that
 * tracks, with the epoch its marks stay below: the next scan counts on from there, so its marks
 * need no zeroing. Two fresh arrays of a group each cost ~3 us of a small query's ~170 (80 KB for
 * 10,000 keys, zeroed outside V8's heap). At most 2^20 groups.
 */
const spareTracking = new Spare<Tracking>((tracking) => tracking.seen.length, 1 << 20)

/** Epochs stay well below 2^32, as `seen` holds them in u32. */
const EPOCH_MAX = 2 ** 31

/** Tracking of `groups` groups: the spare's when it is large enough, its marks zeroed once its epochs run out. */
export const trackingFor = (groups: number): Tracking => {
  const kept = spareTracking.take((tracking) => tracking.seen.length >= groups)
  if (kept === undefined) return { seen: new Uint32Array(groups), touched: new Uint32Array(groups), epoch: 1 }
  if (kept.epoch < EPOCH_MAX) return kept
  kept.seen.fill(0)
  return { ...kept, epoch: 1 }
}

/** Zeroed counters of `length`: the spare's first `length` when it is large enough. */
export const zeroedCounters = (length: number): Uint32Array => {
  const spare = spareCounters.take((counters) => counters.length >= length)
  if (spare === undefined) return new Uint32Array(length)
  return spare.length === length ? spare : spare.subarray(0, length)
}

/** Hands `acc` on to the next query, zero again (the whole array under it: a query may use its first part). */
export const keepCounters = (acc: Uint32Array): void => {
  spareCounters.keep(acc.length === acc.buffer.byteLength >>> 2 ? acc : new Uint32Array(acc.buffer))
}

/** Hands a scratch's tracking on to the next query, its marks below the scratch's epoch. */
export const keepTracking = (scratch: Scratch): void => {
  spareTracking.keep({ seen: scratch.seen, touched: scratch.touched, epoch: scratch.epoch })
}
