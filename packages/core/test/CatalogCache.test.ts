// The cache of catalog reads: kept while the revision holds, and bounded by evicting what is
// least recently used, so a flood of new keys (unknown root keys) never pushes out those in use.
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { Missing } from "../src/Decision.js"
import { CatalogCache } from "../src/internal/CatalogCache.js"

describe("CatalogCache", () => {
  it.effect("keeps the keys in use through a flood of 50,000 new ones, and reads again after a change", () =>
    Effect.gen(function*() {
      let revision = 1
      const cache = new CatalogCache<string>(() => revision)
      let reads = 0
      const get = (key: string) =>
        Effect.gen(function*() {
          const found = cache.lookup(key, () => Effect.sync(() => (reads++, `value of ${key}`)))
          if (!(found instanceof Missing)) return found
          yield* found.load
          const again = cache.lookup(key, () => Effect.die("read twice"))
          return again instanceof Missing ? expect.unreachable() : again
        })
      const hot = Array.from({ length: 20 }, (_, i) => `hot_${i}`)
      for (const key of hot) yield* get(key)
      for (let i = 0; i < 50_000; i++) {
        yield* get(`flood_${i}`)
        // Each key in use is asked about once in every 500 requests.
        if (i % 25 === 0) yield* get(hot[(i / 25) % hot.length]!)
      }
      expect(reads).toBe(hot.length + 50_000)
      // The oldest of the flood went; the newest stay.
      expect(cache.lookup("flood_0", () => Effect.void as never)).toBeInstanceOf(Missing)
      expect(cache.lookup("flood_49999", () => Effect.die("kept") as never)).toBe("value of flood_49999")
      revision++
      expect(cache.lookup("hot_0", () => Effect.succeed("new"))).toBeInstanceOf(Missing)
    }))
})
