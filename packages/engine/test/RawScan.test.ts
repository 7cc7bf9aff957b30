import { describe, expect, it } from "@effect/vitest"
import type { ScanScope, VerificationColumns } from "@keymeter/core/EventScan"
import * as Verification from "@keymeter/core/Verification"
import type { Verification as Event } from "@keymeter/core/Verification"
import { Engine } from "@keymeter/engine/Engine"
import * as FastCheck from "effect/FastCheck"

const HOUR = 3_600_000
const T0 = Date.UTC(2025, 0, 1)

/** One row of a scan, as plain values. */
interface Row {
  readonly time: number
  readonly apiId: string
  readonly keyId: string
  readonly identityId: string
  readonly externalId: string
  readonly outcome: string
  readonly tags: ReadonlyArray<string>
  readonly spentCredits: number
  readonly latency: number
  readonly region: string
}

/** The rows of a scan's batches, in a canonical order. */
const rowsOf = (batches: ReadonlyArray<VerificationColumns>): Array<Row> => {
  const out: Array<Row> = []
  for (const b of batches) {
    for (let i = 0; i < b.length; i++) {
      out.push({
        time: b.time[i]!,
        apiId: b.apiId.values[b.apiId.codes[i]!]!,
        keyId: b.keyId.values[b.keyId.codes[i]!]!,
        identityId: b.identityId.values[b.identityId.codes[i]!]!,
        externalId: b.externalId.values[b.externalId.codes[i]!]!,
        outcome: Verification.Outcomes[b.outcome[i]!]!,
        tags: b.tags.values[b.tags.codes[i]!]!,
        spentCredits: b.spentCredits[i]!,
        latency: b.latency[i]!,
        region: b.region.values[b.region.codes[i]!]!
      })
    }
  }
  return sorted(out)
}

const sorted = (rows: Array<Row>) =>
  rows.map((row) => [JSON.stringify(row), row] as const).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([, row]) => row)

/** The naive answer: every event of the scope, as stored (latency to the microsecond). */
const naive = (events: ReadonlyArray<Event>, scope: ScanScope): Array<Row> =>
  sorted(
    events.filter((e) =>
      e.workspaceId === scope.workspaceId && (scope.within === undefined || scope.within.includes(e.apiId)) &&
      e.time >= scope.from && e.time < scope.to
    ).map((e) => ({
      time: e.time,
      apiId: e.apiId,
      keyId: e.keyId,
      identityId: e.identity?.id ?? "",
      externalId: e.identity?.externalId ?? "",
      outcome: e.outcome,
      tags: e.tags,
      spentCredits: e.spentCredits ?? 0,
      latency: Math.round((e.latency ?? 0) * 1000) / 1000,
      region: e.region ?? ""
    }))
  )

const eventArb = FastCheck.record({
  time: FastCheck.oneof(
    FastCheck.integer({ min: T0, max: T0 + 72 * HOUR }),
    FastCheck.integer({ min: 0, max: 72 }).map((h) => T0 + h * HOUR)
  ),
  workspaceId: FastCheck.constantFrom("ws", "ws", "ws", "ws_other"),
  apiId: FastCheck.constantFrom("a", "a", "b", "c"),
  keyId: FastCheck.constantFrom("k1", "k2", "k3"),
  identity: FastCheck.option(
    FastCheck.constantFrom({ id: "i1", externalId: "e1" }, { id: "i2", externalId: "e1" }, {
      id: "i1",
      externalId: "e2"
    }),
    { nil: undefined }
  ),
  outcome: FastCheck.constantFrom(...Verification.Outcomes),
  tags: FastCheck.subarray(["x", "y", "z"]),
  spentCredits: FastCheck.oneof(FastCheck.constant(0), FastCheck.integer({ min: 0, max: 2 ** 32 - 1 })),
  latency: FastCheck.oneof(
    FastCheck.constant(0),
    FastCheck.double({ min: 0, max: 3_600_000, noNaN: true }),
    FastCheck.integer({ min: 0, max: 5_000_000 }).map((us) => us / 1000)
  ),
  region: FastCheck.constantFrom("", "", "eu-west-1", "us-east-1", "ap")
}).map((fields) => Verification.make(fields))

