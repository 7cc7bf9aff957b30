/**
 * A reader of ClickHouse's `Native` blocks, the column-wise form of an answer that its native TCP
 * protocol sends in Data packets and its HTTP interface writes for `FORMAT Native`: per block the
 * number of columns and rows, then per column its name, its type and its values one after another
 * (integers little-endian, strings after their length as an unsigned LEB128, an array's values
 * after the cumulative ends of its rows, a tuple's elements as columns of their own). Reading past
 * the end throws {@link Incomplete}: the caller waits for more bytes or fails, never reads short.
 */

/** A numeric column (every integer as a number: exact below 2^53, which counts and buckets are). */
export type Numbers = Float64Array<ArrayBuffer>

/** An `Array(T)` column: row `r`'s values are `values[ends[r - 1] .. ends[r]]` (`ends[-1]` is 0). */
export interface ArrayColumn {
  readonly _tag: "Array"
  readonly ends: Numbers
  readonly values: Column
}

/** A `Tuple(…)` column: one column per element. */
export interface TupleColumn {
  readonly _tag: "Tuple"
  readonly elements: ReadonlyArray<Column>
}

/** A `Nullable(T)` column: `nulls[r]` is 1 where row `r` is NULL (its value is then a default). */
export interface NullableColumn {
  readonly _tag: "Nullable"
  readonly nulls: Uint8Array
  readonly values: Column
}

export type Column = Numbers | Array<string> | ArrayColumn | TupleColumn | NullableColumn

export interface Block {
  readonly rows: number
  readonly names: ReadonlyArray<string>
  readonly types: ReadonlyArray<string>
  readonly columns: ReadonlyArray<Column>
}

/** The bytes end before the value being read: more may come (a stream) or the answer is cut short. */
export class Incomplete extends Error {
  constructor() {
    super("ClickHouse Native: the answer ends before its last value")
  }
}

/** A type keymeter does not read, or a block that cannot be one. */
export class Malformed extends Error {}

const FIXED: Record<string, readonly [bytes: number, read: (view: DataView, at: number) => number]> = {
  UInt8: [1, (v, at) => v.getUint8(at)],
  UInt16: [2, (v, at) => v.getUint16(at, true)],
  UInt32: [4, (v, at) => v.getUint32(at, true)],
  UInt64: [8, (v, at) => v.getUint32(at, true) + v.getUint32(at + 4, true) * 4294967296],
  Int8: [1, (v, at) => v.getInt8(at)],
  Int16: [2, (v, at) => v.getInt16(at, true)],
  Int32: [4, (v, at) => v.getInt32(at, true)],
  Int64: [8, (v, at) => v.getUint32(at, true) + v.getInt32(at + 4, true) * 4294967296],
  Float32: [4, (v, at) => v.getFloat32(at, true)],
  Float64: [8, (v, at) => v.getFloat64(at, true)],
  Date: [2, (v, at) => v.getUint16(at, true)],
  DateTime: [4, (v, at) => v.getUint32(at, true)]
}

/** The elements of `Tuple(a, b, …)`'s inside, split at the commas outside parentheses. */
const elementsOf = (inside: string): Array<string> => {
  const out: Array<string> = []
  let depth = 0
  let from = 0
  for (let i = 0; i < inside.length; i++) {
    const c = inside[i]
    if (c === "(") depth++
    else if (c === ")") depth--
    else if (c === "," && depth === 0) {
      out.push(inside.slice(from, i).trim())
      from = i + 1
    }
  }
  out.push(inside.slice(from).trim())
  return out
}

/** The type inside `Name(…)`, when `type` is one. */
const inner = (type: string, name: string): string | undefined =>
  type.startsWith(`${name}(`) && type.endsWith(")") ? type.slice(name.length + 1, -1) : undefined

/**
 * How far a block has been read: its header, its whole columns, the values of a String column so
 * far; `offset` is where to read on, counted from `base`, the first byte of the block's packet,
 * which the caller sets each time it reads (its buffer may have moved).
 */
export class BlockProgress {
  constructor(public base: number, public offset = 0) {}
  rows = -1
  count = 0
  readonly names: Array<string> = []
  readonly types: Array<string> = []
  readonly columns: Array<Column> = []
  /** The column being read's type, once its name and type are read. */
  type: string | undefined = undefined
  strings: Array<string> | undefined = undefined
}

