import { describe, expect, it } from "@effect/vitest"
import * as Ids from "@keymeter/core/Ids"

describe("Ids", () => {
  it("makes prefixed, 26-character ids that sort in creation order, within a millisecond too", () => {
    const ids = Array.from({ length: 2000 }, () => Ids.make("rlor", 1_700_000_000_000))
    expect(ids[0]).toMatch(/^rlor_[0-9A-HJKMNP-TV-Z]{26}$/)
    expect(new Set(ids).size).toBe(ids.length)
    expect([...ids].sort()).toEqual(ids)
    // A clock that steps back does not break the order.
    const later = Ids.make("rlor", 1_600_000_000_000)
    expect(later > ids[ids.length - 1]!).toBe(true)
    expect(Ids.make("rlor", 1_800_000_000_000) > later).toBe(true)
  })
})
