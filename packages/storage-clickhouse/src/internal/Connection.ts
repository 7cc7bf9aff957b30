/**
 * `@clickhouse/client` (HTTP interface) as Effects. Every failure becomes a StorageError, which the
 * HTTP layer answers with 503: the server unreachable or timing out, or an exception from
 * ClickHouse. SELECTs go through `Select` (Node's http, without the client's timer turn per
 * request), an aggregation's through `NativeClient` when the native port is given; the rest
 * through the client.
 */
import { ClickHouseLogLevel, createClient } from "@clickhouse/client"
import { StorageError } from "@keymeter/core/Errors"
import * as Effect from "effect/Effect"
import { Readable } from "node:stream"
import * as NativeClient from "./NativeClient.js"
import type { Block } from "./NativeReader.js"
import * as Select from "./Select.js"

/** Where the server is: an http(s) URL without the database, and the database name. */
export interface Target {
  readonly url: string
  readonly database: string
  readonly username?: string | undefined
  readonly password?: string | undefined
  /** How long one request may take (default 30 s). */
  readonly requestTimeoutMs?: number | undefined
  /**
   * The server's native TCP port: when set, `queryBlocks` reads over the native protocol (see
   * `NativeClient`), else over HTTP.
   */
  readonly nativePort?: number | undefined
}

export interface Connection {
  /** Rows of a SELECT, as arrays in column order; `settings` apply to this query only. */
  readonly query: (
    text: string,
    settings?: Readonly<Record<string, string | number>>
  ) => Effect.Effect<Array<Array<unknown>>, StorageError>
  /** The blocks (those with rows) of a SELECT's answer, column-wise (see `NativeReader`). */
  readonly queryBlocks: (text: string) => Effect.Effect<Array<Block>, StorageError>
  /**
   * A statement without a result (DDL). `resend`: the statement is idempotent, so it is sent again
   * (up to `RESENDS` times) when the server resets its connection before answering.
   */
  readonly command: (text: string, options?: { readonly resend?: boolean }) => Effect.Effect<void, StorageError>
  /** Rows into `table` as JSONEachRow: the values travel as data, never as SQL text. */
  readonly insert: (table: string, rows: ReadonlyArray<Record<string, unknown>>) => Effect.Effect<void, StorageError>
  /** JSONEachRow lines into `table`, as they are. */
  readonly insertLines: (table: string, lines: Uint8Array) => Effect.Effect<void, StorageError>
  readonly close: Effect.Effect<void>
}

const failure = (target: Target, cause: unknown): StorageError => {
  const error = cause as { code?: unknown; message?: unknown }
  const network = typeof error.code === "string" && /^E[A-Z]+/.test(error.code)
  const timeout = typeof error.message === "string" && /timeout/i.test(error.message)
  const detail = typeof error.message === "string" ? error.message : String(cause)
  return new StorageError({
    message: network || timeout
      ? `ClickHouse is unreachable at ${target.url}: ${detail}`
      : `ClickHouse: ${detail.replace(/, e\.what\(\) = DB::Exception$/, "")}`,
    cause
  })
}

/** How often an idempotent statement is sent again after a reset connection: as often as a SELECT. */
export const RESENDS = Select.RESENDS

/**
 * The server closed the connection before answering: most often a kept-alive socket it had just
 * closed as idle (its keep_alive_timeout, 3 s before 23.11) picked for the next request.
 */
const isReset = (error: unknown) => {
  const { code, message } = error as { code?: unknown; message?: unknown }
  return code === "ECONNRESET" || message === "socket hang up"
}

/** `run`, run again after a reset connection, at most `RESENDS` times. */
const resending = <A>(run: () => Promise<A>, resends = RESENDS): Promise<A> =>
  run().catch((error) => resends > 0 && isReset(error) ? resending(run, resends - 1) : Promise.reject(error))

/** A connection to `target`; `database: undefined` runs statements outside any database. */
export const make = (target: Target, database: string | undefined = target.database): Connection => {
  const client = createClient({
    url: target.url,
    ...(database !== undefined ? { database } : {}),
    username: target.username ?? "default",
    password: target.password ?? "",
    request_timeout: target.requestTimeoutMs ?? 30_000,
    application: "keymeter",
    // Errors are reported through the StorageError they become; the client's own log would repeat them.
    log: { level: ClickHouseLogLevel.OFF },
    // Sockets idle longer than this are not reused: well inside the server's keep_alive_timeout
    // (3 s before 23.11), and checked when a request starts, not only by a timer a busy loop delays.
    keep_alive: { idle_socket_ttl: 1_500, eagerly_destroy_stale_sockets: true },
    // The views of one INSERT write their rollups in parallel rather than one after another.
    clickhouse_settings: { output_format_json_quote_64bit_integers: 0, parallel_view_processing: 1 }
  })
  const select = Select.make({
    url: target.url,
    database,
    username: target.username ?? "default",
    password: target.password ?? "",
    requestTimeoutMs: target.requestTimeoutMs ?? 30_000
  })
  const server = new URL(target.url)
  const native = target.nativePort === undefined ? undefined : NativeClient.make({
    secure: server.protocol === "https:",
    host: server.hostname,
    port: target.nativePort,
    database,
    username: target.username ?? "default",
    password: target.password ?? "",
    requestTimeoutMs: target.requestTimeoutMs ?? 30_000
  })
  const attempt = <A>(run: () => Promise<A>) =>
    Effect.tryPromise({ try: run, catch: (cause) => failure(target, cause) }).pipe(
      Effect.tapError((error) => Effect.logWarning(error.message))
    )
  return {
    query: (text, settings) => attempt(() => select.query(text, settings)),
    queryBlocks: native !== undefined
      ? (text) => attempt(() => native.select(text))
      : (text) => attempt(() => select.queryBlocks(text)),
    command: (text, options) => {
      const send = () => client.command({ query: text })
      return attempt(options?.resend === true ? () => resending(send) : send).pipe(Effect.asVoid)
    },
    insert: (table, rows) =>
      attempt(() => client.insert({ table, values: rows as Array<Record<string, unknown>>, format: "JSONEachRow" }))
        .pipe(
          Effect.asVoid
        ),
    insertLines: (table, lines) =>
      attempt(async () => {
        const { stream } = await client.exec({
          query: `INSERT INTO ${table} FORMAT JSONEachRow`,
          values: Readable.from([lines], { objectMode: false })
        })
        // The answer of an INSERT is empty; read to its end, so the connection can be used again.
        await new Promise<void>((resolve, reject) => stream.on("error", reject).on("end", resolve).resume())
      }),
    close: Effect.promise(() => client.close()).pipe(
      Effect.zipRight(Effect.sync(() => {
        select.close()
        native?.close()
      }))
    )
  }
}
