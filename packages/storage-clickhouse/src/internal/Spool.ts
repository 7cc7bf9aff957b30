/**
 * A durable queue on local disk in front of ClickHouse's INSERTs (the verification store's `spool`
 * option). ClickHouse 18.16 writes a part per table per INSERT and merges parts afterwards: with
 * the eight rollups, an INSERT of 3,200 events costs it ~90 ms of CPU, one of 100,000 ~360 ms (29
 * and 3.6 µs an event, merges included; measured on two cores). Acknowledged only once ClickHouse
 * has them, a round of group commit holds what the waiting callers sent, 32 requests at 32
 * connections. The spool acknowledges a round once it is on local disk (written and fsync'd) and
 * ships what has gathered, one INSERT per interval.
 *
 * The folder holds segments `<n>.spool` (records appended: a header line `#<bytes> <crc32>
 * <events> <first hour> <last hour>`, then the rows as JSONEachRow lines), `state.json` (the
 * spool's id, how far it has shipped, the shipment in progress) and `lock` (the pid using it). A
 * row carries its record's batch id, `sp_<spool>_<segment>_<offset>` (fixed widths, so ids sort
 * as offsets do), so a shipment that a crash or a failure left in doubt is settled from what
 * ClickHouse holds: a record whose rows are there is done, one whose rows are not is sent again.
 * A record torn by a crash was never acknowledged: the spool is cut before it when opened.
 */
import { StorageError } from "@keymeter/core/Errors"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import type { Record } from "./SpoolFiles.js"
import {
  batchId,
  failure,
  headerOf,
  lock,
  readRecords,
  replaceFile,
  SEGMENT,
  segmentName,
  syncDirectory
} from "./SpoolFiles.js"

export interface Options {
  /** The spool's folder (created when missing), one per server. */
  readonly directory: string
  /** How often what has gathered is shipped (default 1,000 ms): how stale ClickHouse's answers may be. */
  readonly intervalMs?: number | undefined
  /** Bytes not yet shipped beyond which new rounds fail (default 1 GiB): ClickHouse is down or behind. */
  readonly maxBytes?: number | undefined
  /** Bytes one INSERT carries at most (default 32 MiB; a record larger than it goes alone). */
  readonly maxShipmentBytes?: number | undefined
  /** Size past which the next record starts a new segment (default 64 MiB). */
  readonly segmentBytes?: number | undefined
}

/** One round's rows, as `make(batch)` writes them for the record's batch id. */
export interface Rows {
  /** JSONEachRow lines, each ending with `\n`. */
  readonly lines: string
  readonly events: number
  readonly firstHour: number
  readonly lastHour: number
}

/** What the spool needs of ClickHouse. */
export interface Target {
  /** Inserts JSONEachRow lines. */
  readonly insert: (body: Uint8Array) => Effect.Effect<void, StorageError>
  /** Rows per batch id for ids in [from, to), within the hours. */
  readonly counts: (
    from: string,
    to: string,
    firstHour: number,
    lastHour: number
  ) => Effect.Effect<ReadonlyMap<string, number>, StorageError>
}

export interface Spool {
  /** Appends a round; completes once it is on disk. Rounds must not overlap (group commit's writer). */
  readonly append: (make: (batch: string) => Rows) => Effect.Effect<void, StorageError>
  /** Ships everything appended before the call. */
  readonly flush: Effect.Effect<void, StorageError>
}

interface State {
  readonly spool: string
  /** Shipped up to here. */
  readonly segment: number
  readonly offset: number
  /** Records of `segment` in [offset, to) sent or being sent, not yet known to be in ClickHouse. */
  readonly pending?: number | undefined
}

