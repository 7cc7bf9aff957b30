/**
 * The differential test's oracle: DuckDB, in memory, over the corpus's rows of one workspace, as
 * one physical table per family holding exactly the public raw columns; the rollup tables are
 * DuckDB views written here from the documented semantics (a rollup is the raw table grouped by its
 * UTC bucket), not from keymeter's view text. Queries come already in DuckDB's dialect (see
 * `SqlGenerator`); answers are normalized to keymeter's values (integers as numbers, booleans 1/0).
 */
import type { DuckDBConnection, DuckDBInstance as Instance } from "@duckdb/node-api"
import { DuckDBInstance, LIST, listValue, VARCHAR } from "@duckdb/node-api"
import type { RatelimitEvent } from "@keymeter/core/RatelimitEvent"
import type { Verification } from "@keymeter/core/Verification"
import { OUTCOME_NAME } from "./SqlGenerator.js"

/** An answer: its columns' names, and its rows. */
export interface Table {
  readonly columns: ReadonlyArray<string>
  readonly rows: ReadonlyArray<ReadonlyArray<unknown>>
}

const RAW = [
  `CREATE TABLE key_verifications_v1 (time BIGINT, workspace_id VARCHAR, key_space_id VARCHAR, key_id VARCHAR,
    identity_id VARCHAR, external_id VARCHAR, outcome VARCHAR, tags VARCHAR[], spent_credits BIGINT, latency DOUBLE,
    region VARCHAR)`,
  `CREATE TABLE ratelimits_v1 (time BIGINT, workspace_id VARCHAR, namespace_id VARCHAR, identifier VARCHAR,
    passed BIGINT, latency DOUBLE, override_id VARCHAR)`
]

/** The start of a bucket of a unix-ms time, in DuckDB: fixed spans by division, months by the calendar. */
const BUCKET: Readonly<Record<string, string>> = {
  minute: `("time" // 60000) * 60000`,
  hour: `("time" // 3600000) * 3600000`,
  day: `epoch_ms(date_trunc('day', epoch_ms("time")))`,
  month: `epoch_ms(date_trunc('month', epoch_ms("time")))`
}

const VIEWS = Object.entries(BUCKET).flatMap(([grain, start]) => [
  `CREATE VIEW key_verifications_per_${grain}_v1 AS
    SELECT ${start} AS "time", workspace_id, key_space_id, key_id, identity_id, external_id, outcome, tags,
      count(*) AS "count", CAST(sum(spent_credits) AS BIGINT) AS spent_credits, avg(latency) AS latency_avg
    FROM key_verifications_v1 GROUP BY 1, 2, 3, 4, 5, 6, 7, 8`,
  `CREATE VIEW ratelimits_per_${grain}_v1 AS
    SELECT ${start} AS "time", workspace_id, namespace_id, identifier, CAST(sum(passed) AS BIGINT) AS passed,
      count(*) AS total, avg(latency) AS latency_avg
    FROM ratelimits_v1 GROUP BY 1, 2, 3, 4`
])

/** A value as keymeter answers it: numbers for integers, 1/0 for booleans, arrays for lists. */
const normalize = (value: unknown): unknown => {
  if (typeof value === "bigint") {
    const n = Number(value)
    if (!Number.isSafeInteger(n)) throw new Error(`DuckDB answered an integer out of range: ${value}`)
    return n
  }
  if (typeof value === "boolean") return value ? 1 : 0
  if (Array.isArray(value)) return value.map(normalize)
  if (typeof value === "number" && !Number.isFinite(value)) return null
  return value
}

export class Oracle {
  private constructor(private readonly instance: Instance, private readonly connection: DuckDBConnection) {}

