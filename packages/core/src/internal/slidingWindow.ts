/**
 * Sliding-window counters: for each key, the accepted requests of the last `duration` ms as a
 * log of (time, cost), coalesced per millisecond. A request at `now` sees the requests with
 * `time > now - duration`; it is accepted when they leave room for its cost.
 *
 * Memory is bounded twice. A log holds about twice {@link MAX_ENTRIES} live entries at most: once
 * it holds MAX_ENTRIES, requests go into buckets of `duration / MAX_ENTRIES` ms, each stamped at
 * its end, so a request counts up to a bucket's length longer than it would alone (the window
 * refuses a little early, and never admits more than its limit). A log holds no more entries than
 * requests its limit admits, so limits up to MAX_ENTRIES stay exact. And the live logs are counted, in all and per
 * owner (a workspace): a new one past either cap is refused ({@link SlidingWindows.admits}).
 */

/** Live entries of a log past which requests are merged into its newest entry. */
export const MAX_ENTRIES = 1024

/** How many live windows there may be: in all, and per owner. */
export interface Capacity {
  readonly total: number
  readonly perOwner: number
}

interface Log {
  readonly owner: string
  times: Array<number>
  costs: Array<number>
  head: number
  used: number
  /** After this time the log holds nothing that counts, whatever the duration asked. */
  idleAfter: number
}

/** What one request was answered. */
export interface Decision {
  readonly success: boolean
  readonly remaining: number
  /** When the oldest counted request leaves the window (unix ms); now + duration when none. */
  readonly reset: number
}

/**
 * Adds `cost` taken at `now` to a log: into its newest entry when that is of the same millisecond
 * or is a bucket not yet ended; else as a new entry, which once the log is full is a bucket of
 * `duration / MAX_ENTRIES` ms stamped at its end (see the module's comment). Returns the time
 * the cost is stamped with: it counts until that time plus `duration`.
 */
const append = (log: Log, now: number, cost: number, duration: number): number => {
  log.used += cost
  const last = log.times.length - 1
  if (last >= log.head && log.times[last]! >= now) {
    log.costs[last]! += cost
    return log.times[last]!
  }
  const stamp = log.times.length - log.head >= MAX_ENTRIES ? now + Math.ceil(duration / MAX_ENTRIES) : now
  log.times.push(stamp)
  log.costs.push(cost)
  return stamp
}

/** Logs unused this long past their last entry are dropped during sweeps. */
const SWEEP_EVERY = 10_000

export class SlidingWindows {
  private readonly logs = new Map<string, Log>()
  /** Live logs per owner. */
  private readonly owned = new Map<string, number>()
  private calls = 0
  /** When the last sweep to make room ran: at most one a second, so a full map costs no scans. */
  private sweptForRoom = -Infinity

  constructor(readonly capacity: Capacity = { total: Infinity, perOwner: Infinity }) {}

  /**
   * Whether the window of `key` may be taken from at `now`: it is live, or there is room for one
   * more, in all and for `owner` (expired windows are swept to make room, once a second at most).
   */
  admits(key: string, owner: string, now: number): boolean {
    if (this.logs.has(key)) return true
    const room = () => this.logs.size < this.capacity.total && (this.owned.get(owner) ?? 0) < this.capacity.perOwner
    if (room()) return true
    if (now - this.sweptForRoom < 1000) return false
    this.sweptForRoom = now
    this.sweep(now)
    return room()
  }

  /**
   * Takes `cost` from the window of `key`. A zero cost takes nothing and succeeds when a request
   * of cost 1 would, so `limit: 0` refuses everything.
   */
  take(key: string, now: number, limit: number, duration: number, cost: number, owner = ""): Decision {
    if (++this.calls % SWEEP_EVERY === 0) this.sweep(now)
    const log = this.logOf(key, owner)
    const horizon = now - duration
    while (log.head < log.times.length && log.times[log.head]! <= horizon) {
      log.used -= log.costs[log.head]!
      log.head++
    }
    if (log.head > 1024 && log.head * 2 > log.times.length) {
      log.times = log.times.slice(log.head)
      log.costs = log.costs.slice(log.head)
      log.head = 0
    }
    const success = limit > 0 && log.used + Math.max(1, cost) <= limit
    const stamp = success && cost > 0 ? append(log, now, cost, duration) : now
    log.idleAfter = Math.max(log.idleAfter, stamp + duration)
    const oldest = log.head < log.times.length ? log.times[log.head]! : now
    return { success, remaining: Math.max(0, limit - log.used), reset: oldest + duration }
  }

  /**
   * Gives back `cost` that {@link take} took for `key` at `now` (the same call's time): for a
   * call that took several limits and then had to refuse all the same.
   */
  refund(key: string, now: number, cost: number): void {
    const log = this.logs.get(key)
    if (log === undefined || cost <= 0) return
    const last = log.times.length - 1
    // The entry this call's take went into: of this millisecond, or a bucket not ended yet.
    if (last < log.head || log.times[last]! < now) return
    const back = Math.min(cost, log.costs[last]!)
    log.costs[last]! -= back
    log.used -= back
  }

  /**
   * Raises what the window of `key` holds to `used` (when it holds less), as taken at `now`: what
   * other servers took, learnt from a shared store, so this window refuses what they used up.
   */
  catchUp(key: string, now: number, used: number, duration: number, owner = ""): void {
    const log = this.logOf(key, owner)
    const missing = used - log.used
    if (missing <= 0) return
    log.idleAfter = Math.max(log.idleAfter, append(log, now, missing, duration) + duration)
  }

  /** The log of `key`, made empty on first use. */
  private logOf(key: string, owner: string): Log {
    let log = this.logs.get(key)
    if (log === undefined) {
      log = { owner, times: [], costs: [], head: 0, used: 0, idleAfter: 0 }
      this.logs.set(key, log)
      this.owned.set(owner, (this.owned.get(owner) ?? 0) + 1)
    }
    return log
  }

  /** Drops the logs that hold nothing that can still count. */
  sweep(now: number): void {
    for (const [key, log] of this.logs) {
      if (log.idleAfter > now) continue
      this.logs.delete(key)
      const left = this.owned.get(log.owner)! - 1
      if (left === 0) this.owned.delete(log.owner)
      else this.owned.set(log.owner, left)
    }
  }

  get size(): number {
    return this.logs.size
  }
}
