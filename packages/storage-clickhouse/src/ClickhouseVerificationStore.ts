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
 * Reads: one SELECT per query over the rollups (`internal/Planner`).
 */
import type { AggregationQuery, AggregationResult } from "@keymeter/core/Aggregation"
import { OUTCOMES, tooLarge } from "@keymeter/core/Aggregation"
import { IdempotencyKeyInUse, redactUrl, StorageError } from "@keymeter/core/Errors"
import * as GroupCommit from "@keymeter/core/GroupCommit"
import type { Receipt } from "@keymeter/core/Idempotency"
import * as Ids from "@keymeter/core/Ids"
import { VerificationStore } from "@keymeter/core/Storage"
import * as Time from "@keymeter/core/Time"
import type { Identity, Verification } from "@keymeter/core/Verification"
import { OutcomeIndex } from "@keymeter/core/Verification"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Connection from "./internal/Connection.js"
import { sql } from "./internal/Literal.js"
import * as Planner from "./internal/Planner.js"
import * as Migrations from "./Migrations.js"

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

/** The URL is not one keymeter can use. */
const invalid = (message: string) => new StorageError({ message })

/** Splits `http://user:pass@host:port/db` into the client's URL, database and credentials. */
export const parseUrl = (url: string): Connection.Target | StorageError => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return invalid(`Not a ClickHouse URL: ${JSON.stringify(redactUrl(url))} (expected http://host:8123/<database>)`)
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    return invalid(`A ClickHouse URL must be http:// or https://, got ${JSON.stringify(redactUrl(url))}`)
  }
  const database = decodeURIComponent(parsed.pathname.replace(/^\/+|\/+$/g, "")) || "keymeter"
  if (!Migrations.isDatabaseName(database)) {
    return invalid(`Not a usable ClickHouse database name: ${JSON.stringify(database)} (letters, digits and _)`)
  }
  return {
    url: `${parsed.protocol}//${parsed.host}`,
    database,
    username: parsed.username === "" ? undefined : decodeURIComponent(parsed.username),
    password: parsed.password === "" ? undefined : decodeURIComponent(parsed.password)
  }
}

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
    outcome: OutcomeIndex.get(event.outcome)!
  }
}

/** The store on the server `options.url` names, migrated; its writer lives as long as the scope. */
export const make = (options: Options) =>
  Effect.gen(function*() {
    const target = parseUrl(options.url)
    if (target instanceof StorageError) return yield* target
    const maxPerInsert = Math.max(1, options.maxEventsPerInsert ?? 100_000)
    const maxBuffered = Math.max(maxPerInsert, options.maxBufferedEvents ?? 1_000_000)
    const settings = { ...target, requestTimeoutMs: options.requestTimeoutMs }
    const db = yield* Effect.acquireRelease(Effect.sync(() => Connection.make(settings)), (c) => c.close)
    const admin = Connection.make(settings, "default")
    yield* Migrations.run(admin, db, target.database).pipe(Effect.ensuring(admin.close))

    // The writer: one INSERT per round of queued calls (group commit).
    const offer = yield* GroupCommit.make({
      write: (events, keyed) => (keyed.length === 0
        ? db.insert("verifications", events.map((event) => row(event)))
        : writeKeyed(events, keyed)),
      maxEvents: maxPerInsert,
      maxBuffered
    })

    const read = (query: AggregationQuery): Effect.Effect<AggregationResult | undefined, StorageError> =>
      Effect.gen(function*() {
        const plan = Planner.plan(query)
        if (plan === undefined) return { size: 0, counts: new Float64Array(0) }
        const rows = yield* db.query(plan.text)
        if (rows.length > query.maxRows) return undefined
        const offset = plan.bucketed ? 1 : 0
        const keyAt = plan.dimensions.includes("key") ? offset : -1
        const identityAt = plan.dimensions.includes("identity") ? offset + (keyAt >= 0 ? 1 : 0) : -1
        const tagsAt = plan.dimensions.includes("tags")
          ? offset + (keyAt >= 0 ? 1 : 0) + (identityAt >= 0 ? 2 : 0)
          : -1
        const width = offset + (keyAt >= 0 ? 1 : 0) + (identityAt >= 0 ? 2 : 0) + (tagsAt >= 0 ? 1 : 0)
        // An ungrouped sum over nothing is one row of zeros: no event, no row.
        const kept = rows.filter((r) => {
          for (let o = 0; o < OUTCOMES; o++) if ((r[width + o] as number) !== 0) return true
          return false
        })
        const counts = new Float64Array(kept.length * OUTCOMES)
        kept.forEach((r, i) => {
          for (let o = 0; o < OUTCOMES; o++) counts[i * OUTCOMES + o] = r[width + o] as number
        })
        return {
          size: kept.length,
          counts,
          time: plan.bucketed ? Float64Array.from(kept, (r) => plan.bucketTime(r[0] as number)) : undefined,
          keyId: keyAt >= 0 ? kept.map((r) => r[keyAt] as string) : undefined,
          identity: identityAt >= 0
            ? kept.map((r): Identity => ({ id: r[identityAt] as string, externalId: r[identityAt + 1] as string }))
            : undefined,
          tags: tagsAt >= 0 ? kept.map((r) => r[tagsAt] as Array<string>) : undefined
        }
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

    return VerificationStore.of({
      append: (events, receipt) => (receipt === undefined ? offer(events) : appendKeyed(events, receipt)),
      findReceipt,
      aggregate: (query) =>
        Effect.flatMap(
          read(query),
          (result) => (result === undefined ? Effect.fail(tooLarge(query, query.maxRows)) : Effect.succeed(result))
        )
    })
  })

/** The store as a scoped layer. */
export const layer = (options: Options): Layer.Layer<VerificationStore, StorageError> =>
  Layer.scoped(VerificationStore, make(options))
