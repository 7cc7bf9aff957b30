/**
 * A reader of ClickHouse's `RowBinary` answers: values one after another, no names or types (the
 * caller knows them from its own SELECT), integers little-endian, strings and arrays after their
 * length as an unsigned LEB128. Reading past the end throws: a truncated or misread answer is an
 * error, never a short one.
 */

export class RowBinaryReader {
  private at = 0
  private readonly view: DataView
  constructor(private readonly bytes: Buffer) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  }

  /** Whether every byte has been read. */
  get done(): boolean {
    return this.at === this.bytes.length
  }

  uint32(): number {
    this.need(4)
    const value = this.view.getUint32(this.at, true)
    this.at += 4
    return value
  }

  /** A UInt64 as a number: exact below 2^53, which every count and bucket here is. */
  uint64(): number {
    this.need(8)
    const value = this.uint64At(this.at)
    this.at += 8
    return value
  }

  /**
   * `count` UInt64s as numbers into `into[at ..]` (exact below 2^53, as `uint64`), with one bounds
   * check for all: whether any is not 0.
   */
  uint64sInto(into: Float64Array, at: number, count: number): boolean {
    this.need(8 * count)
    let offset = this.at
    let any = false
    for (let i = 0; i < count; i++, offset += 8) {
      const value = this.uint64At(offset)
      into[at + i] = value
      if (value !== 0) any = true
    }
    this.at = offset
    return any
  }

  /** A length (of a string or an array). */
  length(): number {
    let value = 0
    let shift = 0
    for (;;) {
      this.need(1)
      const byte = this.bytes[this.at++]!
      value += (byte & 0x7f) * 2 ** shift
      if (byte < 0x80) return value
      shift += 7
      if (shift > 49) throw new Error("RowBinary: a length too large")
    }
  }

  string(): string {
    const length = this.length()
    this.need(length)
    const text = this.bytes.toString("utf8", this.at, this.at + length)
    this.at += length
    return text
  }

  strings(): Array<string> {
    const count = this.length()
    const out = new Array<string>(count)
    for (let i = 0; i < count; i++) out[i] = this.string()
    return out
  }

  /** The UInt64 at `offset`, as a number (exact below 2^53). */
  private uint64At(offset: number): number {
    return this.view.getUint32(offset, true) + this.view.getUint32(offset + 4, true) * 4294967296
  }

  private need(bytes: number): void {
    if (this.at + bytes > this.bytes.length) throw new Error("RowBinary: the answer ends before its last value")
  }
}
