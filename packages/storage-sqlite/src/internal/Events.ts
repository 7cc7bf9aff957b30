/**
 * Verifications in full (`v_events`, migration 0010), for raw scans (`EventScan`): one row per
 * event, written in the transaction of its counts with the codes of the count tables' dictionaries
 * (`v_partitions`, `v_keys`, `v_identities`, `v_tagsets`), kept `eventDays`. Rows are read back by
 * (partition, time) range a page at a time, each page one batch of columns.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { Dictionary, ScanScope, VerificationColumns } from "@keymeter/core/EventScan"
import type { Verification } from "@keymeter/core/Verification"
import * as Effect from "effect/Effect"
import type { Dictionaries, Partition } from "./Dictionaries.js"
import { nextMacrotask } from "./HotIndex.js"
import * as Rows from "./Rows.js"

/** The table. */
export const TABLE = "v_events"

const COLUMNS = ["p", "time", "key", "identity", "tagset", "outcome", "spent_credits", "latency_us", "region"]

/** Values one row takes in a batch's flat list of values. */
export const WIDTH = COLUMNS.length

const insertTexts = new Map<number, string>()

/** `INSERT` of `rows` rows (see `Rows.run`). */
export const insertText = (rows: number): string => {
  let text = insertTexts.get(rows)
  if (text === undefined) insertTexts.set(rows, text = Rows.insertText(TABLE, COLUMNS, rows))
  return text
}

/** Largest value stored for spent credits and latency (µs): what a Uint32 holds, as in the other stores. */
const MAX_U32 = 4_294_967_295

const clampU32 = (value: number): number => (value >= 0 ? (value <= MAX_U32 ? Math.floor(value) : MAX_U32) : 0)

/**
 * The rows a transaction writes: the writer pushes each event it codes, unless older than
 * `keptFrom` (past its days already).
 */
export class EventRows {
  readonly values: Array<unknown> = []
  constructor(readonly keptFrom: number) {}

  push(p: number, event: Verification, key: number, identity: number, tagset: number, outcome: number): void {
    if (event.time < this.keptFrom) return
    const spent = event.spentCredits
    const latency = event.latency
    this.values.push(
      p,
      event.time,
      key,
      identity,
      tagset,
      outcome,
      spent === undefined || spent === 0 ? 0 : clampU32(spent),
      latency === undefined || latency === 0 ? 0 : clampU32(Math.round(latency * 1000)),
      event.region ?? ""
    )
  }

  get size(): number {
    return this.values.length / WIDTH
  }

  /** Inserts the rows, in the caller's transaction. */
  write(sql: SqlClient.SqlClient) {
    return Rows.run(sql, insertText, WIDTH, this.values)
  }
}

/**
 * Rows a page reads at most: one batch. Each page holds the event loop while SQLite reads it (about
 * 3 ms at this size, 45 ms at 16,384), so a scan beside live traffic reads in small bites.
 */
const PAGE_ROWS = 1_024

// Pages in (time, rowid) order, which the (p, time) index holds (its entries end with the rowid).
export const PAGE = `SELECT time, key, identity, tagset, outcome, spent_credits, latency_us, region, rowid ` +
  `FROM ${TABLE} INDEXED BY v_events_time WHERE p = ? AND time >= ? AND time < ? AND (time > ? OR rowid > ?) ` +
  "ORDER BY time, rowid LIMIT ?"

type PageRow = [
  time: number,
  key: number,
  identity: number,
  tagset: number,
  outcome: number,
  spentCredits: number,
  latencyUs: number,
  region: string,
  rowid: number
]

const dictionary = <A>(codes: ArrayLike<number>, values: ReadonlyArray<A>): Dictionary<A> => ({ codes, values })

