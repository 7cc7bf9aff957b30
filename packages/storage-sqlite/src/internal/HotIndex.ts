/**
 * The hot range of every api held in the memory adapter's engine, so queries over recent days are
 * answered at memory speed while SQLite stays the durable truth.
 *
 * At open, the engine is filled from the hour rollups of each api's last `hotDays` days (a rollup
 * row with count n is fed as n events: the engine only counts, so the answers are the same).
 * Afterwards every committed batch is appended too. An api is covered from the first hour loaded
 * on; an api with nothing older than that, or created after open, is covered entirely. A query is
 * answered here only when its window lies inside the coverage; otherwise the rollups answer it.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { AggregationQuery, AggregationResult } from "@keymeter/core/Aggregation"
import * as Time from "@keymeter/core/Time"
import type { Verification } from "@keymeter/core/Verification"
import { MemoryVerificationStore } from "@keymeter/storage-memory"
import * as Effect from "effect/Effect"
import type { Dictionaries, Partition } from "./Dictionaries.js"
import { COUNTERS } from "./Rollup.js"

/** Hours read per statement at load: a day keeps the row arrays small. */
const LOAD_HOURS = 24

export class HotIndex {
  private readonly engine = new MemoryVerificationStore.Engine()
  /** First covered hour of apis that hold older data; apis not listed are covered entirely. */
  private readonly coveredFrom = new Map<number, number>()
  /** Set when the engine failed to take a batch: from then on the rollups answer everything. */
  private broken = false

  private constructor(private readonly dictionaries: Dictionaries) {}

  /** An index filled from the last `hotDays` days of every api's hour rollups. */
  static load(dictionaries: Dictionaries, hotDays: number): Effect.Effect<HotIndex, SqlError, SqlClient.SqlClient> {
    return Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const index = new HotIndex(dictionaries)
      for (const partition of dictionaries.partitionsByNo) {
        if (partition === undefined || partition.maxHour < 0) continue
        const from = (Math.floor(partition.maxHour / 24) - hotDays + 1) * 24
        if (partition.minHour < from) index.coveredFrom.set(partition.no, from)
        yield* index.loadPartition(sql, partition, Math.max(from, partition.minHour))
      }
      return index
    })
  }

  private loadPartition(sql: SqlClient.SqlClient, partition: Partition, from: number) {
    const target = this.engine.partitionFor(partition.workspaceId, partition.apiId)
    const d = this.dictionaries
    // Rollup codes are global; the engine's are per api: translate once per code.
    const keys = new Int32Array(d.keyNames.length).fill(-1)
    const identities = new Int32Array(d.identityList.length).fill(-1)
    const tagsets = new Int32Array(d.tagsetList.length).fill(-1)
    identities[0] = 0
    tagsets[0] = 0
    return Effect.gen(function*() {
      for (let hour = from; hour <= partition.maxHour; hour += LOAD_HOURS) {
        const rows = yield* sql.unsafe(
          `SELECT hour, key, identity, tagset, ${COUNTERS.join(", ")} FROM r_hour WHERE p = ? AND hour >= ? AND hour < ? ORDER BY hour`,
          [partition.no, hour, hour + LOAD_HOURS]
        ).values
        for (const row of rows) {
          const h = row[0] as number
          const k = row[1] as number
          const i = row[2] as number
          const t = row[3] as number
          let key = keys[k]!
          if (key < 0) key = keys[k] = target.keyCode(d.keyNames[k]!)
          let identity = identities[i]!
          if (identity < 0) identity = identities[i] = target.identityCode(d.identityList[i]!)
          let tagset = tagsets[t]!
          if (tagset < 0) tagset = tagsets[t] = target.tagsetCode(d.tagsetList[t]!)
          for (let outcome = 0; outcome < 9; outcome++) {
            for (let n = row[4 + outcome] as number; n > 0; n--) target.addCoded(h, key, identity, tagset, outcome)
          }
        }
        target.maybeMerge()
      }
    })
  }

  /** Adds a committed batch: events of covered hours only (older ones would be a partial picture). */
  append(events: ReadonlyArray<Verification>): void {
    if (this.broken) return
    try {
      if (this.coveredFrom.size === 0) return this.engine.append(events)
      const kept = events.filter((event) => {
        const partition = this.dictionaries.partition(event.workspaceId, event.apiId)
        const from = partition === undefined ? undefined : this.coveredFrom.get(partition.no)
        return from === undefined || event.time >= from * Time.HOUR
      })
      this.engine.append(kept)
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
    const from = partition === undefined ? undefined : this.coveredFrom.get(partition.no)
    if (from !== undefined && (query.start ?? -Infinity) < from * Time.HOUR) return null
    return this.engine.aggregate(query)
  }

  /** Events held. */
  get events(): number {
    return this.engine.stats().events
  }
}
