/**
 * The catalog half of the Storage port in SQLite: workspaces, root keys, apis, namespaces and
 * overrides, read fresh on every call so the admin CLI's changes apply at once.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as CatalogPart from "@keymeter/core/CatalogPart"
import { StorageError } from "@keymeter/core/Errors"
import type { Credits } from "@keymeter/core/Key"
import { changeBalance, spend } from "@keymeter/core/Key"
import { Catalog } from "@keymeter/core/Storage"
import { SqlCatalog } from "@keymeter/storage-sql"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Batched from "./internal/Batched.js"
import * as CatalogVersion from "./internal/CatalogVersion.js"

/** SQLite's ways: booleans as 1 or 0, `instr`, no row locks (one writer at a time). */
export const dialect: SqlCatalog.Dialect = {
  name: "SQLite",
  bool: (value) => (value ? 1 : 0),
  position: "instr",
  rowLocks: false
}

/** A SQL failure as the port's error; the SQL text and file paths stay in the log. */
export const storageError = SqlCatalog.storageError(dialect)

type RefillDue = Parameters<Catalog["Type"]["spendCredits"]>[2]

/** The writes that share a commit (group commit); the balances' spends and changes share theirs. */
const GROUPED = CatalogPart.WRITES

/** A spend or a change of a key's balance, in the order it came. */
type BalanceCall =
  | {
    readonly _tag: "Spend"
    readonly keyId: string
    readonly cost: number
    readonly refill: RefillDue | undefined
    readonly now: number
  }
  | {
    readonly _tag: "Change"
    readonly keyId: string
    readonly op: "set" | "increment" | "decrement"
    readonly value: number
  }

/** A spend's answer, or a change's balance after it; none for a key without credits. */
type BalanceResult = Option.Option<{ readonly spent: boolean; readonly remaining: number } | Credits>

/** A group's first turn failed a write: the group runs again, each write in a savepoint. */
const RETRY_ALONE = Symbol.for("@keymeter/storage-sqlite/SqliteCatalog/RetryAlone")

/** At most this many writes share one transaction. */
const MAX_GROUP = 256

/**
 * The catalog on the SqlClient in context (migrated): the SQL catalog, its commits shared.
 * Concurrent spends and changes of balances (updateCredits) share a transaction, so a verification
 * with credits waits for one commit (one sync to disk) with the others rather than for each of
 * theirs in turn. The balances are read with one statement and written with one; calls on one key
 * apply in the order they came. The other writes (setOverride, createKey, …) share a transaction
 * too: run bare and, should one fail, rolled back and run again each in a savepoint of its own, so
 * one that fails is rolled back alone; each caller is answered after the commit that made its
 * write durable.
 */
