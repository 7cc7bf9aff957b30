/**
 * The verification half of the Storage port on ClickHouse (HTTP interface, 18.16 and newer).
 *
 * Ingest: concurrent `append` calls queue up and one writer sends them together as one INSERT
 * into `verifications` (group commit); the materialized views fill the rollups in the same
 * request. A call completes only once ClickHouse has accepted its INSERT, and fails when it did
 * not, so an acknowledged event is never dropped. The queue is bounded in events: when ClickHouse
 * falls behind (or is down) by more than `maxBufferedEvents`, new calls fail at once instead of
 * piling up in memory.
 *
 * Reads: one SELECT per query over the rollups (`internal/Planner`); raw scans (`scan`) one SELECT
 * over `verifications`, within the scope's workspace, apis and time range, a row past the budget at
 * most.
 */
import type { AggregationQuery } from "@keymeter/core/Aggregation"
import { IdempotencyKeyInUse, QueryTooLarge, StorageError } from "@keymeter/core/Errors"
import type { Dictionary, ScanScope, VerificationColumns } from "@keymeter/core/EventScan"
import * as GroupCommit from "@keymeter/core/GroupCommit"
import type { Receipt } from "@keymeter/core/Idempotency"
import * as Ids from "@keymeter/core/Ids"
import { VerificationStore } from "@keymeter/core/Storage"
import * as Time from "@keymeter/core/Time"
import type { Verification } from "@keymeter/core/Verification"
import { OutcomeIndex } from "@keymeter/core/Verification"
import { OUTCOME_NAMES } from "@keymeter/sql/Tables"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Aggregate from "./internal/Aggregate.js"
import type * as Connection from "./internal/Connection.js"
import * as Database from "./internal/Database.js"
import { integer, sql, string } from "./internal/Literal.js"
import * as Planner from "./internal/Planner.js"
import * as Spool from "./internal/Spool.js"

/** How to reach ClickHouse and how to batch. */
export interface Options {
  /** `http://host:8123/<database>` (the database is created when missing; default `keymeter`). */
  readonly url: string
  /** How long one request may take (default 30 s). */
  readonly requestTimeoutMs?: number | undefined
  /** Events one INSERT carries at most (default 100,000). */
  readonly maxEventsPerInsert?: number | undefined
  /** Events waiting for ClickHouse before new calls fail with 503 (default 1,000,000). */
  readonly maxBufferedEvents?: number | undefined
  /**
   * A folder of local disk where calls without an idempotency key are stored durably and
   * acknowledged, then shipped to ClickHouse together at each interval (see `internal/Spool`):
   * ingest of many small calls is several times faster, and what ClickHouse answers lags by up to
   * the interval. Without it, a call returns once ClickHouse has its events.
   */
  readonly spool?: Spool.Options | undefined
}

/** Where a keyed write put its events, so that a claim left pending can be settled. */
interface Claim {
  readonly batch: string
  readonly events: number
  readonly firstHour: number
  readonly lastHour: number
}

/** Past its writer's request deadline plus this, a claim whose batch has no rows is abandoned. */
const CLAIM_MARGIN_MS = 5_000

/** Splits `http://user:pass@host:port/db` into the client's URL, database and credentials. */
export const parseUrl: (url: string) => Connection.Target | StorageError = Database.parseUrl

/** Largest value of the UInt32 columns: spent credits and latency (µs) are clamped to it. */
const MAX_U32 = 4_294_967_295

const clampU32 = (value: number): number => (value >= 0 ? (value <= MAX_U32 ? Math.floor(value) : MAX_U32) : 0)

const row = (event: Verification, batch = "") => {
  const hour = Math.floor(event.time / Time.HOUR)
  return {
    batch,
    workspace_id: event.workspaceId,
    api_id: event.apiId,
    time: event.time,
    hour,
    key_id: event.keyId,
    identity_id: event.identity?.id ?? "",
    external_id: event.identity?.externalId ?? "",
    tags: event.tags,
    outcome: OutcomeIndex.get(event.outcome)!,
    spent_credits: clampU32(event.spentCredits ?? 0),
    latency_us: clampU32(Math.round((event.latency ?? 0) * 1000)),
    region: event.region ?? ""
  }
}

/** Values of a column, coded in the order first seen. */
class Coder<A> {
  private readonly codes = new Map<string, number>()
  readonly values: Array<A> = []
  /** `id` names `value` (a string, or a tag set's joined form). */
  code(id: string, value: A): number {
    let code = this.codes.get(id)
    if (code === undefined) {
      this.codes.set(id, code = this.values.length)
      this.values.push(value)
    }
    return code
  }
}

