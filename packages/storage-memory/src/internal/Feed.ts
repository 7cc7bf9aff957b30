/**
 * The batches a memory store appends, as its SQL replica receives them: columns of numbers with the
 * strings of a message listed once (a structured clone of the events costs the serving thread ~1.4
 * µs an event; this, ~0.4). Batches keep their bounds, so the replica's engines see the appends the
 * store's saw, one for one.
 */
import type { RatelimitEvent } from "@keymeter/core/RatelimitEvent"
import { Sources } from "@keymeter/core/RatelimitEvent"
import type { Outcome, Verification } from "@keymeter/core/Verification"
import { OutcomeIndex, Outcomes } from "@keymeter/core/Verification"

/** One message of appended batches of one kind. */
export interface Feed {
  readonly feed: "verifications" | "ratelimits"
  /** Events of each batch, in order. */
  readonly batches: ReadonlyArray<number>
  readonly strings: ReadonlyArray<string>
  /** Each event's fields that are codes: string positions, enum positions, counts. */
  readonly codes: ReadonlyArray<number>
  /** Each event's fields that are numbers. */
  readonly numbers: ReadonlyArray<number>
}

/** Fields per event in `codes` and `numbers`, by kind. */
const V_CODES = 8
const V_NUMBERS = 3
const R_CODES = 8
const R_NUMBERS = 6

const SOURCE_INDEX = new Map<string, number>(Sources.map((source, index) => [source, index]))

/** Accumulates the batches of one kind until {@link Encoder.take}. */
class Encoder {
  private batches: Array<number> = []
  private strings: Array<string> = []
  private stringCodes = new Map<string, number>()
  private codes: Array<number> = []
  private numbers: Array<number> = []
  constructor(readonly kind: Feed["feed"]) {}

  get empty(): boolean {
    return this.batches.length === 0
  }

  string(value: string): number {
    let code = this.stringCodes.get(value)
    if (code === undefined) {
      code = this.strings.length
      this.strings.push(value)
      this.stringCodes.set(value, code)
    }
    return code
  }

  verifications(events: ReadonlyArray<Verification>): void {
    const codes = this.codes
    const numbers = this.numbers
    for (const event of events) {
      const identity = event.identity
      codes.push(
        this.string(event.workspaceId),
        this.string(event.apiId),
        this.string(event.keyId),
        identity === undefined ? 0 : this.string(identity.id) + 1,
        identity === undefined ? 0 : this.string(identity.externalId),
        OutcomeIndex.get(event.outcome)!,
        this.string(event.region ?? ""),
        event.tags.length
      )
      for (const tag of event.tags) codes.push(this.string(tag))
      numbers.push(event.time, event.spentCredits ?? 0, event.latency ?? 0)
    }
    this.batches.push(events.length)
  }

  ratelimits(events: ReadonlyArray<RatelimitEvent>): void {
    const codes = this.codes
    const numbers = this.numbers
    for (const event of events) {
      codes.push(
        this.string(event.workspaceId),
        this.string(event.namespaceId),
        this.string(event.identifier),
        event.passed ? 1 : 0,
        event.overrideId === undefined ? 0 : this.string(event.overrideId) + 1,
        SOURCE_INDEX.get(event.source)!,
        event.detail === undefined ? 0 : this.string(event.detail) + 1,
        0
      )
      numbers.push(event.time, event.limit, event.duration, event.remaining, event.cost, event.latency)
    }
    this.batches.push(events.length)
  }

  take(): Feed {
    const feed: Feed = {
      feed: this.kind,
      batches: this.batches,
      strings: this.strings,
      codes: this.codes,
      numbers: this.numbers
    }
    this.batches = []
    this.strings = []
    this.stringCodes = new Map()
    this.codes = []
    this.numbers = []
    return feed
  }
}

/**
 * The serving side: appends are encoded as they happen and posted together at the end of the turn,
 * or at once before a query (which must see them).
 */
export class Sender {
  private readonly verifications = new Encoder("verifications")
  private readonly ratelimits = new Encoder("ratelimits")
  private scheduled = false
  /** The replica is gone (`post` answered false): nothing more is encoded. */
  private gone = false
  /** `post` answers whether the message reached a replica. */
  constructor(private readonly post: (feed: Feed) => boolean) {}

  appendVerifications(events: ReadonlyArray<Verification>): void {
    if (events.length === 0 || this.gone) return
    this.verifications.verifications(events)
    this.schedule()
  }

  appendRatelimits(events: ReadonlyArray<RatelimitEvent>): void {
    if (events.length === 0 || this.gone) return
    this.ratelimits.ratelimits(events)
    this.schedule()
  }

  /** Posts what is pending. */
  flush(): void {
    if (!this.verifications.empty && !this.post(this.verifications.take())) this.gone = true
    if (!this.ratelimits.empty && !this.post(this.ratelimits.take())) this.gone = true
  }

  private schedule(): void {
    if (this.scheduled) return
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      this.flush()
    })
  }
}

/** The batches of a verification feed, as they were appended. */
export const verificationBatches = (feed: Feed): Array<Array<Verification>> => {
  const { codes, numbers, strings } = feed
  const out: Array<Array<Verification>> = []
  let c = 0
  let n = 0
  for (const size of feed.batches) {
    const batch: Array<Verification> = new Array(size)
    for (let i = 0; i < size; i++) {
      const identity = codes[c + 3]!
      const tagCount = codes[c + 7]!
      const tags: Array<string> = new Array(tagCount)
      for (let t = 0; t < tagCount; t++) tags[t] = strings[codes[c + V_CODES + t]!]!
      batch[i] = {
        time: numbers[n]!,
        workspaceId: strings[codes[c]!]!,
        apiId: strings[codes[c + 1]!]!,
        keyId: strings[codes[c + 2]!]!,
        identity: identity === 0 ? undefined : { id: strings[identity - 1]!, externalId: strings[codes[c + 4]!]! },
        outcome: Outcomes[codes[c + 5]!] as Outcome,
        tags,
        spentCredits: numbers[n + 1]!,
        latency: numbers[n + 2]!,
        region: strings[codes[c + 6]!]!
      }
      c += V_CODES + tagCount
      n += V_NUMBERS
    }
    out.push(batch)
  }
  return out
}

/** The batches of a rate-limit feed, as they were appended. */
export const ratelimitBatches = (feed: Feed): Array<Array<RatelimitEvent>> => {
  const { codes, numbers, strings } = feed
  const out: Array<Array<RatelimitEvent>> = []
  let c = 0
  let n = 0
  for (const size of feed.batches) {
    const batch: Array<RatelimitEvent> = new Array(size)
    for (let i = 0; i < size; i++) {
      const override = codes[c + 4]!
      const detail = codes[c + 6]!
      batch[i] = {
        time: numbers[n]!,
        workspaceId: strings[codes[c]!]!,
        namespaceId: strings[codes[c + 1]!]!,
        identifier: strings[codes[c + 2]!]!,
        passed: codes[c + 3] === 1,
        limit: numbers[n + 1]!,
        duration: numbers[n + 2]!,
        remaining: numbers[n + 3]!,
        cost: numbers[n + 4]!,
        overrideId: override === 0 ? undefined : strings[override - 1]!,
        source: Sources[codes[c + 5]!]!,
        latency: numbers[n + 5]!,
        detail: detail === 0 ? undefined : strings[detail - 1]!
      }
      c += R_CODES
      n += R_NUMBERS
    }
    out.push(batch)
  }
  return out
}