/** Opens the spool in `options.directory` and ships to `target` for the life of the scope. */
export const make = (options: Options, target: Target): Effect.Effect<Spool, StorageError, Scope.Scope> =>
  Effect.gen(function*() {
    const directory = path.resolve(options.directory)
    const intervalMs = Math.max(1, options.intervalMs ?? 1_000)
    const maxBytes = Math.max(1, options.maxBytes ?? 1024 ** 3)
    const maxShipmentBytes = Math.max(1, options.maxShipmentBytes ?? 32 * 1024 ** 2)
    const segmentBytes = Math.max(1, options.segmentBytes ?? 64 * 1024 ** 2)
    const io = <A>(what: string, run: () => Promise<A>) =>
      Effect.tryPromise({ try: run, catch: failure(directory, what) })
    const fileOf = (segment: number) => path.join(directory, segmentName(segment))
    const stateFile = path.join(directory, "state.json")

    yield* io("be created", () => fs.mkdir(directory, { recursive: true, mode: 0o700 }))
    yield* lock(directory)

    // What was there: the state, the segments, each cut after its last whole record.
    let state: State = yield* io("read its state", async () => {
      const text = await fs.readFile(stateFile, "utf8").catch((error: { code?: unknown }) => {
        if (error.code === "ENOENT") return undefined
        throw error
      })
      if (text !== undefined) {
        const read = JSON.parse(text) as State
        const offset = (n: unknown) => typeof n === "number" && Number.isSafeInteger(n) && n >= 0
        if (
          typeof read.spool !== "string" || !/^[0-9a-f]{1,32}$/.test(read.spool) || !offset(read.segment) ||
          !offset(read.offset) || (read.pending !== undefined && !offset(read.pending))
        ) throw new Error(`${stateFile} is not a spool's state`)
        return read
      }
      const fresh: State = { spool: randomBytes(6).toString("hex"), segment: 0, offset: 0 }
      await replaceFile(stateFile, JSON.stringify(fresh))
      return fresh
    })
    const ends = new Map<number, number>()
    let unshipped = 0
    yield* io("be read", async () => {
      const segments = (await fs.readdir(directory))
        .map((name) => SEGMENT.exec(name))
        .filter((match) => match !== null)
        .map((match) => Number(match[1]))
        .sort((a, b) => a - b)
      for (const segment of segments) {
        const file = fileOf(segment)
        // Shipped whole, its removal interrupted.
        if (segment < state.segment) {
          await fs.rm(file, { force: true })
          continue
        }
        const from = segment === state.segment ? state.offset : 0
        const { size } = await fs.stat(file)
        let end = from
        while (end < size) {
          const { records } = await readRecords(file, end, size, maxShipmentBytes)
          if (records.length === 0) break
          end = records[records.length - 1]!.end
        }
        if (end < size) await fs.truncate(file, end)
        ends.set(segment, end)
        unshipped += end - from
      }
    })
    // A state naming a segment no longer there (removed by hand): nothing of it is left to ship,
    // and new records must not take offsets it counts as shipped.
    let active = Math.max(state.segment + (!ends.has(state.segment) && state.offset > 0 ? 1 : 0), ...ends.keys())
    if (state.pending !== undefined && state.pending > (ends.get(state.segment) ?? 0)) {
      state = { ...state, pending: Math.max(state.offset, ends.get(state.segment) ?? 0) }
    }
    if (!ends.has(active)) ends.set(active, 0)
    let handle = yield* io("open a segment", () => fs.open(fileOf(active), "a", 0o600))
    yield* io("open a segment", () => syncDirectory(directory))
    yield* Effect.addFinalizer(() => Effect.promise(() => handle.close()))
    let broken: StorageError | undefined

    const save = (next: State) =>
      Effect.zipRight(
        io("write its state", () => replaceFile(stateFile, JSON.stringify(next))),
        Effect.sync(() => (state = next))
      )

    // The shipper wakes at each interval, or sooner when a shipment's worth has gathered.
    const wake = yield* Queue.dropping<void>(1)

    const append = (make: (batch: string) => Rows) =>
      Effect.suspend(() => {
        if (broken !== undefined) return Effect.fail(broken)
        if (unshipped > maxBytes) {
          return Effect.fail(
            new StorageError({
              message: `The ClickHouse spool at ${directory} holds ${
                Math.round(unshipped / 1024 ** 2)
              } MiB not yet in ClickHouse, the most it may: ClickHouse is down or not keeping up`
            })
          )
        }
        return Effect.gen(function*() {
          let offset = ends.get(active)!
          if (offset >= segmentBytes) {
            const next = active + 1
            const opened = yield* io("open a segment", async () => {
              const opened = await fs.open(fileOf(next), "a", 0o600)
              await syncDirectory(directory)
              return opened
            })
            yield* Effect.promise(() => handle.close())
            handle = opened
            active = next
            ends.set(active, offset = 0)
          }
          const rows = make(batchId(state.spool, active, offset))
          const payload = Buffer.from(rows.lines, "utf8")
          const header = headerOf(payload, rows)
          const written = handle
          yield* io("write", async () => {
            await written.writev([header, payload])
            await written.datasync()
          }).pipe(
            // A record half written would hide those after it: cut it off, or stop appending.
            Effect.tapError(() =>
              Effect.promise(() =>
                written.truncate(offset).catch((cause: unknown) => {
                  broken = failure(directory, "write (and could not cut a failed write off)")(cause)
                })
              )
            )
          )
          ends.set(active, offset + header.length + payload.length)
          unshipped += header.length + payload.length
          if (unshipped >= maxShipmentBytes) yield* Queue.offer(wake, undefined)
        })
      })

    /** The records of `segment` from `from`, up to `to` and about a shipment's bytes. */
    const recordsOf = (segment: number, from: number, to: number) =>
      Effect.flatMap(
        io("be read", () => readRecords(fileOf(segment), from, to, maxShipmentBytes)),
        (read) =>
          read.records.length > 0
            ? Effect.succeed(read)
            : Effect.fail(
              new StorageError({
                message: `The ClickHouse spool at ${directory} is corrupt at ${segmentName(segment)}, byte ${from}`
              })
            )
      )

    const rowsOf = (buffer: Buffer, records: ReadonlyArray<Record>) =>
      Buffer.concat(records.map((record) => buffer.subarray(record.start, record.start + record.length)))

    /** A shipment in doubt: the records whose rows ClickHouse does not hold are sent again. */
    const settle = (segment: number, from: number, to: number) =>
      Effect.gen(function*() {
        let at = from
        while (at < to) {
          const { buffer, records } = yield* recordsOf(segment, at, to)
          const last = records[records.length - 1]!
          const counts = yield* target.counts(
            batchId(state.spool, segment, at),
            batchId(state.spool, segment, last.end),
            Math.min(...records.map((r) => r.firstHour)),
            Math.max(...records.map((r) => r.lastHour))
          )
          const stored = (record: Record) => counts.get(batchId(state.spool, segment, record.offset)) ?? 0
          // In part: only when ClickHouse failed inside an INSERT spanning partitions. Not sent again,
          // which would count the rest twice.
          for (const record of records.filter((r) => stored(r) > 0 && stored(r) < r.events)) {
            yield* Effect.logError(
              `ClickHouse holds ${stored(record)} of the ${record.events} events of batch ` +
                `${batchId(state.spool, segment, record.offset)}; the rest are not sent again`
            )
          }
          const missing = records.filter((record) => stored(record) === 0)
          if (missing.length > 0) yield* target.insert(rowsOf(buffer, missing))
          at = last.end
        }
      })

    /** Ships one shipment's worth; false when there was nothing to ship. */
    const shipOnce = Effect.gen(function*() {
      if (state.pending !== undefined) {
        const to = state.pending
        yield* settle(state.segment, state.offset, to)
        const shipped = to - state.offset
        yield* save({ spool: state.spool, segment: state.segment, offset: to })
        unshipped -= shipped
        return true
      }
      const end = ends.get(state.segment) ?? 0
      if (state.offset >= end) {
        if (state.segment >= active) return false
        const done = state.segment
        yield* save({ spool: state.spool, segment: done + 1, offset: 0 })
        ends.delete(done)
        yield* io("remove a shipped segment", () => fs.rm(fileOf(done), { force: true }))
        return true
      }
      const { buffer, records } = yield* recordsOf(state.segment, state.offset, end)
      const to = records[records.length - 1]!.end
      yield* save({ ...state, pending: to })
      yield* target.insert(rowsOf(buffer, records))
      const shipped = to - state.offset
      yield* save({ spool: state.spool, segment: state.segment, offset: to })
      unshipped -= shipped
      return true
    })

    // Shipments one at a time: the loop's and a flush's.
    const one = yield* Effect.makeSemaphore(1)
    const shipAll = one.withPermits(1)(Effect.gen(function*() {
      const until = { segment: active, offset: ends.get(active)! }
      while (state.segment < until.segment || (state.segment === until.segment && state.offset < until.offset)) {
        if (!(yield* shipOnce)) break
      }
    }))

    const loop = Effect.gen(function*() {
      yield* Effect.race(Queue.take(wake), Effect.sleep(Duration.millis(intervalMs)))
      yield* shipAll
    }).pipe(
      // ClickHouse down: what is spooled waits, and is tried again less and less often.
      Effect.tapError((error) => Effect.logWarning(`Spooled verifications not shipped yet: ${error.message}`)),
      Effect.retry(
        Schedule.exponential(Duration.millis(intervalMs)).pipe(Schedule.union(Schedule.spaced("30 seconds")))
      ),
      Effect.forever
    )
    const shipper = yield* Effect.forkDaemon(loop)
    // On close: the loop stopped, then what is spooled shipped if ClickHouse takes it soon; the rest
    // waits on disk for the next start.
    yield* Effect.addFinalizer(() =>
      Fiber.interrupt(shipper).pipe(
        Effect.zipRight(shipAll.pipe(Effect.timeout("5 seconds"), Effect.ignore))
      )
    )
    return { append, flush: shipAll }
  })