/** Length-prefixed join of a tag set: no separator can collide. */
const tagsetId = (tags: ReadonlyArray<string>): string => {
  let out = ""
  for (const tag of tags) out += tag.length + ":" + tag
  return out
}

const dictionary = <A>(codes: ArrayLike<number>, coder: Coder<A>): Dictionary<A> => ({ codes, values: coder.values })

/**
 * Rows of a scan (`time, api_id, key_id, identity_id, external_id, outcome, tags, spent_credits,
 * latency_us, region`) as one batch of columns, each string column coded in the order first seen.
 */
const columnsOf = (rows: ReadonlyArray<ReadonlyArray<unknown>>): VerificationColumns => {
  const n = rows.length
  const time = new Float64Array(n)
  const outcome = new Uint8Array(n)
  const spentCredits = new Float64Array(n)
  const latency = new Float64Array(n)
  const codes = {
    api: new Uint32Array(n),
    key: new Uint32Array(n),
    identity: new Uint32Array(n),
    external: new Uint32Array(n),
    tags: new Uint32Array(n),
    region: new Uint32Array(n)
  }
  const coders = {
    api: new Coder<string>(),
    key: new Coder<string>(),
    identity: new Coder<string>(),
    external: new Coder<string>(),
    tags: new Coder<ReadonlyArray<string>>(),
    region: new Coder<string>()
  }
  for (let i = 0; i < n; i++) {
    const r = rows[i]!
    time[i] = Number(r[0])
    codes.api[i] = coders.api.code(r[1] as string, r[1] as string)
    codes.key[i] = coders.key.code(r[2] as string, r[2] as string)
    codes.identity[i] = coders.identity.code(r[3] as string, r[3] as string)
    codes.external[i] = coders.external.code(r[4] as string, r[4] as string)
    outcome[i] = Number(r[5])
    const tags = r[6] as ReadonlyArray<string>
    codes.tags[i] = coders.tags.code(tagsetId(tags), tags)
    spentCredits[i] = Number(r[7])
    latency[i] = Number(r[8]) / 1000
    codes.region[i] = coders.region.code(r[9] as string, r[9] as string)
  }
  return {
    length: n,
    time,
    apiId: dictionary(codes.api, coders.api),
    keyId: dictionary(codes.key, coders.key),
    identityId: dictionary(codes.identity, coders.identity),
    externalId: dictionary(codes.external, coders.external),
    outcome,
    tags: dictionary(codes.tags, coders.tags),
    spentCredits,
    latency,
    region: dictionary(codes.region, coders.region)
  }
}

/**
 * The SELECT of a scope's rows (one past `maxRows` at most), or undefined when it can hold none.
 * Every value is a literal written by `Literal`; the hour bounds let the primary key and the
 * partitions narrow what is read.
 */
export const scanText = (scope: ScanScope): string | undefined => {
  const where = scopeFilter(scope)
  if (where === undefined) return undefined
  return "SELECT time, api_id, key_id, identity_id, external_id, outcome, tags, spent_credits, latency_us, region " +
    `FROM verifications WHERE ${where} ` +
    `LIMIT ${integer(Math.min(Math.max(0, Math.floor(scope.maxRows)), Number.MAX_SAFE_INTEGER - 1) + 1)}`
}

/** The rows of a scope, as a WHERE; undefined when it holds none. */
const scopeFilter = (scope: Omit<ScanScope, "maxRows">): string | undefined => {
  // Times are whole ms: an inclusive bound rounds up, as does the exclusive one.
  const from = Math.max(0, Math.ceil(scope.from))
  const to = Math.min(Number.MAX_SAFE_INTEGER, Math.ceil(scope.to))
  if (!(from < to) || (scope.within !== undefined && scope.within.length === 0)) return undefined
  const apis = scope.within === undefined ? "" : ` AND api_id IN (${[...new Set(scope.within)].map(string).join(", ")})`
  // The hour bounds let the primary key and the partitions narrow what is read.
  return `workspace_id = ${string(scope.workspaceId)}${apis} ` +
    `AND hour >= ${integer(Math.floor(from / Time.HOUR))} AND hour <= ${integer(Math.floor((to - 1) / Time.HOUR))} ` +
    `AND time >= ${integer(from)} AND time < ${integer(to)}`
}

/**
 * The SELECT `aggregate` runs for a query (over the rollups, `internal/Planner`), or undefined when
 * it needs none: for running the same query elsewhere (the bench times it in clickhouse-client).
 */
export const aggregateText = (query: AggregationQuery): string | undefined => Planner.plan(query, "r_")?.text

