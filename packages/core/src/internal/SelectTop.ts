/**
 * The first rows of many by a comparison, without sorting the rest: core's top N of an answer.
 */

/** The `limit` best rows by `compare`, best first, without sorting the rest (binary max-heap). */
export const selectTop = (size: number, limit: number, compare: (a: number, b: number) => number): Array<number> => {
  const heap: Array<number> = []
  const siftUp = (i: number) => {
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (compare(heap[i]!, heap[parent]!) <= 0) break
      ;[heap[i], heap[parent]] = [heap[parent]!, heap[i]!]
      i = parent
    }
  }
  const siftDown = (i: number) => {
    for (;;) {
      const l = 2 * i + 1
      const r = l + 1
      let worst = i
      if (l < heap.length && compare(heap[l]!, heap[worst]!) > 0) worst = l
      if (r < heap.length && compare(heap[r]!, heap[worst]!) > 0) worst = r
      if (worst === i) return
      ;[heap[i], heap[worst]] = [heap[worst]!, heap[i]!]
      i = worst
    }
  }
  for (let row = 0; row < size; row++) {
    if (heap.length < limit) {
      heap.push(row)
      siftUp(heap.length - 1)
    } else if (compare(row, heap[0]!) < 0) {
      heap[0] = row
      siftDown(0)
    }
  }
  return heap.sort(compare)
}
