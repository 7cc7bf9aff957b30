/**
 * The reference queries, all on api_0, over whole hours ending at the last hour of the data.
 */
import type { VerificationQueryInput } from "@keymeter/core/VerificationQuery"
import { apiId, END } from "./Dataset.js"

const HOUR = 3_600_000
const DAY = 86_400_000
const last = END - HOUR
const window = (days: number) => ({ start: last - days * DAY + HOUR, end: last })

export interface Reference {
  readonly id: string
  readonly title: string
  readonly query: VerificationQueryInput
}

export const references: ReadonlyArray<Reference> = [
  { id: "Q1", title: "day buckets, 30 d", query: { apiId: apiId(0), groupBy: ["day"], ...window(30) } },
  { id: "Q2", title: "hour buckets, 7 d", query: { apiId: apiId(0), groupBy: ["hour"], ...window(7) } },
  {
    id: "Q3",
    title: "top 10 keys, 30 d",
    query: { apiId: apiId(0), groupBy: ["key"], orderBy: "total", order: "desc", limit: 10, ...window(30) }
  },
  { id: "Q4", title: "per tag, 30 d", query: { apiId: apiId(0), groupBy: ["tag"], ...window(30) } },
  {
    id: "Q5",
    title: "one key by hour, 90 d",
    query: { apiId: apiId(0), keyId: ["key_0_0"], groupBy: ["hour"], ...window(90) }
  },
  { id: "Q6", title: "total, 90 d", query: { apiId: apiId(0), ...window(90) } },
  {
    id: "Q7",
    title: "top 10 identities, 30 d",
    query: { apiId: apiId(0), groupBy: ["identity"], orderBy: "total", order: "desc", limit: 10, ...window(30) }
  }
]
