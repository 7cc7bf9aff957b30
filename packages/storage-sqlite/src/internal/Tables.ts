/**
 * The names of one family of count tables: dictionaries and rollups of the same shapes, counted by
 * the same modules (`Writer`, `Compaction`, `Planner`, ...). Verifications are one family; rate-limit
 * decisions, counted through their projection onto verifications, are another.
 */

/** The rollup tables of a family, by their part: each has the dimensions `Rollup.DIMENSIONS` lists. */
export type Rollup = "hour" | "hourTotal" | "day" | "dayTotal" | "dayKey" | "dayIdentity" | "dayTagset"

/** A family's table names. */
export interface Tables {
  readonly partitions: string
  readonly keys: string
  readonly identities: string
  readonly tagsets: string
  readonly rollups: { readonly [R in Rollup]: string }
  /**
   * Every event in full (migration 0010), where the family keeps spent credits: sums of credits
   * are read from it (the rollups keep counts only).
   */
  readonly events?: string | undefined
}

const family = (dictionaryPrefix: string, rollupPrefix: string, events?: string): Tables => ({
  partitions: `${dictionaryPrefix}partitions`,
  keys: `${dictionaryPrefix}keys`,
  identities: `${dictionaryPrefix}identities`,
  tagsets: `${dictionaryPrefix}tagsets`,
  rollups: {
    hour: `${rollupPrefix}hour`,
    hourTotal: `${rollupPrefix}hour_total`,
    day: `${rollupPrefix}day`,
    dayTotal: `${rollupPrefix}day_total`,
    dayKey: `${rollupPrefix}day_key`,
    dayIdentity: `${rollupPrefix}day_identity`,
    dayTagset: `${rollupPrefix}day_tagset`
  },
  events
})

/** Verifications' tables (migration 0002). */
export const verifications: Tables = family("v_", "r_", "v_events")

/** Rate-limit decisions' tables (migration 0009): the same shapes, prefixed `rl_`. */
export const ratelimits: Tables = family("rl_", "rl_")
