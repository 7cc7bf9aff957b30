/**
 * Which rate limits a verification takes: the key's and its identity's (the key's win on a name)
 * that apply automatically or that the call names, at the call's cost, limit and window where it
 * gives them, and the limits it names that neither has.
 */
import type { Identity, Key } from "../Key.js"
import * as KeyModel from "../Key.js"
import type { VerifyKeyInput } from "../KeyVerifier.js"
import type { TakeRequest } from "../RateLimiter.js"

const NO_LIMITS: ReadonlyArray<KeyModel.KeyRatelimit> = []

/** The identity's limits the key does not shadow with its own of the same name. */
const sharedLimits = (key: Key, identity: Identity | undefined) => {
  const limits = identity?.ratelimits ?? NO_LIMITS
  return limits.length === 0 ? limits : limits.filter((limit) => !ownLimit(key, limit.name))
}

const ownLimit = (key: Key, name: string) => key.ratelimits.some((own) => own.name === name)

/** Whether the key or its identity has a limit named `name`. */
export const hasLimit = (key: Key, identity: Identity | undefined, name: string) =>
  ownLimit(key, name) || (identity?.ratelimits?.some((shared) => shared.name === name) ?? false)

/** What a call asks of one limit by name: its cost, and this call's limit and window if given. */
export interface Requested {
  readonly cost: number
  readonly limit: number | undefined
  readonly duration: number | undefined
}

/** Adds to `out` the limits of `limits` a call takes: those applied automatically, and those it names. */
const takeLimits = (
  out: Array<TakeRequest>,
  ownerId: string,
  limits: ReadonlyArray<KeyModel.KeyRatelimit>,
  identifier: string,
  requested: ReadonlyMap<string, Requested> | undefined,
  defaultCost: number | undefined
) => {
  for (const limit of limits) {
    const asked = requested?.get(limit.name)
    if (!limit.autoApply && asked === undefined) continue
    out.push({
      id: KeyModel.ratelimitId(ownerId, limit.name),
      autoApply: limit.autoApply,
      name: limit.name,
      identifier,
      limit: asked?.limit ?? limit.limit,
      duration: asked?.duration ?? limit.duration,
      cost: asked?.cost ?? (limit.name === KeyModel.DEFAULT_RATELIMIT ? defaultCost : undefined) ?? 1
    })
  }
}

/**
 * The limits a call takes: the key's and its identity's (the key's win on a name) that apply
 * automatically or that it names (at their cost, with the call's limit and window where given),
 * then the limits it names that neither has, made of the call's limit and window.
 */
export const limitsOf = (
  key: Key,
  identity: Identity | undefined,
  requested: ReadonlyMap<string, Requested> | undefined,
  defaultCost: number | undefined
): Array<TakeRequest> => {
  const out: Array<TakeRequest> = []
  const identifier = identity?.externalId ?? key.id
  takeLimits(out, key.id, key.ratelimits, identifier, requested, defaultCost)
  if (identity?.ratelimits !== undefined) {
    takeLimits(out, identity.id, sharedLimits(key, identity), identifier, requested, defaultCost)
  }
  if (requested !== undefined && out.length < requested.size) {
    for (const [name, asked] of requested) {
      if (hasLimit(key, identity, name)) continue
      out.push({
        id: KeyModel.ratelimitId(key.id, name),
        autoApply: false,
        name,
        identifier,
        limit: asked.limit!,
        duration: asked.duration!,
        cost: asked.cost
      })
    }
  }
  return out
}

/**
 * What the call asks of each limit it names; the index of the first that neither the key nor its
 * identity has and the call gives no limit and window for, when one is (the caller's mistake).
 */
export const requestedOf = (
  key: Key,
  identity: Identity | undefined,
  request: VerifyKeyInput
): ReadonlyMap<string, Requested> | number | undefined => {
  if (request.ratelimits === undefined || request.ratelimits.length === 0) return undefined
  const requested = new Map<string, Requested>()
  for (const [i, limit] of request.ratelimits.entries()) {
    if (!hasLimit(key, identity, limit.name) && (limit.limit === undefined || limit.duration === undefined)) return i
    requested.set(limit.name, { cost: limit.cost ?? 1, limit: limit.limit, duration: limit.duration })
  }
  return requested
}
