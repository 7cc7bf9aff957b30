/**
 * The latest decisions held in full (`RatelimitStore.decisions`), a ring of columns: a decision's
 * strings are held as codes of its partition's dictionaries (`DecisionColumns`), so the ring keeps
 * no object per decision. Held as objects, each decision outlived the serving thread's scavenges
 * (10,000 of them: ~3 s at 3,000 decisions/s), was promoted, and its death was paid for by a
 * mark-compact of that thread's heap.
 */
import type { RatelimitEvent } from "@keymeter/core/RatelimitEvent"
import { SourceIndex, Sources } from "@keymeter/core/RatelimitEvent"
import type { Partition } from "./DecisionColumns.js"

export class HeldDecisions<Counts> {
  /** Where the next decision goes; the ring holds `size` decisions before it. */
  private next = 0
  private size = 0
  private readonly partition: Array<Partition<Counts> | undefined>
  private readonly identifier: Uint32Array
  private readonly override: Uint32Array
  private readonly passed: Uint8Array
  private readonly source: Uint8Array
  private readonly time: Float64Array
  private readonly limit: Float64Array
  private readonly duration: Float64Array
  private readonly remaining: Float64Array
  private readonly cost: Float64Array
  private readonly latency: Float64Array
  private readonly detail: Array<string | undefined>

  constructor(readonly capacity: number) {
    this.partition = new Array(capacity).fill(undefined)
    this.identifier = new Uint32Array(capacity)
    this.override = new Uint32Array(capacity)
    this.passed = new Uint8Array(capacity)
    this.source = new Uint8Array(capacity)
    this.time = new Float64Array(capacity)
    this.limit = new Float64Array(capacity)
    this.duration = new Float64Array(capacity)
    this.remaining = new Float64Array(capacity)
    this.cost = new Float64Array(capacity)
    this.latency = new Float64Array(capacity)
    this.detail = new Array(capacity).fill(undefined)
  }

  /** Holds `event` of `partition`, its identifier and override by their codes there (0: no override). */
  push(partition: Partition<Counts>, event: RatelimitEvent, identifier: number, override: number): void {
    if (this.capacity === 0) return
    const at = this.next
    this.partition[at] = partition
    this.identifier[at] = identifier
    this.override[at] = override
    this.passed[at] = event.passed ? 1 : 0
    this.source[at] = SourceIndex.get(event.source)!
    this.time[at] = event.time
    this.limit[at] = event.limit
    this.duration[at] = event.duration
    this.remaining[at] = event.remaining
    this.cost[at] = event.cost
    this.latency[at] = event.latency
    this.detail[at] = event.detail
    this.next = (at + 1) % this.capacity
    if (this.size < this.capacity) this.size++
  }

  /** The held decisions of `partition` (of `identifier` only, when given), from the latest arrival back. */
  of(partition: Partition<Counts>, identifier: string | undefined): Array<RatelimitEvent> {
    const found: Array<RatelimitEvent> = []
    for (let n = 1; n <= this.size; n++) {
      const at = (this.next - n + this.capacity) % this.capacity
      if (this.partition[at] !== partition) continue
      const id = partition.identifiers[this.identifier[at]!]!
      if (identifier !== undefined && id !== identifier) continue
      const override = this.override[at]!
      found.push({
        time: this.time[at]!,
        workspaceId: partition.workspaceId,
        namespaceId: partition.namespaceId,
        identifier: id,
        passed: this.passed[at] === 1,
        limit: this.limit[at]!,
        duration: this.duration[at]!,
        remaining: this.remaining[at]!,
        cost: this.cost[at]!,
        overrideId: override === 0 ? undefined : partition.overrides[override]!,
        source: Sources[this.source[at]!]!,
        latency: this.latency[at]!,
        detail: this.detail[at]
      })
    }
    return found
  }
}