  /** A database holding the rows of `workspaceId` (only). */
  static async make(
    corpus: {
      readonly verifications: ReadonlyArray<Verification>
      readonly decisions: ReadonlyArray<RatelimitEvent>
    },
    workspaceId: string
  ): Promise<Oracle> {
    const instance = await DuckDBInstance.create(":memory:")
    const connection = await instance.connect()
    for (const statement of RAW) await connection.run(statement)
    const verifications = await connection.createAppender("key_verifications_v1")
    for (const v of corpus.verifications) {
      if (v.workspaceId !== workspaceId) continue
      verifications.appendBigInt(BigInt(v.time))
      verifications.appendVarchar(v.workspaceId)
      verifications.appendVarchar(v.apiId)
      verifications.appendVarchar(v.keyId)
      verifications.appendVarchar(v.identity?.id ?? "")
      verifications.appendVarchar(v.identity?.externalId ?? "")
      verifications.appendVarchar(OUTCOME_NAME[v.outcome])
      verifications.appendList(listValue([...v.tags]), LIST(VARCHAR))
      verifications.appendBigInt(BigInt(v.spentCredits ?? 0))
      verifications.appendDouble(v.latency ?? 0)
      verifications.appendVarchar(v.region ?? "")
      verifications.endRow()
    }
    verifications.closeSync()
    const decisions = await connection.createAppender("ratelimits_v1")
    for (const d of corpus.decisions) {
      if (d.workspaceId !== workspaceId) continue
      decisions.appendBigInt(BigInt(d.time))
      decisions.appendVarchar(d.workspaceId)
      decisions.appendVarchar(d.namespaceId)
      decisions.appendVarchar(d.identifier)
      decisions.appendBigInt(d.passed ? 1n : 0n)
      decisions.appendDouble(d.latency)
      decisions.appendVarchar(d.overrideId ?? "")
      decisions.endRow()
    }
    decisions.closeSync()
    for (const statement of VIEWS) await connection.run(statement)
    return new Oracle(instance, connection)
  }

  /** Rows of a table (for the test's own checks of the load). */
  async count(table: string): Promise<number> {
    const answer = await this.run(`SELECT count(*) AS n FROM ${table}`)
    return answer.rows[0]![0] as number
  }

  async run(text: string): Promise<Table> {
    const reader = await this.connection.runAndReadAll(text)
    return { columns: reader.columnNames(), rows: reader.getRowsJS().map((row) => row.map(normalize)) }
  }

  close(): void {
    this.connection.closeSync()
    this.instance.closeSync()
  }
}

// ---------------------------------------------------------------------------------------------
// Comparing answers

const RELATIVE = 1e-9

/** Equal values: numbers exactly when both are integers, else within 1e-9 relative; arrays element-wise. */
export const sameValue = (a: unknown, b: unknown): boolean => {
  if (typeof a === "number" && typeof b === "number") {
    if (Number.isInteger(a) && Number.isInteger(b)) return a === b
    return Math.abs(a - b) <= RELATIVE * Math.max(1, Math.abs(a), Math.abs(b))
  }
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => sameValue(x, b[i]))
  return a === b
}

const sameRow = (a: ReadonlyArray<unknown>, b: ReadonlyArray<unknown>) =>
  a.length === b.length && a.every((x, i) => sameValue(x, b[i]))

/** A total order of rows for comparing multisets: by kind, then value (numbers rounded to 9 digits). */
const sortKey = (row: ReadonlyArray<unknown>): string =>
  JSON.stringify(row.map((v) => (typeof v === "number" && !Number.isInteger(v) ? Number(v.toPrecision(9)) : v)))

/**
 * Why `got` is not `expected`, or undefined when it is: the same columns, and the same rows in the
 * same order (as multisets when `ordered` is false).
 */
export const difference = (expected: Table, got: Table, ordered: boolean): string | undefined => {
  if (expected.columns.join(",") !== got.columns.join(",")) {
    return `columns differ: expected [${expected.columns.join(", ")}], got [${got.columns.join(", ")}]`
  }
  if (expected.rows.length !== got.rows.length) {
    return `expected ${expected.rows.length} rows, got ${got.rows.length}`
  }
  const order = (rows: ReadonlyArray<ReadonlyArray<unknown>>) =>
    ordered ? rows : [...rows].sort((a, b) => (sortKey(a) < sortKey(b) ? -1 : sortKey(a) > sortKey(b) ? 1 : 0))
  const e = order(expected.rows)
  const g = order(got.rows)
  for (let i = 0; i < e.length; i++) {
    if (!sameRow(e[i]!, g[i]!)) {
      return `row ${i + 1} differs: expected ${JSON.stringify(e[i])}, got ${JSON.stringify(g[i])}`
    }
  }
  return undefined
}
