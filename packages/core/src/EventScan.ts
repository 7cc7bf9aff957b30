/**
 * Raw events as columns, for SQL analytics: what a store hands the SQL executor. A scan is bounded
 * by a {@link ScanScope} that core builds from the caller's root key (never from query text): one
 * workspace, the apis or namespaces the key may read, a time range, a row budget. Columns are
 * dictionary-encoded where values repeat, so an engine can hand its own codes over without copying
 * and the executor can group by code before it decodes anything.
 */
import type * as Effect from "effect/Effect"

/** What one scan may read. */
export interface ScanScope {
  readonly workspaceId: string
  /**
   * Api ids (namespace ids for decisions) whose events the scan returns; undefined: every api (or
   * namespace) of the workspace. An empty list returns nothing.
   */
  readonly within: ReadonlyArray<string> | undefined
  /** Unix ms, inclusive. */
  readonly from: number
  /** Unix ms, exclusive. */
  readonly to: number
  /**
   * Most rows the scan may return. A scope holding more fails the scan with `QueryTooLarge` (it
   * names the row budget) before more than about this many rows are read.
   */
  readonly maxRows: number
  /**
   * Run between the steps of a long scan (a store that reads in pages): the reader's pacing, which
   * lets other work run and may stop the scan. Absent: one turn of the event loop.
   */
  readonly pause?: Effect.Effect<void> | undefined
}

/** A column of repeated values: row `i` holds `values[codes[i]]`. */
export interface Dictionary<A> {
  readonly codes: ArrayLike<number>
  readonly values: ReadonlyArray<A>
}

/**
 * Verifications, rows `[0, length)` of every column, in no particular order. Stores keep `time`,
 * spent credits and latency as recorded; events recorded before those were kept read 0.
 */
export interface VerificationColumns {
  readonly length: number
  /** Unix ms. */
  readonly time: ArrayLike<number>
  readonly apiId: Dictionary<string>
  readonly keyId: Dictionary<string>
  /** "" for a key without identity. */
  readonly identityId: Dictionary<string>
  /** "" for a key without identity. */
  readonly externalId: Dictionary<string>
  /** Position in `Verification.Outcomes`. */
  readonly outcome: ArrayLike<number>
  /** Each row's tag set, sorted and unique (as stored). */
  readonly tags: Dictionary<ReadonlyArray<string>>
  readonly spentCredits: ArrayLike<number>
  /** Milliseconds, to the microsecond. */
  readonly latency: ArrayLike<number>
  /** "" when not recorded. */
  readonly region: Dictionary<string>
}

/** Rate-limit decisions, rows `[0, length)` of every column, in no particular order. */
export interface RatelimitColumns {
  readonly length: number
  /** Unix ms. */
  readonly time: ArrayLike<number>
  readonly namespaceId: Dictionary<string>
  readonly identifier: Dictionary<string>
  /** 1 passed, 0 blocked. */
  readonly passed: ArrayLike<number>
  /** Milliseconds, to the microsecond. */
  readonly latency: ArrayLike<number>
  /** "" when no override decided. */
  readonly overrideId: Dictionary<string>
}