export const make = Effect.gen(function*() {
  const catalog = yield* SqlCatalog.make(dialect)
  const sql = yield* SqlClient.SqlClient
  const balancesTogether = yield* Batched.make(
    (calls: ReadonlyArray<BalanceCall>) =>
      sql.withTransaction(Effect.gen(function*() {
        const ids = [...new Set(calls.map((call) => call.keyId))]
        const rows = yield* sql<{ key_id: string; remaining: number; refilled_at: number }>`SELECT key_id,
          remaining, refilled_at FROM key_credits WHERE ${sql.in("key_id", ids)}`
        const balances = new Map<string, Credits>()
        for (const row of rows) balances.set(row.key_id, { remaining: row.remaining, refilledAt: row.refilled_at })
        const changed = new Set<string>()
        const results = calls.map((call): BalanceResult => {
          const balance = balances.get(call.keyId)
          if (balance === undefined) return Option.none()
          if (call._tag === "Change") {
            const after = changeBalance(balance, call.op, call.value)
            balances.set(call.keyId, after)
            changed.add(call.keyId)
            return Option.some(after)
          }
          const result = spend(balance, call.cost, call.refill, call.now)
          if (result.changed) {
            balances.set(call.keyId, result.balance)
            changed.add(call.keyId)
          }
          return Option.some({ spent: result.spent, remaining: result.balance.remaining })
        })
        if (changed.size > 0) {
          yield* sql`INSERT INTO key_credits ${
            sql.insert([...changed].map((keyId) => {
              const balance = balances.get(keyId)!
              return { key_id: keyId, remaining: balance.remaining, refilled_at: balance.refilledAt }
            }))
          } ON CONFLICT (key_id) DO UPDATE SET remaining = excluded.remaining, refilled_at = excluded.refilled_at`
        }
        return results
      })),
    // SQLite binds at most 32,766 variables; three per written balance.
    4_096,
    { gather: true }
  )
  const eachAlone = (writes: ReadonlyArray<Effect.Effect<unknown, unknown>>) =>
    Effect.forEach(writes, (write) =>
      Effect.exit(
        Effect.catchIf(sql.withTransaction(write), (error) =>
          error instanceof SqlError, (error) =>
          storageError(error as SqlError))
      ))
  // The first turn runs the group bare (a savepoint costs two statements a write); if any write
  // fails, the whole transaction is rolled back and the group runs again, each write in a savepoint.
  const allOrRetry = (writes: ReadonlyArray<Effect.Effect<unknown, unknown>>) =>
    Effect.flatMap(
      Effect.forEach(writes, (write) => Effect.exit(write)),
      (exits) => exits.every(Exit.isSuccess) ? Effect.succeed(exits) : Effect.fail(RETRY_ALONE)
    )
  const together = yield* Batched.make(
    (writes: ReadonlyArray<Effect.Effect<unknown, unknown>>) =>
      sql.withTransaction(allOrRetry(writes)).pipe(
        Effect.catchIf(
          (error): error is typeof RETRY_ALONE => error === RETRY_ALONE,
          () => sql.withTransaction(eachAlone(writes))
        ),
        Effect.catchAll(storageError),
        // Each write's own failures are in its exit; what dies here is BEGIN or COMMIT (a full
        // disk), which @effect/sql makes a defect: every caller in the group gets a StorageError.
        Effect.catchAllDefect((defect) =>
          Effect.zipRight(
            Effect.logWarning("SQLite failure: a shared commit", defect),
            Effect.fail(new StorageError({ message: "SQLite: the commit failed" }))
          )
        )
      ),
    MAX_GROUP,
    { gather: true }
  )
  // The writer answers a spend with a spend's result and a change with the balance after it.
  return Catalog.of({
    ...CatalogPart.wrapWrites(catalog, GROUPED, (write) => Effect.flatten(together(write))),
    spendCredits: (keyId, cost, refill, now) =>
      Effect.catchAll(
        balancesTogether({ _tag: "Spend", keyId, cost, refill, now }),
        storageError
      ) as Effect.Effect<Option.Option<{ spent: boolean; remaining: number }>, StorageError>,
    changeCredits: (keyId, op, value) =>
      Effect.catchAll(
        balancesTogether({ _tag: "Change", keyId, op, value }),
        storageError
      ) as Effect.Effect<Option.Option<Credits>, StorageError>
  })
})

/** The catalog as a layer over the SqlClient in context. */
export const layer: Layer.Layer<Catalog, never, SqlClient.SqlClient> = Layer.scoped(Catalog, make)

/**
 * {@link layer} for a server on `filename`: with a `revision` per part (the versions that catalog
 * writes move), so catalog reads are remembered until anything, the admin CLI included, writes
 * that part of the catalog.
 */
export const layerOnFile = (filename: string): Layer.Layer<Catalog, never, SqlClient.SqlClient> =>
  Layer.scoped(
    Catalog,
    Effect.gen(function*() {
      const catalog = yield* make
      if (filename === ":memory:") return catalog
      const version = yield* Effect.option(CatalogVersion.open(filename))
      if (Option.isNone(version)) return catalog
      // A write of this process is seen by the next read at once: it forgets the versions last read.
      const forget = Effect.sync(version.value.forget)
      return Catalog.of({
        ...CatalogPart.wrapWrites(catalog, CatalogPart.WRITES, (write) => Effect.ensuring(write, forget)),
        revision: version.value.read
      })
    })
  )
