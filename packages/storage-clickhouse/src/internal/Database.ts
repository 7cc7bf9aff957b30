/**
 * Opening the database both stores use: the URL checked, a connection for the scope, the schema
 * migrated.
 */
import { redactUrl, StorageError } from "@keymeter/core/Errors"
import * as Effect from "effect/Effect"
import * as Migrations from "../Migrations.js"
import * as Connection from "./Connection.js"

/** The URL is not one keymeter can use. */
const invalid = (message: string) => new StorageError({ message })

/**
 * Splits `http://user:pass@host:port/db[?native_port=9000]` into the client's URL, database,
 * credentials and the native port that aggregations read over (see `NativeClient`).
 */
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
  const native = parsed.searchParams.get("native_port")
  const nativePort = native === null ? undefined : Number(native)
  if (nativePort !== undefined && !(/^\d{1,5}$/.test(native!) && nativePort >= 1 && nativePort <= 65535)) {
    return invalid(`native_port must be a TCP port (1 to 65535), got ${JSON.stringify(native)}`)
  }
  if (!Migrations.isDatabaseName(database)) {
    return invalid(`Not a usable ClickHouse database name: ${JSON.stringify(database)} (letters, digits and _)`)
  }
  return {
    url: `${parsed.protocol}//${parsed.host}`,
    database,
    username: parsed.username === "" ? undefined : decodeURIComponent(parsed.username),
    password: parsed.password === "" ? undefined : decodeURIComponent(parsed.password),
    nativePort
  }
}

/**
 * A connection to the database `url` names, closed with the scope, once the database exists and
 * is migrated; with the database's name.
 */
export const open = (options: { readonly url: string; readonly requestTimeoutMs?: number | undefined }) =>
  Effect.gen(function*() {
    const target = parseUrl(options.url)
    if (target instanceof StorageError) return yield* target
    const settings = { ...target, requestTimeoutMs: options.requestTimeoutMs }
    const db = yield* Effect.acquireRelease(Effect.sync(() => Connection.make(settings)), (c) => c.close)
    const admin = Connection.make(settings, "default")
    yield* Migrations.run(admin, db, target.database).pipe(Effect.ensuring(admin.close))
    return { db, database: target.database }
  })

/** A connection to the database `url` names, closed with the scope; the stores migrate it. */
export const connect = (options: { readonly url: string; readonly requestTimeoutMs?: number | undefined }) =>
  Effect.gen(function*() {
    const target = parseUrl(options.url)
    if (target instanceof StorageError) return yield* target
    const settings = { ...target, requestTimeoutMs: options.requestTimeoutMs }
    return yield* Effect.acquireRelease(Effect.sync(() => Connection.make(settings)), (c) => c.close)
  })