const scopeArb = FastCheck.record({
  workspaceId: FastCheck.constantFrom("ws", "ws", "ws", "ws_other", "ws_none"),
  within: FastCheck.option(FastCheck.subarray(["a", "b", "c", "d"]), { nil: undefined }),
  // Windows on hour bounds and inside hours alike.
  bounds: FastCheck.tuple(
    FastCheck.oneof(
      FastCheck.integer({ min: T0 - HOUR, max: T0 + 74 * HOUR }),
      FastCheck.integer({ min: -1, max: 74 }).map((h) => T0 + h * HOUR)
    ),
    FastCheck.oneof(
      FastCheck.integer({ min: T0 - HOUR, max: T0 + 74 * HOUR }),
      FastCheck.integer({ min: -1, max: 74 }).map((h) => T0 + h * HOUR),
      FastCheck.integer({ min: 0, max: 2 * HOUR })
    )
  )
}).map(({ bounds: [from, span], within, workspaceId }): ScanScope => ({
  workspaceId,
  within,
  from,
  to: span < 2 * HOUR + 1 && span < T0 ? from + span : span,
  maxRows: 1_000_000
}))

/** Events stored in arrival order: the oldest third arrives last, so it waits as late rows. */
const arrival = (events: ReadonlyArray<Event>) => {
  const byTime = [...events].sort((a, b) => a.time - b.time)
  const cut = Math.floor(byTime.length / 3)
  return [...byTime.slice(cut), ...byTime.slice(0, cut).reverse()]
}