export class NativeReader {
  at = 0
  /** After an {@link Incomplete}: how many bytes the reader needed, at least, to read on. */
  wanted = 0
  private readonly view: DataView
  constructor(private readonly bytes: Buffer) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  }

  /** Whether every byte has been read. */
  get done(): boolean {
    return this.at === this.bytes.length
  }

  /** An unsigned LEB128 (a length, a count, a packet type). */
  varUInt(): number {
    let value = 0
    let scale = 1
    for (;;) {
      if (this.at >= this.bytes.length) this.incomplete(1)
      const byte = this.bytes[this.at++]!
      value += (byte & 0x7f) * scale
      if (byte < 0x80) return value
      scale *= 128
      if (scale > 2 ** 56) throw new Malformed("ClickHouse Native: a length too large")
    }
  }

  uint8(): number {
    this.need(1)
    return this.bytes[this.at++]!
  }

  int32(): number {
    this.need(4)
    const value = this.view.getInt32(this.at, true)
    this.at += 4
    return value
  }

  /** A UInt64 as a number (exact below 2^53). */
  uint64(): number {
    this.need(8)
    const value = this.view.getUint32(this.at, true) + this.view.getUint32(this.at + 4, true) * 4294967296
    this.at += 8
    return value
  }

  string(): string {
    const length = this.varUInt()
    this.need(length)
    const at = this.at
    this.at += length
    return length === 0 ? "" : this.bytes.toString("utf8", at, this.at)
  }

  /**
   * A block. `info`: it starts with its block info (the TCP protocol's Data packets; `FORMAT Native`
   * over HTTP has none): field numbers and values, ended by field 0. With `progress`, a block cut
   * short (see {@link Incomplete}) is read on from where it stopped once more bytes have come,
   * rather than from its start: a block of 65,536 rows arrives in many chunks.
   */
  block(info: boolean, progress: BlockProgress = new BlockProgress(this.at)): Block {
    const p = progress
    this.at = p.base + p.offset
    if (p.rows < 0) {
      if (info) {
        for (let field = this.varUInt(); field !== 0; field = this.varUInt()) {
          if (field === 1) this.uint8() // is_overflows
          else if (field === 2) this.int32() // bucket_num
          else throw new Malformed(`ClickHouse Native: an unknown block info field ${field}`)
        }
      }
      const count = this.varUInt()
      p.rows = this.varUInt()
      p.count = count
      p.offset = this.at - p.base
    }
    const rows = p.rows
    while (p.columns.length < p.count) {
      if (p.type === undefined) {
        const name = this.string()
        p.type = this.string()
        p.names.push(name)
        p.types.push(p.type)
        p.offset = this.at - p.base
      }
      if (p.type === "String") {
        // Row by row, so that a column cut short is read on from its last whole value.
        const out = p.strings ??= []
        while (out.length < rows) {
          out.push(this.string())
          p.offset = this.at - p.base
        }
        p.strings = undefined
        p.columns.push(out)
      } else {
        p.columns.push(this.column(p.type, rows))
      }
      p.type = undefined
      p.offset = this.at - p.base
    }
    return { rows, names: p.names, types: p.types, columns: p.columns }
  }

  /** `rows` values of `type`. */
  column(type: string, rows: number): Column {
    const fixed = FIXED[type]
    if (fixed !== undefined) {
      const [size, read] = fixed
      this.need(size * rows)
      const out = new Float64Array(rows)
      const view = this.view
      let at = this.at
      for (let r = 0; r < rows; r++, at += size) out[r] = read(view, at)
      this.at = at
      return out
    }
    if (type === "String") {
      // Each value takes a byte at least: a count beyond the bytes left is never allocated.
      this.need(rows)
      const out = new Array<string>(rows)
      for (let r = 0; r < rows; r++) out[r] = this.string()
      return out
    }
    const array = inner(type, "Array")
    if (array !== undefined) {
      const ends = this.column("UInt64", rows) as Numbers
      return { _tag: "Array", ends, values: this.column(array, rows === 0 ? 0 : ends[rows - 1]!) }
    }
    const tuple = inner(type, "Tuple")
    if (tuple !== undefined) {
      return { _tag: "Tuple", elements: elementsOf(tuple).map((element) => this.column(element, rows)) }
    }
    const nullable = inner(type, "Nullable")
    if (nullable !== undefined) {
      this.need(rows)
      const nulls = new Uint8Array(this.bytes.subarray(this.at, this.at + rows))
      this.at += rows
      return { _tag: "Nullable", nulls, values: this.column(nullable, rows) }
    }
    throw new Malformed(`ClickHouse Native: a column of type ${type}, which keymeter does not read`)
  }

  private need(bytes: number): void {
    if (this.at + bytes > this.bytes.length) this.incomplete(bytes)
  }

  private incomplete(bytes: number): never {
    this.wanted = this.at + bytes
    throw new Incomplete()
  }
}
