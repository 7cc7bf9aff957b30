/**
 * The hot range of every api held in the columnar engine (`@keymeter/engine`), so queries over recent days are
 * answered at memory speed while SQLite stays the durable truth.
 *
 * After open, the engine is filled in the background from the hour rollups of each api's last
 * `hotDays` days (a rollup row with count n is fed as n events: the engine only counts, so the
 * answers are the same), a few hours per statement, so the store serves at once and the rollups
 * answer an api's queries until its load is done. Every committed batch is appended too: while an
 * api loads, only events of hours already read (the rest are still to be read from SQLite). The
 * caller runs each commit and its append under the same lock as each read of a load, so no event
 * is read and appended both, or neither. An api is covered from the first hour loaded on; an api
 * with nothing older than that, or created after open, is covered entirely. A query is answered
 * here only when its api is loaded and its window lies inside the coverage.
 *
 * Days that age out of the range are dropped by rebuilding the api: once it holds some days more
 * than `hotDays` (see {@link HotIndex.startRebuild}), its last `hotDays` days are loaded the same
 * way into a new partition beside the live one (which keeps answering), which then takes the live
 * one's place. One api is rebuilt at a time, so memory grows by at most one api's range.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { AggregationQuery, AggregationResult } from "@keymeter/core/Aggregation"
import { COUNTER_COLUMNS, OUTCOMES } from "@keymeter/core/Aggregation"
import * as Time from "@keymeter/core/Time"
import type { Verification } from "@keymeter/core/Verification"
import { Engine } from "@keymeter/engine"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { Dictionaries, Partition } from "./Dictionaries.js"

/**
 * Hours read per statement at load: each read holds up ingest and requests, so it is kept short
 * (measured with 50M events over 90 days: 5 ms median, 37 ms p99, 67 ms at most).
 */
const LOAD_HOURS = 6

/** A turn of the event loop (not the Clock's, so it is the same under a TestClock). */
export const nextMacrotask = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/** An api being read from the rollups into its loader. */
interface Load {
  /** First hour to hold. */
  readonly from: number
  /** First hour not yet read. */
  next: number
  /** Fills the live partition (a first load) or one that replaces it when done (a rebuild). */
  readonly codes: CodeTranslation
  readonly rebuild: boolean
}

export class HotIndex {
  // It counts only: raw scans read `v_events`, so events keep no details here (14 bytes less each).
  private readonly engine = new Engine.Engine({ details: false })
  /** First covered hour of apis that hold older data; apis not listed are covered entirely. */
  private readonly coveredFrom = new Map<number, number>()
  /** Apis being read from the rollups, by partition number. */
  private readonly loads = new Map<number, Load>()
  /** Set when the engine failed to take a batch, or a first load failed: the rollups answer everything. */
  private broken = false

  private constructor(private readonly dictionaries: Dictionaries, readonly hotDays: number) {}

  /** An empty index over the last `hotDays` days of every api; {@link load} fills it. */
  static make(dictionaries: Dictionaries, hotDays: number): HotIndex {
    const index = new HotIndex(dictionaries, hotDays)
    for (const partition of dictionaries.partitionsByNo) {
      if (partition === undefined || partition.maxHour < 0) continue
      const from = index.firstHotHour(partition)
      if (partition.minHour < from) index.coveredFrom.set(partition.no, from)
      const start = Math.max(from, partition.minHour)
      const codes = new CodeTranslation(
        dictionaries,
        index.engine.load(partition.workspaceId, partition.apiId, { replace: false })
      )
      index.loads.set(partition.no, { from: start, next: start, codes, rebuild: false })
    }
    return index
  }

  /** First hour of the last `hotDays` days of the api. */
  private firstHotHour(partition: Partition): number {
    return (Math.floor(partition.maxHour / 24) - this.hotDays + 1) * 24
  }

  /**
   * Reads every loading api's hours from the rollups, each statement and what it adds under
   * `exclusive` (the lock the writer commits and appends under). Resolves with the events read.
   */
  load(
    exclusive: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  ): Effect.Effect<number, SqlError, SqlClient.SqlClient> {
    return Effect.gen(this, function*() {
      const sql = yield* SqlClient.SqlClient
      let events = 0
      for (const no of [...this.loads.keys()]) {
        while (this.loads.has(no)) {
          events += yield* exclusive(this.loadHours(sql, no))
          // Reads are synchronous: let I/O (requests) and commits in between them.
          yield* nextMacrotask
        }
      }
      return events
    }).pipe(
      // A load that did not finish is given up: a rebuild's partition is dropped (the live one
      // stays); after a first load that failed, the rollups answer everything.
      Effect.onExit((exit) =>
        Effect.sync(() => {
          if (Exit.isSuccess(exit)) return
          for (const load of this.loads.values()) if (!load.rebuild) this.broken = true
          this.loads.clear()
        })
      )
    )
  }

  /**
   * The api that has aged most past its range by `slackDays` or more, now set to be rebuilt by
   * the next {@link load}; undefined when none has (or a load is under way: one at a time).
   */
  startRebuild(slackDays: number): number | undefined {
    if (this.broken || this.loads.size > 0) return undefined
    let due: Partition | undefined
    let most = slackDays - 1
    for (const partition of this.dictionaries.partitionsByNo) {
      if (partition === undefined || partition.maxHour < 0) continue
      const first = this.coveredFrom.get(partition.no) ?? partition.minHour
      const excess = Math.floor(partition.maxHour / 24) - Math.floor(first / 24) + 1 - this.hotDays
      if (excess > most) {
        most = excess
        due = partition
      }
    }
    if (due === undefined) return undefined
    const from = this.firstHotHour(due)
    const codes = new CodeTranslation(
      this.dictionaries,
      this.engine.load(due.workspaceId, due.apiId, { replace: true })
    )
    this.loads.set(due.no, { from, next: from, codes, rebuild: true })
    return due.no
  }

