import { describe, expect, it } from "@effect/vitest"
import { Override } from "@keymeter/core/Override"
import { compare, matches, OverrideIndex, resolveAcross } from "@keymeter/core/OverrideIndex"
import * as FastCheck from "effect/FastCheck"

let next = 0
const override = (identifier: string, createdAt = 1000, id?: string) =>
  new Override({
    id: id ?? `rlor_${String(next++).padStart(26, "0")}`,
    namespaceId: "rlns_1",
    identifier,
    limit: 1,
    duration: 1000,
    async: false,
    createdAt,
    updatedAt: createdAt
  })

describe("matches", () => {
  it("lets * match any run, the empty run included, and everything else itself", () => {
    expect(matches("*", "")).toBe(true)
    expect(matches("user_*", "user_")).toBe(true)
    expect(matches("user_*", "user_42")).toBe(true)
    expect(matches("*@example.com", "ann@example.com")).toBe(true)
    expect(matches("a*b*c", "abc")).toBe(true)
    expect(matches("a*b*c", "a__b__c")).toBe(true)
    expect(matches("a*b*c", "acb")).toBe(false)
    expect(matches("ab*ba", "aba")).toBe(false)
    expect(matches("a**b", "ab")).toBe(true)
    expect(matches("user_1", "user_12")).toBe(false)
    expect(matches("User_*", "user_1")).toBe(false)
  })
})

describe("OverrideIndex.resolve", () => {
  it("rule 2: an exact identifier beats a wildcard, even an older one with as many literals", () => {
    const index = new OverrideIndex([override("user_1*", 1), override("user_1", 50)])
    expect(index.resolve("user_1")?.identifier).toBe("user_1")
    expect(index.resolve("user_12")?.identifier).toBe("user_1*")
  })

  it("rule 3: more literal characters beat fewer, even when the fewer is older", () => {
    const index = new OverrideIndex([override("user_*", 1), override("user_1*", 99), override("*", 0)])
    expect(index.resolve("user_12")?.identifier).toBe("user_1*")
    expect(index.resolve("user_2")?.identifier).toBe("user_*")
    expect(index.resolve("other")?.identifier).toBe("*")
  })

  it("rule 4: on equal literals the older wins (createdAt, then id)", () => {
    const index = new OverrideIndex([override("a*c", 20), override("ab*", 10)])
    expect(index.resolve("abc")?.identifier).toBe("ab*")
    const tie = new OverrideIndex([override("x*z", 5, "rlor_B"), override("xy*", 5, "rlor_A")])
    expect(tie.resolve("xyz")?.id).toBe("rlor_A")
  })

  it("never applies a deleted override, and applies a re-set one", () => {
    const index = new OverrideIndex([override("user_*"), override("user_1")])
    expect(index.delete("user_1")).toBe(true)
    expect(index.resolve("user_1")?.identifier).toBe("user_*")
    expect(index.delete("user_*")).toBe(true)
    expect(index.resolve("user_1")).toBeUndefined()
    expect(index.delete("user_*")).toBe(false)
    index.set(override("user_*"))
    expect(index.resolve("user_1")?.identifier).toBe("user_*")
    expect(index.size).toBe(1)
  })

  it("replaces an override set again for the same identifier", () => {
    const index = new OverrideIndex([override("a*", 1, "rlor_first")])
    index.set(new Override({ ...override("a*", 1, "rlor_first"), limit: 7 }))
    expect(index.size).toBe(1)
    expect(index.resolve("abc")?.limit).toBe(7)
    expect(index.get("a*")?.limit).toBe(7)
  })

  it("rule 1: the request namespace's own override beats any namespace pattern's", () => {
    const own = new OverrideIndex([override("*", 1)])
    const pattern = new OverrideIndex([override("user_1", 0)])
    expect(resolveAcross(own, [pattern], "user_1")?.identifier).toBe("*")
    // Without an own match, the patterns' best by rules 2-4.
    const second = new OverrideIndex([override("user_*", 0)])
    expect(resolveAcross(new OverrideIndex(), [second, pattern], "user_1")?.identifier).toBe("user_1")
  })

  it("resolves like brute force over every override, whatever the patterns", () => {
    const alphabet = FastCheck.constantFrom("a", "b", "*", "é", "😀")
    const pattern = FastCheck.array(alphabet, { minLength: 1, maxLength: 6 }).map((c) => c.join(""))
    const identifier = FastCheck.array(FastCheck.constantFrom("a", "b", "é", "😀"), { maxLength: 7 }).map((c) =>
      c.join("")
    )
    FastCheck.assert(
      FastCheck.property(
        FastCheck.uniqueArray(FastCheck.tuple(pattern, FastCheck.integer({ min: 0, max: 3 })), {
          selector: ([p]) => p,
          maxLength: 40
        }),
        FastCheck.array(identifier, { minLength: 1, maxLength: 20 }),
        (entries, identifiers) => {
          const overrides = entries.map(([p, createdAt]) => override(p, createdAt))
          const index = new OverrideIndex(overrides)
          for (const id of identifiers) {
            const brute = overrides.filter((o) => matches(o.identifier, id)).sort(compare)[0]
            expect(index.resolve(id)?.id, `${id} among ${entries.map(([p]) => p).join(" ")}`).toBe(brute?.id)
          }
        }
      ),
      { numRuns: 500 }
    )
  })
})
