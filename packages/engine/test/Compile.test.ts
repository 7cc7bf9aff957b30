/**
 * Compile: the scan loops' cache. Every distinct shape has a loop of its own (a shared one would
 * count into the wrong groups); one shape asked in another field order, with `credits` left out
 * rather than false, or with its mapped dims in another order, is the same loop (compiled and
 * warmed once).
 */
import { describe, expect, it } from "@effect/vitest"
import type { Dim, Shape } from "../src/internal/query/Compile.js"
import { compile } from "../src/internal/query/Compile.js"

const DIMS: ReadonlyArray<Dim> = ["key", "identity", "tagset"]

/** Every shape the scans can ask for, each once. */
const shapes = (): Array<Shape> => {
  const out: Array<Shape> = []
  const bools = [false, true]
  const mappings: Array<Shape["mapped"] | undefined> = [undefined]
  for (let set = 1; set < 8; set++) {
    const dims = DIMS.filter((_, i) => (set & (1 << i)) !== 0)
    for (const dense of bools) for (const perTag of bools) mappings.push({ dims, dense, perTag })
  }
  for (const keyFilter of bools) {
    for (const tagFilter of bools) {
      for (const identityFilter of bools) {
        for (const requireIdentity of bools) {
          for (const track of bools) {
            for (const counting of ["outcomes", "totals"] as const) {
              for (const credits of bools) {
                for (const source of ["range", "postings"] as const) {
                  for (const group of ["none", "key", "identity", "tagset", "map"] as const) {
                    for (const mapped of group === "map" ? mappings.slice(1) : [undefined]) {
                      out.push({
                        keyFilter,
                        tagFilter,
                        identityFilter,
                        requireIdentity,
                        group,
                        ...(mapped !== undefined ? { mapped } : {}),
                        track,
                        counting,
                        credits,
                        source
                      })
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return out
}

describe("Compile.compile", () => {
  it("gives every distinct shape a loop of its own", () => {
    const all = shapes()
    const loops = new Set(all.map(compile))
    expect(loops.size).toBe(all.length)
  })

  it("gives one shape the same loop however it is spelled", () => {
    for (const shape of shapes().filter((_, i) => i % 7 === 0)) {
      const loop = compile(shape)
      // Fields in reverse order; credits absent where false; mapped dims reversed.
      const respelled = Object.fromEntries(
        Object.entries(shape)
          .filter(([name, value]) => !(name === "credits" && value === false))
          .reverse()
          .map(([name, value]) =>
            name === "mapped"
              ? [name, {
                ...(value as NonNullable<Shape["mapped"]>),
                dims: [...(value as NonNullable<Shape["mapped"]>).dims].reverse()
              }]
              : [name, value]
          )
      ) as unknown as Shape
      expect(compile(respelled)).toBe(loop)
    }
  })
})