/** A page of a partition's rows as columns; regions coded into `regions` (shared by the scan's batches). */
const batchOf = (
  page: ReadonlyArray<PageRow>,
  apiId: string,
  dictionaries: Dictionaries,
  identities: { readonly ids: ReadonlyArray<string>; readonly externalIds: ReadonlyArray<string> },
  regions: { readonly codes: Map<string, number>; readonly names: Array<string> }
): VerificationColumns => {
  const n = page.length
  const time = new Float64Array(n)
  const key = new Uint32Array(n)
  const identity = new Uint32Array(n)
  const tagset = new Uint32Array(n)
  const outcome = new Uint8Array(n)
  const spentCredits = new Uint32Array(n)
  const latency = new Float64Array(n)
  const region = new Uint32Array(n)
  for (let i = 0; i < n; i++) {
    const row = page[i]!
    time[i] = row[0]
    key[i] = row[1]
    identity[i] = row[2]
    tagset[i] = row[3]
    outcome[i] = row[4]
    spentCredits[i] = row[5]
    latency[i] = row[6] / 1000
    const name = row[7]
    if (name !== "") {
      let code = regions.codes.get(name)
      if (code === undefined) {
        regions.codes.set(name, code = regions.names.length)
        regions.names.push(name)
      }
      region[i] = code
    }
  }
  return {
    length: n,
    time,
    apiId: dictionary(new Uint8Array(n), [apiId]),
    keyId: dictionary(key, dictionaries.keyNames),
    identityId: dictionary(identity, identities.ids),
    externalId: dictionary(identity, identities.externalIds),
    outcome,
    tags: dictionary(tagset, dictionaries.tagsetList),
    spentCredits,
    latency,
    region: dictionary(region, regions.names)
  }
}

/** The partitions of the scope's workspace it may read. */
const partitionsOf = (dictionaries: Dictionaries, scope: ScanScope): Array<Partition> => {
  if (scope.within === undefined) return dictionaries.partitionsOf(scope.workspaceId)
  const out: Array<Partition> = []
  for (const apiId of new Set(scope.within)) {
    const partition = dictionaries.partition(scope.workspaceId, apiId)
    if (partition !== undefined) out.push(partition)
  }
  return out
}

/**
 * The scope's events from `keptFrom` on, as batches of at most {@link PAGE_ROWS} rows, or
 * undefined once more than `scope.maxRows` were found (no more than one row past it is read).
 * Each page is read under `exclusive`, the lock the writer commits under: never inside a commit's
 * transaction, so no row (nor dictionary code) a failing commit takes back is answered.
 */
export const scan = (
  sql: SqlClient.SqlClient,
  dictionaries: Dictionaries,
  scope: ScanScope,
  keptFrom: number,
  exclusive: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
) =>
  Effect.gen(function*() {
    const out: Array<VerificationColumns> = []
    // Times are whole ms: an inclusive bound rounds up, as does the exclusive one.
    const from = Math.max(Math.ceil(scope.from), Math.ceil(keptFrom), Number.MIN_SAFE_INTEGER)
    const to = Math.min(Math.ceil(scope.to), Number.MAX_SAFE_INTEGER)
    if (!(from < to)) return out
    const partitions = partitionsOf(dictionaries, scope)
    if (partitions.length === 0) return out
    const identities = { ids: [] as Array<string>, externalIds: [] as Array<string> }
    const regions = { codes: new Map<string, number>(), names: [""] }
    let read = 0
    for (const partition of partitions) {
      let lastTime = from - 1
      let lastRowid = 0
      for (;;) {
        const limit = Math.min(PAGE_ROWS, scope.maxRows + 1 - read)
        // From the last row read on: rows of its time after it, then later times.
        const after = [partition.no, Math.max(from, lastTime), to, lastTime, lastRowid, limit]
        const page = yield* exclusive(Effect.map(sql.unsafe(PAGE, after).values, (rows) => {
          // The identities committed when the page was read (no commit is under way), added to the
          // lists of the scan's earlier pages: committed codes never change.
          const known = dictionaries.identityList
          for (let code = identities.ids.length; code < known.length; code++) {
            identities.ids.push(known[code]?.id ?? "")
            identities.externalIds.push(known[code]?.externalId ?? "")
          }
          return rows as unknown as ReadonlyArray<PageRow>
        }))
        read += page.length
        if (read > scope.maxRows) return undefined
        if (page.length === 0) break
        out.push(batchOf(page, partition.apiId, dictionaries, identities, regions))
        if (page.length < limit) break
        const last = page[page.length - 1]!
        lastTime = last[0]
        lastRowid = last[8]
        // Each page holds the connection (and the event loop) for a while: serve what arrived.
        yield* (scope.pause ?? nextMacrotask)
      }
    }
    return out
  })
