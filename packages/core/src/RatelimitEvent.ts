/**
 * Rate-limit decision events: every decision of the limiter (`ratelimits.limit`, `multiLimit`, a
 * key's limits in `keys.verifyKey`), as recorded.
 *
 * Stores count decisions with the machinery that counts verifications, through one projection
 * ({@link asVerification}): the namespace in the api's place, the identifier in the key's, the
 * deciding override as the identity (id and external id both the override's id), and passed or
 * blocked as the `valid` or `rateLimited` outcome. `RatelimitQuery` maps queries the same way, so
 * every store answers rate-limit counts exactly as it answers verification counts.
 */
import type { Verification } from "./Verification.js"

/** Where a decision was made. */
export const Sources = ["limit", "multiLimit", "verifyKey"] as const

/** Where a decision was made. */
export type Source = typeof Sources[number]

/** Code of each source, as stores keep it (its position in {@link Sources}). */
export const SourceIndex: ReadonlyMap<Source, number> = new Map(Sources.map((source, index) => [source, index]))

/** Most bytes of a decision's {@link RatelimitEvent.detail}; larger `meta`/`resources` are cut down to it. */
export const MAX_DETAIL_BYTES = 4_096

/** One decision of the limiter. */
export interface RatelimitEvent {
  /** Unix ms of the decision. */
  readonly time: number
  readonly workspaceId: string
  readonly namespaceId: string
  readonly identifier: string
  readonly passed: boolean
  /** The limit applied: the override's when one decided. */
  readonly limit: number
  /** The window applied, in ms: the override's when one decided. */
  readonly duration: number
  /** What the window had left after the decision. */
  readonly remaining: number
  readonly cost: number
  /** The override that decided the limit and window, if any. */
  readonly overrideId: string | undefined
  readonly source: Source
  /** How long the decision took, in ms to the microsecond: from the request's check to its answer. */
  readonly latency: number
  /**
   * The request's `meta` and `resources` as JSON (`{"meta":…,"resources":[…]}`), at most
   * {@link MAX_DETAIL_BYTES}: past it, the resources that fit, then none, then no meta, with
   * `"truncated":true`. Undefined when the request carried neither.
   */
  readonly detail: string | undefined
}

const byteLength = (text: string) => Buffer.byteLength(text)

/**
 * The bounded {@link RatelimitEvent.detail} of a request's `meta` and `resources`; undefined when
 * it has neither.
 */
export const detailOf = (
  meta: object | undefined,
  resources: ReadonlyArray<unknown> | undefined
): string | undefined => {
  if (meta === undefined && (resources === undefined || resources.length === 0)) return undefined
  const whole = JSON.stringify({ meta, resources })
  // Code units bound bytes from below: most details are short and skip the count.
  if (whole.length * 3 <= MAX_DETAIL_BYTES || byteLength(whole) <= MAX_DETAIL_BYTES) return whole
  const cut = (kept: ReadonlyArray<unknown> | undefined, withMeta: boolean) =>
    JSON.stringify({ meta: withMeta ? meta : undefined, resources: kept, truncated: true })
  // The longest prefix of the resources that fits with the meta, by halving.
  const all = resources ?? []
  let lo = 0
  let hi = all.length
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1
    if (byteLength(cut(all.slice(0, mid), true)) <= MAX_DETAIL_BYTES) lo = mid
    else hi = mid - 1
  }
  const withMeta = cut(lo > 0 ? all.slice(0, lo) : undefined, true)
  return byteLength(withMeta) <= MAX_DETAIL_BYTES ? withMeta : cut(undefined, false)
}

/** The identity standing for an override in the counting projection. */
const overrideIdentity = (overrideId: string) => ({ id: overrideId, externalId: overrideId })

/** The decision as the verification the counting machinery stores (see the module's comment). */
export const asVerification = (event: RatelimitEvent): Verification => ({
  time: event.time,
  workspaceId: event.workspaceId,
  apiId: event.namespaceId,
  keyId: event.identifier,
  identity: event.overrideId === undefined ? undefined : overrideIdentity(event.overrideId),
  outcome: event.passed ? "valid" : "rateLimited",
  tags: NO_TAGS
})

const NO_TAGS: ReadonlyArray<string> = []

/** How many decisions an override made, and when it last made one. */
export interface OverrideHits {
  readonly hits: number
  /** Unix ms of its last decision. */
  readonly lastHitAt: number
}

/** Hits by workspace, then override id, as stores tally them. */
export type HitTally = Map<string, Map<string, { hits: number; lastHitAt: number }>>

/** Adds the hit of `event`'s override (if one decided it) to `tally`. */
export const tallyHit = (tally: HitTally, event: RatelimitEvent): void => {
  if (event.overrideId === undefined) return
  let ofWorkspace = tally.get(event.workspaceId)
  if (ofWorkspace === undefined) tally.set(event.workspaceId, ofWorkspace = new Map())
  const counted = ofWorkspace.get(event.overrideId)
  if (counted === undefined) ofWorkspace.set(event.overrideId, { hits: 1, lastHitAt: event.time })
  else {
    counted.hits++
    if (event.time > counted.lastHitAt) counted.lastHitAt = event.time
  }
}
