/**
 * Rate-limit windows in Redis (core's `Windows` port), so that every server pointing at one Redis
 * admits exactly what one server would. Each decision is one Lua script, atomic in Redis: the same
 * sliding-window log as the windows of a process (a sorted set of the milliseconds that took
 * something, a hash of their costs, and a counter of what they hold), over all the limits of a
 * call at once, taken together or not at all.
 *
 * Time comes from the calling server (`now`), as for the local windows, so servers' clocks should
 * agree (NTP): a server whose clock runs ahead sees requests leave the window early.
 *
 * When Redis fails, `fallback` decides: `"closed"` (default) fails the call (503), `"local"`
 * decides with this server's own windows and logs loudly (each server then admits up to the
 * limit on its own).
 */
import { redactUrl, StorageError } from "@keymeter/core/Errors"
import type { Decision, WindowRequest } from "@keymeter/core/Windows"
import * as Windows from "@keymeter/core/Windows"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Redis } from "ioredis"

/** Takes from every window or from none. KEYS: (set, costs, used) per limit; ARGV: now, then (duration, limit, cost) per limit. */
const TAKE = `
local now = tonumber(ARGV[1])
local n = #KEYS / 3
local used, ok, all = {}, {}, true
for i = 1, n do
  local z, h, u = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  local duration, limit, cost = tonumber(ARGV[3 * i - 1]), tonumber(ARGV[3 * i]), tonumber(ARGV[3 * i + 1])
  local horizon = now - duration
  while true do
    local old = redis.call('ZRANGEBYSCORE', z, '-inf', horizon, 'LIMIT', 0, 500)
    if #old == 0 then break end
    local costs = redis.call('HMGET', h, unpack(old))
    local sum = 0
    for j = 1, #costs do sum = sum + tonumber(costs[j] or '0') end
    redis.call('DECRBY', u, sum)
    redis.call('ZREM', z, unpack(old))
    redis.call('HDEL', h, unpack(old))
  end
  used[i] = tonumber(redis.call('GET', u) or '0')
  ok[i] = limit > 0 and used[i] + math.max(cost, 1) <= limit
  if not ok[i] then all = false end
end
local out = {}
for i = 1, n do
  local z, h, u = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  local duration, limit, cost = tonumber(ARGV[3 * i - 1]), tonumber(ARGV[3 * i]), tonumber(ARGV[3 * i + 1])
  if all and cost > 0 then
    redis.call('ZADD', z, now, ARGV[1])
    redis.call('HINCRBY', h, ARGV[1], cost)
    used[i] = redis.call('INCRBY', u, cost)
  end
  for _, key in ipairs({ z, h, u }) do
    if redis.call('PTTL', key) < duration then redis.call('PEXPIRE', key, duration) end
  end
  local first = redis.call('ZRANGE', z, 0, 0, 'WITHSCORES')
  local reset = now + duration
  if #first > 0 then reset = tonumber(first[2]) + duration end
  out[3 * i - 2] = ok[i] and 1 or 0
  out[3 * i - 1] = math.max(0, limit - used[i])
  out[3 * i] = reset
end
return out
`

/** Gives back what a take at ARGV[1] took. KEYS: (set, costs, used) per limit; ARGV: now, then cost per limit. */
const REFUND = `
for i = 1, #KEYS / 3 do
  local z, h, u = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  local cost = tonumber(ARGV[i + 1])
  local held = tonumber(redis.call('HGET', h, ARGV[1]) or '0')
  local back = math.min(cost, held)
  if back > 0 then
    if held == back then
      redis.call('HDEL', h, ARGV[1])
      redis.call('ZREM', z, ARGV[1])
    else
      redis.call('HINCRBY', h, ARGV[1], -back)
    end
    redis.call('DECRBY', u, back)
  end
end
return 0
`

interface Scripted extends Redis {
  keymeterTake(count: number, ...args: Array<string | number>): Promise<Array<number>>
  keymeterRefund(count: number, ...args: Array<string | number>): Promise<number>
}

/** What happens when Redis cannot answer. */
export type Fallback = "closed" | "local"

