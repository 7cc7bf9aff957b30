import { describe, expect, it } from "@effect/vitest"
import { ClickhouseTestServer } from "@keymeter/testing"
import * as Effect from "effect/Effect"
import { string } from "../src/internal/Literal.js"
import * as NativeClient from "../src/internal/NativeClient.js"
import type { Block } from "../src/internal/NativeReader.js"
import { BlockProgress, Incomplete, Malformed, NativeReader } from "../src/internal/NativeReader.js"
import * as Select from "../src/internal/Select.js"

const STRINGS = ["", "key_0_0", "it's", "a\u0000b", "é ü 中文 🔑", "x".repeat(300)]

const leb = (n: number) => {
  const out: Array<number> = []
  do {
    out.push((n & 0x7f) | (n >= 0x80 ? 0x80 : 0))
    n = Math.floor(n / 128)
  } while (n > 0)
  return Buffer.from(out)
}
const str = (text: string) => Buffer.concat([leb(Buffer.byteLength(text)), Buffer.from(text)])
const u64 = (...values: ReadonlyArray<number>) =>
  Buffer.concat(values.map((v) => {
    const b = Buffer.alloc(8)
    b.writeUInt32LE(v % 2 ** 32, 0)
    b.writeUInt32LE(Math.floor(v / 2 ** 32), 4)
    return b
  }))
const u32 = (...values: ReadonlyArray<number>) =>
  Buffer.concat(values.map((v) => {
    const b = Buffer.alloc(4)
    b.writeUInt32LE(v, 0)
    return b
  }))

/** A block of two rows: UInt32, String, UInt64, Array(String), Array(Tuple(UInt32, String)), Nullable(Int32). */
const BLOCK = Buffer.concat([
  leb(6),
  leb(2),
  str("b"),
  str("UInt32"),
  u32(7, 4294967295),
  str("key_id"),
  str("String"),
  str("y".repeat(200)),
  str("🔑"),
  str("c0"),
  str("UInt64"),
  u64(2 ** 32 + 5, 2 ** 53 - 1),
  str("tags"),
  str("Array(String)"),
  u64(2, 3),
  str("a"),
  str("bc"),
  str(""),
  str("top"),
  str("Array(Tuple(UInt32, String))"),
  u64(0, 1),
  u32(9),
  str("x"),
  str("n"),
  str("Nullable(Int32)"),
  Buffer.from([1, 0]),
  Buffer.from([0, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff])
])

const EXPECTED: Block = {
  rows: 2,
  names: ["b", "key_id", "c0", "tags", "top", "n"],
  types: ["UInt32", "String", "UInt64", "Array(String)", "Array(Tuple(UInt32, String))", "Nullable(Int32)"],
  columns: [
    Float64Array.of(7, 4294967295),
    ["y".repeat(200), "🔑"],
    Float64Array.of(2 ** 32 + 5, 2 ** 53 - 1),
    { _tag: "Array", ends: Float64Array.of(2, 3), values: ["a", "bc", ""] },
    { _tag: "Array", ends: Float64Array.of(0, 1), values: { _tag: "Tuple", elements: [Float64Array.of(9), ["x"]] } },
    { _tag: "Nullable", nulls: Uint8Array.of(1, 0), values: Float64Array.of(0, -2) }
  ]
}

