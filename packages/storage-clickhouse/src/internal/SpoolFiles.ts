/**
 * The spool's files (see `Spool`): segments of records (a header line `#<bytes> <crc32> <events>
 * <first hour> <last hour>`, then the rows), read back whole records at a time; files replaced
 * whole or not at all; the folder held by one process.
 */
import { StorageError } from "@keymeter/core/Errors"
import * as Effect from "effect/Effect"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { crc32 } from "node:zlib"

/** A record of a segment: where it starts in the file, where its rows are in the buffer read. */
export interface Record {
  readonly offset: number
  /** Where the rows are in the buffer read, and how long. */
  readonly start: number
  readonly length: number
  readonly events: number
  readonly firstHour: number
  readonly lastHour: number
  /** Offset of the next record. */
  readonly end: number
}

/** Segments' names, `<n>.spool` with n of eight digits. */
export const SEGMENT = /^(\d{8})\.spool$/
export const segmentName = (n: number) => `${String(n).padStart(8, "0")}.spool`
/** The batch id a record's rows carry: fixed widths, so ids sort as offsets do. */
export const batchId = (spool: string, segment: number, offset: number) =>
  `sp_${spool}_${String(segment).padStart(8, "0")}_${String(offset).padStart(12, "0")}`

/** Folders held by this process (a pid in a lock file cannot tell two stores of one process apart). */
const held = new Set<string>()

/** The store's error for a failed file operation, naming the folder and what failed. */
export const failure = (directory: string, what: string) => (cause: unknown) =>
  new StorageError({
    message: `The ClickHouse spool at ${directory} could not ${what}: ${
      cause instanceof Error ? cause.message : String(cause)
    }`,
    cause
  })

/** The records wholly inside `buffer` (read from `base`); stops at the first torn or corrupt one. */
const parse = (buffer: Buffer, base: number): Array<Record> => {
  const records: Array<Record> = []
  let at = 0
  while (at < buffer.length) {
    const newline = buffer.indexOf(10, at)
    if (newline < 0 || newline - at > 100) break
    const header = /^#(\d+) (\d+) (\d+) (\d+) (\d+)$/.exec(buffer.toString("latin1", at, newline))
    if (header === null) break
    const start = newline + 1
    const length = Number(header[1])
    if (start + length > buffer.length) break
    if (crc32(buffer.subarray(start, start + length)) !== Number(header[2])) break
    records.push({
      offset: base + at,
      start,
      length,
      events: Number(header[3]),
      firstHour: Number(header[4]),
      lastHour: Number(header[5]),
      end: base + start + length
    })
    at = start + length
  }
  return records
}

/** A record's header line for `payload`, as {@link parse} reads it. */
export const headerOf = (
  payload: Buffer,
  rows: { readonly events: number; readonly firstHour: number; readonly lastHour: number }
) => Buffer.from(`#${payload.length} ${crc32(payload)} ${rows.events} ${rows.firstHour} ${rows.lastHour}\n`, "latin1")

/** Bytes [from, to) of a file. */
const readRange = async (file: string, from: number, to: number) => {
  const handle = await fs.open(file, "r")
  try {
    const buffer = Buffer.alloc(to - from)
    let read = 0
    while (read < buffer.length) {
      const { bytesRead } = await handle.read(buffer, read, buffer.length - read, from + read)
      if (bytesRead === 0) break
      read += bytesRead
    }
    return buffer.subarray(0, read)
  } finally {
    await handle.close()
  }
}

/**
 * The records of `file` from `from` (a record's start), up to `to` and about `max` bytes, a record
 * longer than `max` whole; none when the one at `from` is torn or corrupt.
 */
export const readRecords = async (file: string, from: number, to: number, max: number) => {
  let buffer = await readRange(file, from, Math.min(to, from + max))
  let records = parse(buffer, from)
  if (records.length === 0 && buffer.length > 0) {
    const newline = buffer.indexOf(10)
    const length = Number(/^#(\d+) /.exec(buffer.toString("latin1", 0, Math.max(0, newline)))?.[1])
    if (newline >= 0 && Number.isSafeInteger(length)) {
      buffer = await readRange(file, from, Math.min(to, from + newline + 1 + length))
      records = parse(buffer, from)
    }
  }
  return { buffer, records }
}

/** Syncs a folder: a file created or renamed in it survives a crash. */
export const syncDirectory = async (directory: string) => {
  const handle = await fs.open(directory, "r")
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

/** Writes a file whole or not at all: a sibling written and synced, renamed over it, the folder synced. */
export const replaceFile = async (file: string, text: string) => {
  const temporary = `${file}.tmp`
  const handle = await fs.open(temporary, "w", 0o600)
  try {
    await handle.writeFile(text)
    await handle.sync()
  } finally {
    await handle.close()
  }
  await fs.rename(temporary, file)
  await syncDirectory(path.dirname(file))
}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as { code?: unknown }).code === "EPERM"
  }
}

/** The folder for this process alone, until the scope closes. */
export const lock = (directory: string) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        if (held.has(directory)) throw new Error("another store of this process uses it")
        const file = path.join(directory, "lock")
        const owner = Number.parseInt(await fs.readFile(file, "utf8").catch(() => ""), 10)
        // The pid of a process gone (or this one's own, restarted under the same pid) holds nothing.
        if (Number.isSafeInteger(owner) && owner !== process.pid && isAlive(owner)) {
          throw new Error(`process ${owner} uses it (remove ${file} if that process is not keymeter)`)
        }
        await replaceFile(file, String(process.pid))
        held.add(directory)
      },
      catch: failure(directory, "be used")
    }),
    () =>
      Effect.promise(async () => {
        held.delete(directory)
        await fs.rm(path.join(directory, "lock"), { force: true })
      })
  )