/**
 * `key_verifications_v1` (its public columns, in order) for a scope, for a query run in ClickHouse
 * (`ClickhouseSql`): the same rows `scan` reads, unbounded.
 */
export const sourceText = (scope: Omit<ScanScope, "maxRows">): string =>
  "SELECT time, workspace_id, api_id AS key_space_id, key_id, identity_id, external_id, " +
  `transform(outcome_code, [${OUTCOME_NAMES.map((_, i) => i).join(", ")}], [${
    OUTCOME_NAMES.map(string).join(", ")
  }], '') AS outcome, ` +
  "tags, spent_credits, latency_us / 1000 AS latency, region " +
  "FROM (SELECT time, workspace_id, api_id, key_id, identity_id, external_id, outcome AS outcome_code, tags, " +
  `spent_credits, latency_us, region FROM verifications WHERE ${scopeFilter(scope) ?? "0"})`

const NO_BATCHES: ReadonlyArray<VerificationColumns> = []

/** The store on the server `options.url` names, migrated; its writer lives as long as the scope. */
export const make = (options: Options) =>
  Effect.gen(function*() {
    const maxPerInsert = Math.max(1, options.maxEventsPerInsert ?? 100_000)
    const maxBuffered = Math.max(maxPerInsert, options.maxBufferedEvents ?? 1_000_000)
    const { db } = yield* Database.open(options)

    const spool = options.spool === undefined ? undefined : yield* Spool.make(options.spool, {
      insert: (lines) => db.insertLines("verifications", lines),
      counts: (from, to, firstHour, lastHour) =>
        Effect.map(
          db.query(
            sql`SELECT batch, count() FROM verifications WHERE hour >= ${firstHour} AND hour <= ${lastHour}
              AND batch >= ${from} AND batch < ${to} GROUP BY batch`
          ),
          (rows) => new Map(rows.map(([batch, count]) => [batch as string, Number(count)]))
        )
    })
    /** A round's rows as JSONEachRow lines, each tagged with the spool's batch id. */
    const linesOf = (events: ReadonlyArray<Verification>) => (batch: string): Spool.Rows => {
      let lines = ""
      let firstHour = Infinity
      let lastHour = 0
      for (const event of events) {
        const r = row(event, batch)
        if (r.hour < firstHour) firstHour = r.hour
        if (r.hour > lastHour) lastHour = r.hour
        lines += JSON.stringify(r) + "\n"
      }
      return { lines, events: events.length, firstHour, lastHour }
    }

    // The writer: one INSERT (or, with a spool, one record on disk) per round of queued calls (group commit).
    const offer = yield* GroupCommit.make<Verification>({
      write: (events, keyed) => (keyed.length > 0
        ? writeKeyed(events, keyed)
        : spool !== undefined
        ? spool.append(linesOf(events))
        : db.insert("verifications", events.map((event) => row(event)))),
      maxEvents: maxPerInsert,
      maxBuffered
    })

    // Keyed writes: a claim, the insert tagged with the claim's batch id, a settlement (see below).
    const claimGraceMs = (options.requestTimeoutMs ?? 30_000) + CLAIM_MARGIN_MS
    const receiptRow = (receipt: Receipt, claim: Claim, state: 0 | 1) => ({
      workspace_id: receipt.workspaceId,
      key: receipt.key,
      operation: receipt.operation,
      fingerprint: receipt.fingerprint,
      response: receipt.response,
      batch: claim.batch,
      events: claim.events,
      first_hour: claim.firstHour,
      last_hour: claim.lastHour,
      state,
      created_at: receipt.createdAt,
      expires_at: receipt.expiresAt
    })
    /** The latest row of a key, unexpired. */
    const latestReceipt = (workspaceId: string, key: string, now: number) =>
      Effect.map(
        db.query(
          sql`SELECT operation, fingerprint, response, batch, events, first_hour, last_hour, state, created_at, expires_at
            FROM idempotency_receipts WHERE workspace_id = ${workspaceId} AND key = ${key} AND expires_at > ${now}
            ORDER BY created_at DESC, state DESC LIMIT 1`
        ),
        (rows) => rows[0]
      )

    const findReceipt = (workspaceId: string, key: string, now: number) =>
      Effect.gen(function*() {
        const found = yield* latestReceipt(workspaceId, key, now)
        if (found === undefined) return Option.none()
        const [operation, fingerprint, response, batch, events, firstHour, lastHour, state, createdAt, expiresAt] =
          found as [string, string, string, string, number, number, number, number, number, number]
        const receipt: Receipt = {
          workspaceId,
          key,
          operation,
          fingerprint,
          response,
          createdAt: Number(createdAt),
          expiresAt: Number(expiresAt)
        }
        if (Number(state) === 1) return Option.some(receipt)
        // A claim not settled: its writer is at work, or stopped between claim and settlement.
        // The batch's rows say which: all there, it was stored (settle it now); none there after
        // the writer's deadline, it never will be (the key is free again).
        const [[stored]] = (yield* db.query(
          sql`SELECT count() FROM verifications WHERE workspace_id = ${workspaceId}
            AND hour >= ${firstHour} AND hour <= ${lastHour} AND batch = ${batch}`
        )) as [[number]]
        const claim: Claim = { batch, events: Number(events), firstHour: Number(firstHour), lastHour: Number(lastHour) }
        if (Number(stored) === claim.events) {
          yield* db.insert("idempotency_receipts", [receiptRow(receipt, claim, 1)])
          return Option.some(receipt)
        }
        if (Number(stored) === 0 && now - receipt.createdAt > claimGraceMs) return Option.none()
        return yield* new IdempotencyKeyInUse({
          message: Number(stored) === 0
            ? `A request with this idempotency key began at ${
              new Date(receipt.createdAt).toISOString()
            } and has not finished; retry in a few seconds`
            : `A request with this idempotency key was stored in part (${stored} of ${claim.events} events, batch ` +
              `${batch}) when ClickHouse failed; an operator must settle it (see the README, Idempotency)`
        })
      })

    /**
     * A round of the writer holding keyed calls: their claims in one INSERT, every event of the
     * round in one INSERT (a keyed call's rows tagged with its claim's batch id), their
     * settlements in one INSERT. ClickHouse applies the events' INSERT whole or not at all, unless
     * the server itself fails between the parts of a round spanning several 30-day partitions.
     */
    const writeKeyed = (events: ReadonlyArray<Verification>, keyed: ReadonlyArray<GroupCommit.Keyed>) =>
      Effect.gen(function*() {
        const rows = events.map((event) => row(event))
        const claims = keyed.map(({ count, from, receipt }) => {
          let firstHour = count === 0 ? 0 : Infinity
          let lastHour = 0
          const batch = Ids.make(Ids.Prefix.batch)
          for (let i = from; i < from + count; i++) {
            const r = rows[i]!
            r.batch = batch
            firstHour = Math.min(firstHour, r.hour)
            lastHour = Math.max(lastHour, r.hour)
          }
          return { receipt, claim: { batch, events: count, firstHour, lastHour } satisfies Claim }
        })
        yield* db.insert("idempotency_receipts", claims.map(({ claim, receipt }) => receiptRow(receipt, claim, 0)))
        if (rows.length > 0) yield* db.insert("verifications", rows)
        yield* db.insert("idempotency_receipts", claims.map(({ claim, receipt }) => receiptRow(receipt, claim, 1)))
      })

    /** A keyed call: refused if the key holds a receipt (another process), else through the writer. */
    const appendKeyed = (events: ReadonlyArray<Verification>, receipt: Receipt) =>
      Effect.gen(function*() {
        const held = yield* findReceipt(receipt.workspaceId, receipt.key, receipt.createdAt).pipe(
          Effect.catchTag("IdempotencyKeyInUse", () => Effect.succeed(Option.some(receipt)))
        )
        if (Option.isSome(held)) {
          return yield* new StorageError({ message: "The idempotency key was taken by another request meanwhile" })
        }
        yield* offer(events, receipt)
      })

    const scan = (scope: ScanScope) =>
      Effect.gen(function*() {
        const text = scanText(scope)
        if (text === undefined) return NO_BATCHES
        const rows = yield* db.query(text)
        if (rows.length > scope.maxRows) {
          return yield* new QueryTooLarge({
            message: `The scan would read more than ${scope.maxRows} rows; narrow it with a shorter time range or ` +
              "fewer apis"
          })
        }
        return rows.length === 0 ? NO_BATCHES : [columnsOf(rows)]
      })

    return VerificationStore.of({
      append: (events, receipt) => (receipt === undefined ? offer(events) : appendKeyed(events, receipt)),
      findReceipt,
      aggregate: Aggregate.make(db, "r_"),
      // The answer is parsed whole before it is columnized: a row array of ten values, tags and all.
      scanRowBytes: 512,
      scan
    })
  })

/** The store as a scoped layer. */
export const layer = (options: Options): Layer.Layer<VerificationStore, StorageError> =>
  Layer.scoped(VerificationStore, make(options))
