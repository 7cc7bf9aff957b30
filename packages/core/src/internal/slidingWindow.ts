/**
 * Sliding-window counters: for each key, the accepted requests of the last `duration` ms as a
 * log of (time, cost), coalesced per millisecond. A request at `now` sees the requests with
 * `time > now - duration`; it is accepted when they leave room for its cost.
 */

interface Log {
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

/** Adds `cost` taken at `now` to a log, coalesced with an entry of the same millisecond. */
const append = (log: Log, now: number, cost: number) => {
  const last = log.times.length - 1
  if (last >= log.head && log.times[last] === now) log.costs[last]! += cost
  else {
    log.times.push(now)
    log.costs.push(cost)
  }
  log.used += cost
}

/** Logs unused this long past their last entry are dropped during sweeps. */
const SWEEP_EVERY = 10_000

export class SlidingWindows {
  private readonly logs = new Map<string, Log>()
  private calls = 0

  /**
   * Takes `cost` from the window of `key`. A zero cost takes nothing and succeeds when a request
   * of cost 1 would, so `limit: 0` refuses everything.
   */
  take(key: string, now: number, limit: number, duration: number, cost: number): Decision {
    if (++this.calls % SWEEP_EVERY === 0) this.sweep(now)
    const log = this.logOf(key)
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
    if (success && cost > 0) append(log, now, cost)
    log.idleAfter = Math.max(log.idleAfter, now + duration)
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
    if (last < log.head || log.times[last] !== now) return
    const back = Math.min(cost, log.costs[last]!)
    log.costs[last]! -= back
    log.used -= back
  }

  /**
   * Raises what the window of `key` holds to `used` (when it holds less), as taken at `now`: what
   * other servers took, learnt from a shared store, so this window refuses what they used up.
   */
  catchUp(key: string, now: number, used: number, duration: number): void {
    const log = this.logOf(key)
    const missing = used - log.used
    if (missing <= 0) return
    append(log, now, missing)
    log.idleAfter = Math.max(log.idleAfter, now + duration)
  }

  /** The log of `key`, made empty on first use. */
  private logOf(key: string): Log {
    let log = this.logs.get(key)
    if (log === undefined) {
      log = { times: [], costs: [], head: 0, used: 0, idleAfter: 0 }
      this.logs.set(key, log)
    }
    return log
  }

  /** Drops the logs that hold nothing that can still count. */
  sweep(now: number): void {
    for (const [key, log] of this.logs) if (log.idleAfter <= now) this.logs.delete(key)
  }

  get size(): number {
    return this.logs.size
  }
}
