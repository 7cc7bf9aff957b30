/**
 * The `limit` best values seen so far, in a bounded heap whose root is the worst of them: what
 * decides whether a group can make a top N (`contenders`, and rows kept by `Rows.keepTop`). A value
 * can when fewer than `limit` were seen or it is at least as good as that root: ties are kept, so
 * that core's tie-break (the default ordering) picks among them.
 */
export class BestValues {
  /** Values times `sign`, so that larger is better. */
  private readonly heap: Float64Array
  private readonly sign: 1 | -1
  private size = 0

  constructor(private readonly limit: number, order: "asc" | "desc") {
    this.heap = new Float64Array(Math.max(1, limit))
    this.sign = order === "desc" ? 1 : -1
  }

  /** Takes a value; whether it can make the first `limit` of those taken so far (ties included). */
  offer(value: number): boolean {
    const heap = this.heap
    const v = this.sign * value
    if (this.size < this.limit) {
      let i = this.size++
      heap[i] = v
      while (i > 0 && heap[(i - 1) >> 1]! > heap[i]!) {
        const parent = (i - 1) >> 1
        ;[heap[i], heap[parent]] = [heap[parent]!, heap[i]!]
        i = parent
      }
      return true
    }
    if (v < heap[0]!) return false
    if (v > heap[0]!) {
      heap[0] = v
      for (let i = 0;;) {
        const l = 2 * i + 1
        const r = l + 1
        let least = i
        if (l < this.size && heap[l]! < heap[least]!) least = l
        if (r < this.size && heap[r]! < heap[least]!) least = r
        if (least === i) break
        ;[heap[i], heap[least]] = [heap[least]!, heap[i]!]
        i = least
      }
    }
    return true
  }

  /** Whether a value taken earlier is still among the first `limit`, or tied with the last of them. */
  admits(value: number): boolean {
    return this.size < this.limit || this.sign * value >= this.heap[0]!
  }
}