  /** Reads the next hours of a loading api; once past its last hour, its load is done. */
  private loadHours(sql: SqlClient.SqlClient, no: number) {
    return Effect.gen(this, function*() {
      const load = this.loads.get(no)!
      const partition = this.dictionaries.partitionsByNo[no]!
      if (load.next > partition.maxHour || this.broken) {
        if (load.rebuild && !this.broken) {
          load.codes.loader.commit()
          this.coveredFrom.set(no, load.from)
        }
        this.loads.delete(no)
        return 0
      }
      const rows = yield* sql.unsafe(
        `SELECT hour, key, identity, tagset, ${
          COUNTER_COLUMNS.join(", ")
        } FROM ${this.dictionaries.tables.rollups.hour} WHERE p = ? AND hour >= ? AND hour < ? ORDER BY hour`,
        [no, load.next, load.next + LOAD_HOURS]
      ).values
      const { codes } = load
      const { loader } = codes
      let events = 0
      for (const row of rows) {
        const h = row[0] as number
        const key = codes.key(row[1] as number)
        const identity = codes.identity(row[2] as number)
        const tagset = codes.tagset(row[3] as number)
        for (let outcome = 0; outcome < OUTCOMES; outcome++) {
          const count = row[4 + outcome] as number
          if (count > 0) loader.add(h, key, identity, tagset, outcome, count)
          events += count
        }
      }
      loader.flush()
      load.next += LOAD_HOURS
      return events
    })
  }

  /**
   * Adds a committed batch: events of covered hours only (older ones would be a partial picture),
   * and of a loading api only those of hours already read.
   */
  append(events: ReadonlyArray<Verification>): void {
    if (this.broken) return
    try {
      if (this.coveredFrom.size === 0 && this.loads.size === 0) return this.engine.append(events)
      const live: Array<Verification> = []
      const rebuilt = new Set<Engine.Loader>()
      for (const event of events) {
        const partition = this.dictionaries.partition(event.workspaceId, event.apiId)
        const load = partition === undefined ? undefined : this.loads.get(partition.no)
        const from = partition === undefined ? undefined : this.coveredFrom.get(partition.no)
        const hour = Math.floor(event.time / Time.HOUR)
        if ((from === undefined || hour >= from) && (load === undefined || load.rebuild || hour < load.next)) {
          live.push(event)
        }
        if (load?.rebuild && hour >= load.from && hour < load.next) {
          load.codes.loader.append(event)
          rebuilt.add(load.codes.loader)
        }
      }
      this.engine.append(live)
      for (const loader of rebuilt) loader.flush()
    } catch (error) {
      this.broken = true
      throw error
    }
  }

  /**
   * The answer when the query's window is covered: the result, or undefined when it would exceed
   * `query.maxRows`. `null` when the rollups must answer.
   */
  answer(query: AggregationQuery): AggregationResult | undefined | null {
    if (this.broken) return null
    const partition = this.dictionaries.partition(query.workspaceId, query.apiId)
    if (partition !== undefined && this.loads.get(partition.no)?.rebuild === false) return null
    const from = partition === undefined ? undefined : this.coveredFrom.get(partition.no)
    if (from !== undefined && (query.start ?? -Infinity) < from * Time.HOUR) return null
    return this.engine.aggregate(query)
  }

  /** Events held (in the live partitions). */
  get events(): number {
    return this.engine.stats().events
  }
}

/**
 * Rollup codes are global; the engine's are per api: each code is translated once. Codes made
 * after the load began (keys first seen in a batch meanwhile) are translated too.
 */
class CodeTranslation {
  private keys: Int32Array<ArrayBuffer> = new Int32Array(0)
  private identities: Int32Array<ArrayBuffer> = new Int32Array(0)
  private tagsets: Int32Array<ArrayBuffer> = new Int32Array(0)

  constructor(private readonly dictionaries: Dictionaries, readonly loader: Engine.Loader) {}

  key(code: number): number {
    if (code >= this.keys.length) this.keys = grown(this.keys, this.dictionaries.keyNames.length)
    const known = this.keys[code]!
    return known >= 0 ? known : this.keys[code] = this.loader.keyCode(this.dictionaries.keyNames[code]!)
  }
  identity(code: number): number {
    if (code === 0) return 0
    if (code >= this.identities.length) this.identities = grown(this.identities, this.dictionaries.identityList.length)
    const known = this.identities[code]!
    return known >= 0 ? known : this.identities[code] = this.loader.identityCode(this.dictionaries.identityList[code]!)
  }
  tagset(code: number): number {
    if (code === 0) return 0
    if (code >= this.tagsets.length) this.tagsets = grown(this.tagsets, this.dictionaries.tagsetList.length)
    const known = this.tagsets[code]!
    return known >= 0 ? known : this.tagsets[code] = this.loader.tagsetCode(this.dictionaries.tagsetList[code]!)
  }
}

/** `codes` lengthened to `length`, new entries -1 (not yet translated). */
const grown = (codes: Int32Array<ArrayBuffer>, length: number): Int32Array<ArrayBuffer> => {
  const next = new Int32Array(length).fill(-1)
  next.set(codes)
  return next
}