describe("NativeReader", () => {
  it("reads a block of integers, strings, arrays, tuples and nullables", () => {
    const reader = new NativeReader(BLOCK)
    expect(reader.block(false)).toEqual(EXPECTED)
    expect(reader.done).toBe(true)
  })

  it("reads the block info of the TCP protocol's Data packets", () => {
    const info = Buffer.from([1, 0, 2, 0xff, 0xff, 0xff, 0xff, 0])
    const reader = new NativeReader(Buffer.concat([info, BLOCK]))
    expect(reader.block(true)).toEqual(EXPECTED)
    expect(() => new NativeReader(Buffer.concat([Buffer.from([7, 0]), BLOCK])).block(true)).toThrow(Malformed)
  })

  it("refuses a block cut short at any byte, and needs no more than it was cut by", () => {
    for (let end = 0; end < BLOCK.length; end++) {
      const reader = new NativeReader(BLOCK.subarray(0, end))
      expect(() => reader.block(false), `cut at ${end}`).toThrow(Incomplete)
      expect(reader.wanted, `cut at ${end}`).toBeGreaterThan(end)
      expect(reader.wanted, `cut at ${end}`).toBeLessThanOrEqual(BLOCK.length)
    }
  })

  it("reads on a block that arrives in pieces from where it stopped, to the same block", () => {
    for (const piece of [1, 2, 3, 7, 50, 300]) {
      const progress = new BlockProgress(0)
      let block: Block | undefined
      for (let end = piece; block === undefined; end += piece) {
        // Each time a buffer holding more: the block's bytes moved, as in a compacted buffer.
        const shift = end % 5
        const bytes = Buffer.concat([Buffer.alloc(shift), BLOCK.subarray(0, Math.min(end, BLOCK.length))])
        progress.base = shift
        try {
          block = new NativeReader(bytes).block(false, progress)
        } catch (error) {
          expect(error).toBeInstanceOf(Incomplete)
          expect(end).toBeLessThan(BLOCK.length)
        }
      }
      expect(block, `pieces of ${piece}`).toEqual(EXPECTED)
    }
  })

  it("refuses types it does not read and lengths that cannot be", () => {
    const block = (type: string) => Buffer.concat([leb(1), leb(1), str("c"), str(type), Buffer.alloc(16)])
    for (const type of ["LowCardinality(String)", "Decimal(9, 2)", "UUID", "Map(String, String)"]) {
      expect(() => new NativeReader(block(type)).block(false), type).toThrow(/which keymeter does not read/)
    }
    expect(() => new NativeReader(Buffer.alloc(10, 0xff)).varUInt()).toThrow(/too large/)
    // A count of rows far beyond the bytes: nothing allocated for it, more bytes wanted.
    const huge = Buffer.concat([leb(1), leb(2 ** 40), str("s"), str("String"), str("a")])
    expect(() => new NativeReader(huge).block(false)).toThrow(Incomplete)
  })
})

describe.skipIf(ClickhouseTestServer.skip() !== undefined)("Native blocks from a real ClickHouse", () => {
  const text = `SELECT toUInt32(number) AS n, toUInt64(number * 1099511627776) AS big, ` +
    `[${STRINGS.map(string).join(", ")}] AS texts, ${string(STRINGS[4]!)} AS one, ` +
    `[(toUInt32(number), toString(number))] AS pairs FROM system.numbers LIMIT 3`
  const check = (blocks: ReadonlyArray<Block>) => {
    expect(blocks.reduce((n, b) => n + b.rows, 0)).toBe(3)
    const [block] = blocks
    expect(block!.types).toEqual(["UInt32", "UInt64", "Array(String)", "String", "Array(Tuple(UInt32, String))"])
    expect(Array.from(block!.columns[0] as Float64Array)).toEqual([0, 1, 2])
    expect(Array.from(block!.columns[1] as Float64Array)).toEqual([0, 1099511627776, 2 * 1099511627776])
    expect(block!.columns[2]).toEqual({
      _tag: "Array",
      ends: Float64Array.of(6, 12, 18),
      values: [...STRINGS, ...STRINGS, ...STRINGS]
    })
    expect(block!.columns[3]).toEqual([STRINGS[4], STRINGS[4], STRINGS[4]])
    expect(block!.columns[4]).toEqual({
      _tag: "Array",
      ends: Float64Array.of(1, 2, 3),
      values: { _tag: "Tuple", elements: [Float64Array.of(0, 1, 2), ["0", "1", "2"]] }
    })
  }

  it.effect("reads what ClickHouse writes over HTTP and over the native protocol, the same", () =>
    Effect.promise(async () => {
      const url = new URL(ClickhouseTestServer.url!)
      const options = { database: undefined, username: "default", password: "", requestTimeoutMs: 10_000 }
      const select = Select.make({ url: ClickhouseTestServer.url!, ...options })
      const native = NativeClient.make({
        secure: false,
        host: url.hostname,
        port: ClickhouseTestServer.nativePort!,
        ...options
      })
      try {
        check(await select.queryBlocks(text))
        check(await native.select(text))
        // An error after the first blocks is a failed read, never an answer cut short.
        const failing = "SELECT number, throwIf(number = 900000) FROM system.numbers LIMIT 1000000"
        await expect(select.queryBlocks(failing)).rejects.toThrow(/throwIf/)
        await expect(native.select(failing)).rejects.toThrow(/throwIf/)
      } finally {
        select.close()
        native.close()
      }
    }))
})