describe("Engine.scan", () => {
  it("returns exactly the scope's events, on hour bounds and inside hours, late and merged alike", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.array(eventArb, { maxLength: 300 }),
        FastCheck.array(scopeArb, { minLength: 1, maxLength: 10 }),
        FastCheck.constantFrom(65_536, 4),
        (events, scopes, threshold) => {
          const engine = new Engine({ lateMergeThreshold: threshold })
          const ordered = arrival(events)
          for (let i = 0; i < ordered.length; i += 17) engine.append(ordered.slice(i, i + 17))
          for (const scope of scopes) {
            expect(rowsOf(engine.scan(scope)!), JSON.stringify(scope)).toEqual(naive(events, scope))
          }
        }
      ),
      { numRuns: 200 }
    )
  })

  it("cuts the hours at a window's edges to the millisecond, in main and late rows", () => {
    const engine = new Engine()
    const h = T0 + 10 * HOUR
    const at = (time: number, keyId = "k") =>
      Verification.make({ time, workspaceId: "ws", apiId: "a", keyId, outcome: "valid" })
    engine.append([at(h), at(h + 999), at(h + 1000), at(h + HOUR - 1), at(h + HOUR), at(h + 2 * HOUR + 5)])
    // Late: older than the newest hour.
    engine.append([at(h + 1000, "late"), at(h + 999, "late"), at(h + HOUR + 7, "late")])
    const times = (from: number, to: number) =>
      rowsOf(engine.scan({ workspaceId: "ws", within: undefined, from, to, maxRows: 100 })!).map((r) =>
        `${r.time - h}${r.keyId === "late" ? "L" : ""}`
      )
    expect(times(h + 1000, h + HOUR)).toEqual(["1000", "1000L", "3599999"].sort())
    expect(times(h + 999, h + 1000)).toEqual(["999", "999L"])
    expect(times(h + 1000, h + HOUR + 8)).toEqual(["1000", "1000L", "3599999", "3600000", "3600007L"].sort())
    expect(times(h, h + 2 * HOUR + 5)).toHaveLength(8)
    expect(times(h + 1, h + 1)).toEqual([])
    expect(times(h + 5, h)).toEqual([])
  })

  it("hands its columns over as views, with the partition's dictionaries, and copies only edge chunks", () => {
    const engine = new Engine()
    const events: Array<Event> = []
    for (let i = 0; i < 70_000; i++) {
      events.push(Verification.make({
        time: T0 + i * 1000,
        workspaceId: "ws",
        apiId: "a",
        keyId: `k${i % 10}`,
        outcome: "valid",
        identity: i % 2 === 0 ? { id: `i${i % 4}`, externalId: `e${i % 4}` } : undefined,
        tags: i % 3 === 0 ? ["t"] : [],
        spentCredits: i % 5,
        latency: (i % 7) * 0.001,
        region: i % 2 === 0 ? "eu" : ""
      }))
    }
    engine.append(events)
    const whole = engine.scan({ workspaceId: "ws", within: ["a"], from: T0, to: T0 + 70_000_000, maxRows: 70_000 })!
    expect(whole.map((b) => b.length)).toEqual([65_536, 70_000 - 65_536])
    const [first] = whole
    // Views of the chunk's columns: the key codes share the chunk's buffer.
    expect((first!.keyId.codes as Uint32Array).buffer.byteLength).toBe(65_536 * 4)
    expect(first!.keyId.values).toEqual(["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9"])
    expect(first!.identityId.values).toEqual(["", "i0", "i2"])
    expect(first!.externalId.values).toEqual(["", "e0", "e2"])
    expect(first!.region.values).toEqual(["", "eu"])
    expect(first!.tags.values).toEqual([[], ["t"]])
    expect(Array.from(first!.spentCredits as Uint32Array).slice(0, 6)).toEqual([0, 1, 2, 3, 4, 0])
    expect(Array.from(first!.latency).slice(0, 3)).toEqual([0, 0.001, 0.002])
    expect(rowsOf(whole)).toEqual(
      naive(events, { workspaceId: "ws", within: ["a"], from: T0, to: Infinity, maxRows: 0 })
    )
    // A window cutting an hour of the first chunk: that chunk is copied, with the rows inside only.
    const cut = engine.scan({
      workspaceId: "ws",
      within: undefined,
      from: T0 + 1500,
      to: T0 + 70_000_000,
      maxRows: 70_000
    })!
    expect(cut.map((b) => b.length)).toEqual([65_536 - 2, 70_000 - 65_536])
    expect((cut[0]!.keyId.codes as Uint32Array).buffer.byteLength).toBe((65_536 - 2) * 4)
  })

  it("hands over batches that later appends leave as they are, merges of late rows included", () => {
    const engine = new Engine({ lateMergeThreshold: 4 })
    const at = (hour: number, keyId: string) =>
      Verification.make({ time: T0 + hour * HOUR, workspaceId: "ws", apiId: "a", keyId, outcome: "valid" })
    engine.append(Array.from({ length: 100 }, (_, h) => at(h, `k${h}`)))
    const scope = { workspaceId: "ws", within: undefined, from: T0, to: T0 + 100 * HOUR, maxRows: 1000 }
    const batches = engine.scan(scope)!
    const before = rowsOf(batches)
    // Late rows displacing the main run's rows from hour 50 on: merged, rewriting them.
    engine.append(Array.from({ length: 20 }, (_, i) => at(50 + i, "late")))
    expect(rowsOf(batches)).toEqual(before)
    expect(rowsOf(engine.scan(scope)!)).toHaveLength(120)
  })

  it("answers undefined past maxRows, counting only the rows inside the window", () => {
    const engine = new Engine()
    const events = Array.from(
      { length: 100 },
      (_, i) =>
        Verification.make({
          time: T0 + i * 60_000,
          workspaceId: "ws",
          apiId: i % 2 ? "a" : "b",
          keyId: "k",
          outcome: "valid"
        })
    )
    engine.append(events)
    const scope = { workspaceId: "ws", within: undefined, from: T0 + 30 * 60_000, to: T0 + 70 * 60_000 }
    expect(rowsOf(engine.scan({ ...scope, maxRows: 40 })!)).toHaveLength(40)
    expect(engine.scan({ ...scope, maxRows: 39 })).toBeUndefined()
    expect(engine.scan({ ...scope, within: ["a"], maxRows: 20 })!.reduce((n, b) => n + b.length, 0)).toBe(20)
    expect(engine.scan({ ...scope, within: ["a", "a"], maxRows: 19 })).toBeUndefined()
    expect(engine.scan({ ...scope, within: [], maxRows: 0 })).toEqual([])
    expect(engine.scan({ ...scope, workspaceId: "ws_other", maxRows: 0 })).toEqual([])
  })

  it("clamps credits and latency to what a Uint32 holds, and keeps rollup rows at the start of their hour", () => {
    const engine = new Engine()
    const base = { workspaceId: "ws", apiId: "a", keyId: "k", outcome: "valid" as const }
    engine.append([
      Verification.make({ ...base, time: T0, spentCredits: 2 ** 40, latency: 5_000_000 }),
      Verification.make({ ...base, time: T0 + 1, spentCredits: -3, latency: -1 }),
      // Made without the details (as a rate-limit decision's projection is): none.
      { time: T0 + 2, workspaceId: "ws", apiId: "a", keyId: "k", identity: undefined, outcome: "valid", tags: [] }
    ])
    const loader = engine.load("ws", "b", { replace: false })
    loader.add(
      T0 / HOUR + 2,
      loader.keyCode("r"),
      loader.identityCode({ id: "i", externalId: "e" }),
      loader.tagsetCode(["t"]),
      4,
      2
    )
    loader.flush()
    const rows = rowsOf(engine.scan({ workspaceId: "ws", within: undefined, from: 0, to: T0 + 3 * HOUR, maxRows: 10 })!)
    expect(rows.map((r) => [r.time - T0, r.keyId, r.spentCredits, r.latency, r.region, r.outcome])).toEqual([
      [0, "k", 2 ** 32 - 1, (2 ** 32 - 1) / 1000, "", "valid"],
      [1, "k", 0, 0, "", "valid"],
      [2, "k", 0, 0, "", "valid"],
      [2 * HOUR, "r", 0, 0, "", "rateLimited"],
      [2 * HOUR, "r", 0, 0, "", "rateLimited"]
    ])
    expect(rows[3]).toMatchObject({ identityId: "i", externalId: "e", tags: ["t"] })
  })

  it("keeps no details in an engine that only counts: 14 bytes less an event, and no scan", () => {
    const counting = new Engine({ details: false })
    const detailed = new Engine()
    const events = Array.from({ length: 3 * 65_536 }, (_, i) =>
      Verification.make({
        time: T0 + i * 1000,
        workspaceId: "ws",
        apiId: "a",
        keyId: `k${i % 50}`,
        outcome: "valid",
        spentCredits: 1,
        latency: 2,
        region: `r${i % 100}`
      }))
    counting.append(events)
    detailed.append(events)
    expect((detailed.stats().bytes - counting.stats().bytes) / events.length).toBe(14)
    expect(() => counting.scan({ workspaceId: "ws", within: undefined, from: 0, to: T0 * 2, maxRows: 10 })).toThrow(
      /keeps no event details/
    )
  })

  it("widens a partition's region codes past 65,535 regions, keeping those already stored", () => {
    const engine = new Engine({ lateMergeThreshold: 1_000 })
    // 40,000 events over hours 10..49, then 30,000 of hours 0..8, late, merged in bulk as they
    // come: the 65,536th region arrives among them. Every event has a region of its own.
    const events = Array.from({ length: 70_000 }, (_, i) =>
      Verification.make({
        time: i < 40_000 ? T0 + 10 * HOUR + i * 3600 : T0 + (i - 40_000) * 1080,
        workspaceId: "ws",
        apiId: "a",
        keyId: "k",
        outcome: "valid",
        region: `r${i}`
      }))
    for (let i = 0; i < events.length; i += 5_000) engine.append(events.slice(i, i + 5_000))
    const scope = { workspaceId: "ws", within: undefined, from: T0, to: T0 + HOUR * 50, maxRows: 70_000 }
    const got = rowsOf(engine.scan(scope)!)
    expect(got).toEqual(naive(events, scope))
    expect(new Set(got.map((r) => r.region)).size).toBe(70_000)
  })
})
