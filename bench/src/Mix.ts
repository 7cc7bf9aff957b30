/**
 * A seeded mix of varied queries, as a user's dashboards would ask them (issue 15's "first
 * sight"): a random api of the ten; an unaligned window of 1 hour to 90 days ending anywhere in
 * the data; every grouping the contract allows (at most one time unit, `tag` or `tags`, with or
 * without key and identity); key filters of popular and rare keys; tag filters; and top-N
 * ordering. Each query is meant to be run once on a process that has not seen it (first sight),
 * then again (repeat).
 */
import type { VerificationQueryInput } from "@keymeter/core/VerificationQuery"
import { apiId, APIS, END, externalId, KEYS_API0, KEYS_OTHER, mulberry32, START, TAGS } from "./Dataset.js"

const HOUR = 3_600_000

/** The `count` queries of the mix seeded `seed`; the same arguments give the same mix. */
export const make = (count: number, seed: number): Array<VerificationQueryInput> => {
  const random = mulberry32(seed)
  const int = (n: number) => Math.floor(random() * n)
  const chance = (p: number) => random() < p
  const pick = <A>(values: ReadonlyArray<A>): A => values[int(values.length)]!
  const out: Array<VerificationQueryInput> = []
  for (let i = 0; i < count; i++) {
    const a = int(APIS)
    const keys = a === 0 ? KEYS_API0 : KEYS_OTHER
    // Windows from an hour to 90 days, log-uniform, unaligned, inside the data's 90 days.
    const length = Math.min(END - START, Math.round(HOUR * Math.exp(random() * Math.log(90 * 24))))
    const start = START + Math.floor(random() * (END - START - length + 1))
    const unit = pick([undefined, undefined, "hour", "day", "month"] as const)
    const groupBy: Array<string> = []
    if (unit !== undefined) groupBy.push(unit)
    if (chance(0.35)) groupBy.push("key")
    if (chance(0.15)) groupBy.push("identity")
    const tagGroup = pick([undefined, undefined, undefined, "tag", "tags"] as const)
    if (tagGroup !== undefined) groupBy.push(tagGroup)
    const query: Record<string, unknown> = { apiId: apiId(a), start, end: start + length - 1 }
    if (groupBy.length > 0) query.groupBy = groupBy
    // Key filters: a popular key (low numbers are the frequent ones), a rare one, or a few.
    if (chance(0.25)) {
      query.keyId = Array.from(
        { length: 1 + int(3) },
        () => `key_${a}_${chance(0.5) ? int(10) : int(keys)}`
      )
    }
    if (chance(0.15)) query.tag = [pick(TAGS)]
    if (chance(0.05)) query.externalId = externalId(int(2000))
    // Top N: the dashboards' "top keys / identities / tags".
    if (groupBy.some((g) => g === "key" || g === "identity" || g === "tag" || g === "tags") && chance(0.6)) {
      query.orderBy = pick(["total", "valid", "rateLimited", "usageExceeded"])
      query.order = "desc"
      query.limit = pick([5, 10, 20, 100])
    }
    out.push(query as unknown as VerificationQueryInput)
  }
  return out
}
