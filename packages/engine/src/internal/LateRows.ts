/**
 * A partition's events older than its main run's last hour, in arrival order (columns of the
 * main run's kinds), until they are sorted into a run or merged into the main run.
 */
import type { Layout } from "./Run.js"
import { Run, U32List } from "./Run.js"

/** Rows in arrival order, before sorting. */
export class LateRows {
  readonly hour = new U32List(16)
  readonly key = new U32List(16)
  readonly identity = new U32List(16)
  readonly tagset = new U32List(16)
  readonly outcome = new U32List(16)
  readonly offset = new U32List(16)
  readonly credits = new U32List(16)
  readonly latency = new U32List(16)
  readonly region = new U32List(16)
  minHour = Infinity
  get length(): number {
    return this.hour.length
  }
  push(
    hour: number,
    key: number,
    identity: number,
    tagset: number,
    outcome: number,
    offset: number,
    credits: number,
    latency: number,
    region: number
  ): void {
    if (hour < this.minHour) this.minHour = hour
    this.hour.push(hour)
    this.key.push(key)
    this.identity.push(identity)
    this.tagset.push(tagset)
    this.outcome.push(outcome)
    this.offset.push(offset)
    this.credits.push(credits)
    this.latency.push(latency)
    this.region.push(region)
  }
  get bytes(): number {
    return this.hour.data.byteLength * 9
  }

  /** The rows as a run: hour ascending, arrival order within an hour. */
  sorted(layout: Layout): Run {
    const hours = this.hour.data
    const order = Array.from({ length: this.length }, (_, i) => i).sort((a, b) => hours[a]! - hours[b]! || a - b)
    const run = new Run(layout)
    for (const i of order) {
      run.append(
        hours[i]!,
        this.key.data[i]!,
        this.identity.data[i]!,
        this.tagset.data[i]!,
        this.outcome.data[i]!,
        this.offset.data[i]!,
        this.credits.data[i]!,
        this.latency.data[i]!,
        this.region.data[i]!
      )
    }
    return run
  }
}
