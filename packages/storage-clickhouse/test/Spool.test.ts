import { describe, expect, it } from "@effect/vitest"
import { StorageError } from "@keymeter/core/Errors"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import * as Spool from "../src/internal/Spool.js"

/** ClickHouse as the spool sees it: rows by batch id, inserts counted, failing while `down`. */
const fakeClickhouse = () => {
  const rows = new Map<string, Array<string>>()
  const target = {
    rows,
    inserts: 0,
    down: false,
    total: () => [...rows.values()].reduce((n, r) => n + r.length, 0),
    values: () => [...rows.values()].flat().map((line) => (JSON.parse(line) as { n: number }).n).sort((a, b) => a - b)
  }
  const spoolTarget: Spool.Target = {
    insert: (body) =>
      Effect.suspend(() => {
        if (target.down) return Effect.fail(new StorageError({ message: "ClickHouse is unreachable" }))
        target.inserts++
        for (const line of Buffer.from(body).toString("utf8").split("\n").filter((l) => l !== "")) {
          const { batch } = JSON.parse(line) as { batch: string }
          rows.set(batch, [...(rows.get(batch) ?? []), line])
        }
        return Effect.void
      }),
    counts: (from, to) =>
      Effect.suspend(() =>
        target.down
          ? Effect.fail(new StorageError({ message: "ClickHouse is unreachable" }))
          : Effect.succeed(
            new Map([...rows].filter(([batch]) => batch >= from && batch < to).map(([batch, r]) => [batch, r.length]))
          )
      )
  }
  return { target, spoolTarget }
}

/** A round of `count` rows numbered from `first`. */
const round = (first: number, count: number) => (batch: string): Spool.Rows => ({
  lines: Array.from({ length: count }, (_, i) => JSON.stringify({ batch, n: first + i }) + "\n").join(""),
  events: count,
  firstHour: 1,
  lastHour: 2
})

const withFolder = <A, E>(f: (directory: string) => Effect.Effect<A, E>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => mkdtempSync(path.join(tmpdir(), "keymeter-spool-"))),
    f,
    (directory) => Effect.sync(() => rmSync(directory, { recursive: true, force: true }))
  )

/** A long interval: only `flush` (or closing) ships. */
const open = (directory: string, target: Spool.Target, options: Partial<Spool.Options> = {}) =>
  Spool.make({ directory, intervalMs: 3_600_000, ...options }, target)

const segments = (directory: string) => readdirSync(directory).filter((name) => name.endsWith(".spool")).sort()
const state = (directory: string) => JSON.parse(readFileSync(path.join(directory, "state.json"), "utf8"))