export interface Options {
  /** `redis://host:port/db` (user and password in it when needed). */
  readonly url: string
  /** Prefix of every key (default `keymeter:rl:`): several deployments on one Redis stay apart. */
  readonly prefix?: string | undefined
  readonly fallback?: Fallback | undefined
  /** Longest wait for an answer, in ms (default 1000). */
  readonly timeoutMs?: number | undefined
}

/** The three keys of a window; the braces keep them in one Redis Cluster slot. */
const keysOf = (prefix: string, key: string) => [`${prefix}{${key}}:z`, `${prefix}{${key}}:h`, `${prefix}{${key}}:u`]

/** Redis windows, connected (the connection closes with the scope). Fails when Redis cannot be reached. */
export const make = (options: Options) =>
  Effect.gen(function*() {
    const prefix = options.prefix ?? "keymeter:rl:"
    const fallback = options.fallback ?? "closed"
    const timeout = options.timeoutMs ?? 1_000
    const client = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const redis = new Redis(options.url, {
            lazyConnect: true,
            // Fail at once while disconnected, rather than queue calls until Redis is back.
            enableOfflineQueue: false,
            maxRetriesPerRequest: 1,
            connectTimeout: timeout,
            commandTimeout: timeout
          }) as Scripted
          redis.on("error", () => {}) // reported by the calls that fail
          redis.defineCommand("keymeterTake", { lua: TAKE })
          redis.defineCommand("keymeterRefund", { lua: REFUND })
          try {
            await redis.connect()
            await redis.ping()
          } catch (error) {
            redis.disconnect()
            throw error
          }
          return redis
        },
        catch: (cause) =>
          new StorageError({ message: `Redis is unreachable at ${redactUrl(options.url)}: ${describe(cause)}`, cause })
      }),
      (redis) => Effect.promise(() => redis.quit().catch(() => redis.disconnect()))
    )
    // With fallback "local": this server's own windows, bounded as the default ones are.
    const local = Windows.makeLocal(yield* Windows.MaxWindows)
    let warnedAt = -Infinity
    const failed = <A, E>(cause: unknown, instead: Effect.Effect<A, E>): Effect.Effect<A, E | StorageError> => {
      if (fallback === "closed") {
        return Effect.fail(new StorageError({ message: `Redis: ${describe(cause)}`, cause }))
      }
      const now = Date.now()
      const warn = now - warnedAt > 10_000
      if (warn) warnedAt = now
      return Effect.zipRight(
        warn
          ? Effect.logError(
            `Redis failed (${describe(cause)}): rate limits are decided by this server alone until it answers again`
          )
          : Effect.void,
        instead
      )
    }

    const takeAll = (requests: ReadonlyArray<WindowRequest>, now: number) =>
      requests.length === 0 ? Effect.succeed([]) : Effect.tryPromise({
        try: () =>
          client.keymeterTake(
            requests.length * 3,
            ...requests.flatMap((r) => keysOf(prefix, r.key)),
            String(now),
            ...requests.flatMap((r) => [r.duration, r.limit, r.cost])
          ),
        catch: (cause) => cause
      }).pipe(
        Effect.map((out): ReadonlyArray<Decision> =>
          requests.map((_, i) => ({
            success: out[3 * i] === 1,
            remaining: Number(out[3 * i + 1]),
            reset: Number(out[3 * i + 2])
          }))
        ),
        Effect.catchAll((cause) => failed(cause, Effect.suspend(() => local.takeAll(requests, now))))
      )

    const refundAll = (taken: ReadonlyArray<{ readonly key: string; readonly cost: number }>, now: number) =>
      taken.length === 0 ? Effect.void : Effect.tryPromise({
        try: () =>
          client.keymeterRefund(
            taken.length * 3,
            ...taken.flatMap((t) => keysOf(prefix, t.key)),
            String(now),
            ...taken.map((t) => t.cost)
          ),
        catch: (cause) => cause
      }).pipe(
        Effect.asVoid,
        Effect.catchAll((cause) => failed(cause, local.refundAll(taken, now)))
      )

    return Windows.Windows.of({ shared: true, takeAll, refundAll })
  })

/** {@link make} as the `Windows` layer. */
export const layer = (options: Options): Layer.Layer<Windows.Windows, StorageError> =>
  Layer.scoped(Windows.Windows, make(options))

const describe = (cause: unknown) => cause instanceof Error ? cause.message : String(cause)
