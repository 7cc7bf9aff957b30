// The domain's spans: given to a tracer a user provides, not made under Effect's own tracer
// (which keeps none) since each costs the request time.
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Tracer from "effect/Tracer"
import * as Span from "../src/internal/Span.js"

describe("Span", () => {
  it.effect("makes no span under Effect's own tracer", () =>
    Effect.gen(function*() {
      const inside = yield* Effect.option(Effect.currentSpan).pipe(Span.span("Test.native"))
      expect(Option.isNone(inside)).toBe(true)
    }))

  it.effect("gives every span to a tracer that is provided, named, with its parent", () =>
    Effect.gen(function*() {
      const started: Array<string> = []
      const native = yield* Effect.tracer
      const recording = Tracer.make({
        span: (name, parent, context, links, startTime, kind, options) => {
          started.push(name)
          return native.span(name, parent, context, links, startTime, kind, options)
        },
        context: (f) => f()
      })
      const inner = yield* Effect.currentSpan.pipe(
        Span.span("Test.inner"),
        Span.span("Test.outer"),
        Effect.withTracer(recording)
      )
      expect(started).toEqual(["Test.outer", "Test.inner"])
      expect(inner.name).toBe("Test.inner")
      expect(inner.parent.pipe(Option.map((parent) => parent._tag === "Span" ? parent.name : ""))).toEqual(
        Option.some("Test.outer")
      )
    }))
})