describe("Spool", () => {
  it.effect("acknowledges rounds once on disk and ships them together, each row once", () =>
    withFolder((directory) =>
      Effect.gen(function*() {
        const { spoolTarget, target } = fakeClickhouse()
        yield* Effect.scoped(Effect.gen(function*() {
          const spool = yield* open(directory, spoolTarget)
          for (let r = 0; r < 20; r++) yield* spool.append(round(r * 10, 10))
          expect(target.total()).toBe(0)
          // On disk before ClickHouse has seen any.
          expect(readFileSync(path.join(directory, segments(directory)[0]!), "utf8")).toContain("\"n\":199}")
          yield* spool.flush
          expect([target.inserts, target.total()]).toEqual([1, 200])
          yield* spool.flush
          expect(target.inserts).toBe(1)
        }))
        expect(target.values()).toEqual(Array.from({ length: 200 }, (_, i) => i))
      })
    ))

  it.live("ships at each interval without being asked", () =>
    withFolder((directory) =>
      Effect.gen(function*() {
        const { spoolTarget, target } = fakeClickhouse()
        yield* Effect.scoped(Effect.gen(function*() {
          const spool = yield* Spool.make({ directory, intervalMs: 20 }, spoolTarget)
          yield* spool.append(round(0, 5))
          for (let i = 0; i < 200 && target.total() < 5; i++) yield* Effect.sleep("10 millis")
          expect(target.total()).toBe(5)
        }))
      })
    ))

  it.effect("keeps what ClickHouse refused and ships it once it answers, nothing twice", () =>
    withFolder((directory) =>
      Effect.gen(function*() {
        const { spoolTarget, target } = fakeClickhouse()
        target.down = true
        yield* Effect.scoped(Effect.gen(function*() {
          const spool = yield* open(directory, spoolTarget)
          yield* spool.append(round(0, 10))
          expect(Exit.isFailure(yield* Effect.exit(spool.flush))).toBe(true)
          yield* spool.append(round(10, 10))
          target.down = false
          yield* spool.flush
        }))
        expect(target.values()).toEqual(Array.from({ length: 20 }, (_, i) => i))
      })
    ))

  it.effect("settles a shipment a crash left in doubt from what ClickHouse holds", () =>
    withFolder((directory) =>
      Effect.gen(function*() {
        const { spoolTarget, target } = fakeClickhouse()
        // Closed with ClickHouse down: four rounds wait on disk.
        target.down = true
        yield* Effect.scoped(Effect.gen(function*() {
          const spool = yield* open(directory, spoolTarget)
          for (let r = 0; r < 4; r++) yield* spool.append(round(r * 10, 10))
        }))
        target.down = false
        // As a crash would leave it: the shipment of all four begun, two of its records already in
        // ClickHouse (the insert of an earlier try landed in part: one record per partition).
        const end = readFileSync(path.join(directory, segments(directory)[0]!)).length
        writeFileSync(path.join(directory, "state.json"), JSON.stringify({ ...state(directory), pending: end }))
        const copy = mkdtempSync(path.join(tmpdir(), "keymeter-spool-"))
        try {
          writeFileSync(path.join(copy, "state.json"), readFileSync(path.join(directory, "state.json")))
          writeFileSync(
            path.join(copy, segments(directory)[0]!),
            readFileSync(path.join(directory, segments(directory)[0]!))
          )
          const first = fakeClickhouse()
          yield* Effect.scoped(Effect.flatMap(open(copy, first.spoolTarget), (spool) => spool.flush))
          const [a, , c] = [...first.target.rows.keys()]
          target.rows.set(a!, first.target.rows.get(a!)!)
          target.rows.set(c!, first.target.rows.get(c!)!)
        } finally {
          rmSync(copy, { recursive: true, force: true })
        }
        yield* Effect.scoped(Effect.flatMap(open(directory, spoolTarget), (spool) => spool.flush))
        expect(target.values()).toEqual(Array.from({ length: 40 }, (_, i) => i))
        expect(state(directory).pending).toBeUndefined()
      })
    ))

  it.effect("cuts a record torn by a crash off, keeping those before it", () =>
    withFolder((directory) =>
      Effect.gen(function*() {
        const { spoolTarget, target } = fakeClickhouse()
        target.down = true
        yield* Effect.scoped(Effect.flatMap(open(directory, spoolTarget), (spool) => spool.append(round(0, 3))))
        // A second record, its write cut short (never acknowledged).
        appendFileSync(path.join(directory, segments(directory)[0]!), "#500 123 2 1 2\n{\"batch\":\"x\",\"n\":3}\n")
        target.down = false
        yield* Effect.scoped(Effect.gen(function*() {
          const spool = yield* open(directory, spoolTarget)
          yield* spool.append(round(3, 2))
          yield* spool.flush
        }))
        expect(target.values()).toEqual([0, 1, 2, 3, 4])
      })
    ))

  it.effect("starts new segments as they fill and removes those shipped", () =>
    withFolder((directory) =>
      Effect.gen(function*() {
        const { spoolTarget, target } = fakeClickhouse()
        yield* Effect.scoped(Effect.gen(function*() {
          const spool = yield* open(directory, spoolTarget, { segmentBytes: 200, maxShipmentBytes: 300 })
          for (let r = 0; r < 30; r++) yield* spool.append(round(r * 3, 3))
          expect(segments(directory).length).toBeGreaterThan(5)
          yield* spool.flush
          expect(segments(directory).length).toBe(1)
        }))
        expect(target.values()).toEqual(Array.from({ length: 90 }, (_, i) => i))
        expect(target.inserts).toBeGreaterThan(5)
      })
    ))

  it.effect("refuses rounds past its bound while ClickHouse is down, keeping those it took", () =>
    withFolder((directory) =>
      Effect.gen(function*() {
        const { spoolTarget, target } = fakeClickhouse()
        target.down = true
        yield* Effect.scoped(Effect.gen(function*() {
          const spool = yield* open(directory, spoolTarget, { maxBytes: 1_000 })
          let taken = 0
          let refused: unknown
          for (let r = 0; r < 100 && refused === undefined; r++) {
            const exit = yield* Effect.exit(spool.append(round(r * 10, 10)))
            if (Exit.isSuccess(exit)) taken++
            else refused = exit.cause
          }
          expect(String(refused)).toContain("not yet in ClickHouse")
          target.down = false
          yield* spool.flush
          expect(target.total()).toBe(taken * 10)
          yield* spool.append(round(5000, 1))
        }))
      })
    ))

  it.effect("is one store's: a second in the same folder is refused until the first closes", () =>
    withFolder((directory) =>
      Effect.gen(function*() {
        const { spoolTarget } = fakeClickhouse()
        yield* Effect.scoped(Effect.gen(function*() {
          yield* open(directory, spoolTarget)
          const second = yield* Effect.exit(Effect.scoped(open(directory, spoolTarget)))
          expect(String(Exit.isFailure(second) && second.cause)).toContain("could not be used")
        }))
        yield* Effect.scoped(open(directory, spoolTarget))
        // A lock left by a process that died holds nothing.
        writeFileSync(path.join(directory, "lock"), "999999999")
        yield* Effect.scoped(open(directory, spoolTarget))
      })
    ))
})
