/**
 * The verifications of one api: dictionaries that encode ids as small integers, the main run
 * (sorted by hour, appended in order), per-key posting lists over it, and a late run for events
 * older than the main run's last hour.
 */
import { columnOrder } from "@keymeter/core/Aggregation"
import type { Identity, Verification } from "@keymeter/core/Verification"
import { OutcomeIndex } from "@keymeter/core/Verification"
import type { Day } from "./DayIndex.js"
import { DayIndex } from "./DayIndex.js"
import { DictionaryOrder } from "./DictionaryOrder.js"
import * as KeyIndex from "./KeyIndex.js"
import { LateRows } from "./LateRows.js"
import { RecentTagsets } from "./RecentTagsets.js"
import { CHUNK_BITS, CHUNK_MASK, Layout, MAX_NARROW_REGION, MAX_U32, Run, U32List } from "./Run.js"

const HOUR = 3_600_000

/** A number as a Uint32 column holds it: clamped to [0, 2^32 - 1] (NaN: 0), whole. */
export const clampU32 = (value: number): number => value >= 0 ? (value <= MAX_U32 ? Math.floor(value) : MAX_U32) : 0

/** What {@link Partition.identityOfKey} says of a key whose events carried more than one identity (or some none). */
export const MIXED_IDENTITIES = -1

/** Late rows merge into the main run once there are this many, or a quarter of the rows they displace. */
export const DEFAULT_LATE_MERGE = 65_536

/** Unambiguous map key for a list of strings (length-prefixed, so no separator can collide). */
export const joinKey = (parts: ReadonlyArray<string>): string => {
  let out = ""
  for (const part of parts) out += part.length + ":" + part
  return out
}

interface TrieNode {
  code: number
  readonly next: Map<string, TrieNode>
}

export class Partition {
  /** Whether rows keep their details, and how wide region codes are (see `Layout`); shared by the runs. */
  readonly layout: Layout

  /** `layout`: by default, rows keep their details. */
  constructor(private readonly lateMerge = DEFAULT_LATE_MERGE, layout: Layout = new Layout(true)) {
    this.layout = layout
    this.main = new Run(layout)
    this.lateSorted = new Run(layout)
    // Tag set 0, the empty set: no tags.
    this.tagStart.push(0)
    this.tagStart.push(0)
  }

  readonly keyCodes = new Map<string, number>()
  readonly keyIds: Array<string> = []
  /** Identity codes start at 1; 0 means "no identity". */
  readonly identityById = new Map<string, number>()
  readonly identityByPair = new Map<string, number>()
  readonly identities: Array<Identity | undefined> = [undefined]
  /** The id and the external id of each identity code ("" for 0): scans' dictionaries. */
  readonly identityIds: Array<string> = [""]
  readonly externalIds: Array<string> = [""]
  /** The identity codes of each external id: an external-id filter's identities without visiting all. */
  readonly identitiesOfExternalId = new Map<string, Array<number>>()
  /** Region codes start at 1; 0 is "" (no region). */
  readonly regionCodes = new Map<string, number>()
  readonly regionNames: Array<string> = [""]
  /** Tag set codes start at 1; 0 is the empty set. */
  readonly tagsetBySingle = new Map<string, number>()
  readonly tagsets: Array<ReadonlyArray<string>> = [[]]
  readonly tagCodes = new Map<string, number>()
  /** Tag of each tag code. */
  readonly tagNames: Array<string> = []
  /**
   * The identity code every event of each key carried (0: none), or {@link MIXED_IDENTITIES} once
   * two of its events differ: where it is one, a key's counts are its (key, identity) group's.
   */
  private readonly keyIdentity: Array<number> = []
  /** Keys whose {@link keyIdentity} is {@link MIXED_IDENTITIES}. */
  private mixedKeys = 0
  /** Each key's recent tag sets, tried before the dictionary. */
  private readonly recentTagsets = new RecentTagsets()
  /** Tag codes of each tag set, ascending. */
  readonly tagsetTags: Array<Uint32Array> = [new Uint32Array(0)]
  /** The tag sets holding each tag code, ascending: a tag filter's tag sets without visiting all. */
  readonly tagsetsOfTag: Array<U32List> = []
  /**
   * The same tags flat, for the scan loops: tag set `t`'s are `tagList[tagStart[t] .. tagStart[t + 1])`
   * (a composite grouping by tag read them per row; built per query, that cost ~0.2 ms).
   */
  readonly tagStart = new U32List()
  readonly tagList = new U32List()
  /** The default ordering's ranks of each dictionary (see `DictionaryOrder`), made when first asked. */
  readonly keyOrder = new DictionaryOrder(this.keyIds, columnOrder.keyId.compare)
  readonly identityOrder = new DictionaryOrder(this.identities, columnOrder.identity.compare, 1)
  readonly tagOrder = new DictionaryOrder(this.tagNames, columnOrder.tag.compare)
  readonly tagsetOrder = new DictionaryOrder(this.tagsets, columnOrder.tags.compare, 0, columnOrder.tags.keyOf)

  readonly main: Run
  /** Per-day aggregates, computed on demand, for whole days of top-N and per-tag queries. */
  readonly days = new DayIndex()
  /** The newest day written; -1 before the first event. */
  private openDay = -1

  /** Events older than the main run's last hour, in arrival order, until they are sorted or merged. */
  private late = new LateRows()
  private lateSorted: Run | undefined

  get size(): number {
    return this.main.length + this.late.length
  }

  keyCode(keyId: string): number {
    let code = this.keyCodes.get(keyId)
    if (code === undefined) {
      code = this.keyIds.length
      this.keyIds.push(keyId)
      this.keyCodes.set(keyId, code)
    }
    return code
  }

  identityCode(identity: Identity): number {
    const code = this.identityById.get(identity.id)
    if (code !== undefined && this.identities[code]!.externalId === identity.externalId) return code
    // The same identity id seen with another external id: keep the pairs apart.
    const pair = joinKey([identity.id, identity.externalId])
    let paired = this.identityByPair.get(pair)
    if (paired === undefined) {
      paired = this.identities.length
      this.identities.push({ id: identity.id, externalId: identity.externalId })
      this.identityIds.push(identity.id)
      this.externalIds.push(identity.externalId)
      const same = this.identitiesOfExternalId.get(identity.externalId)
      if (same === undefined) this.identitiesOfExternalId.set(identity.externalId, [paired])
      else same.push(paired)
      this.identityByPair.set(pair, paired)
      if (code === undefined) this.identityById.set(identity.id, paired)
    }
    return paired
  }

  regionCode(region: string): number {
    if (region === "") return 0
    let code = this.regionCodes.get(region)
    if (code === undefined) {
      code = this.regionNames.length
      this.regionNames.push(region)
      this.regionCodes.set(region, code)
      if (code === MAX_NARROW_REGION + 1) {
        this.layout.wideRegions = true
        this.main.widenRegions()
        this.lateSorted = undefined
      }
    }
    return code
  }

  /** Tag sets of two or more tags, as a trie of maps: no string is built per event. */
  private readonly tagsetTrie: TrieNode = { code: -1, next: new Map() }

  /** {@link tagsetCode}, bound once for {@link RecentTagsets.codeOf}. */
  private readonly codeTags = (tags: ReadonlyArray<string>): number => this.tagsetCode(tags)

  tagsetCode(tags: ReadonlyArray<string>): number {
    if (tags.length === 0) return 0
    if (tags.length === 1) {
      const code = this.tagsetBySingle.get(tags[0]!)
      return code ?? this.newTagset(tags, (c) => this.tagsetBySingle.set(tags[0]!, c))
    }
    let node = this.tagsetTrie
    for (let i = 0; i < tags.length; i++) {
      let next = node.next.get(tags[i]!)
      if (next === undefined) node.next.set(tags[i]!, next = { code: -1, next: new Map() })
      node = next
    }
    if (node.code >= 0) return node.code
    const leaf = node
    return this.newTagset(tags, (c) => (leaf.code = c))
  }

  private newTagset(tags: ReadonlyArray<string>, remember: (code: number) => void): number {
    const code = this.tagsets.length
    // A copy: the caller owns `tags` and may reuse the array.
    this.tagsets.push(tags.slice())
    const codes = new Uint32Array(tags.length)
    for (let i = 0; i < tags.length; i++) {
      let tag = this.tagCodes.get(tags[i]!)
      if (tag === undefined) {
        tag = this.tagCodes.size
        this.tagCodes.set(tags[i]!, tag)
        this.tagNames.push(tags[i]!)
        this.tagsetsOfTag.push(new U32List())
      }
      codes[i] = tag
      this.tagsetsOfTag[tag]!.push(code)
    }
    this.tagsetTags.push(codes.sort())
    for (let i = 0; i < codes.length; i++) this.tagList.push(codes[i]!)
    this.tagStart.push(this.tagList.length)
    remember(code)
    return code
  }

  add(event: Verification): void {
    const hour = Math.floor(event.time / HOUR)
    let key = this.keyCodes.get(event.keyId)
    if (key === undefined) key = this.keyCode(event.keyId)
    let identity = 0
    if (event.identity !== undefined) {
      // A key usually carries the identity it carried so far: compare before looking up.
      const known = this.keyIdentity[key]
      identity = known !== undefined && known > 0 && this.identityIds[known] === event.identity.id &&
          this.externalIds[known] === event.identity.externalId
        ? known
        : this.identityCode(event.identity)
    }
    const tags = event.tags
    const tagset = tags.length === 0 ? 0 : this.recentTagsets.codeOf(key, tags, this.tagsets, this.codeTags)
    // Nine of ten verifications are valid: compare before looking up.
    const outcome = event.outcome === "valid" ? 0 : OutcomeIndex.get(event.outcome)!
    if (!this.layout.details) return this.addCoded(hour, key, identity, tagset, outcome, 0, 0, 0, 0)
    // Absent (an event made without them) reads as none.
    const spent = event.spentCredits
    const latency = event.latency
    const region = event.region
    this.addCoded(
      hour,
      key,
      identity,
      tagset,
      outcome,
      event.time - hour * HOUR,
      spent === undefined || spent === 0 ? 0 : clampU32(spent),
      latency === undefined || latency === 0 ? 0 : clampU32(Math.round(latency * 1000)),
      region === undefined || region === "" ? 0 : this.regionCode(region)
    )
  }

  /**
   * Adds an event already in this partition's codes (see `keyCode`, `identityCode`, `tagsetCode`,
   * `regionCode`): `offset` is ms in the hour, `credits` and `latency` (µs) Uint32s.
   */
  addCoded(
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
    if (this.keyIdentity[key] !== identity) this.noteIdentity(key, identity)
    const day = Math.floor(hour / 24)
    this.days.touch(day)
    // A day that closes gets its aggregates now, once, rather than in the first query that needs
    // them; not while late rows wait unsorted (sorting them at each close would cost more), and a
    // day rewritten later by late events is recomputed on demand.
    if (day > this.openDay) {
      if (this.openDay >= 0 && this.late.length === 0) {
        this.days.between(this.openDay, this.openDay, (d) => this.computeDay(d))
      }
      this.openDay = day
    }
    if (hour >= this.main.lastHour) {
      this.addMain(hour, key, identity, tagset, outcome, offset, credits, latency, region)
    } else {
      this.late.push(hour, key, identity, tagset, outcome, offset, credits, latency, region)
      this.lateSorted = undefined
    }
  }

  private noteIdentity(key: number, identity: number): void {
    const previous = this.keyIdentity[key]
    if (previous === undefined) {
      this.keyIdentity[key] = identity
    } else if (previous !== MIXED_IDENTITIES) {
      this.keyIdentity[key] = MIXED_IDENTITIES
      this.mixedKeys++
    }
  }

  /**
   * True while every key's events carried one identity (or none): a key then names its (key,
   * identity) group, and a grouping by both counts by key alone (see {@link identityOfKey}).
   */
  get identitiesFollowKeys(): boolean {
    return this.mixedKeys === 0
  }

  /** The identity code all of `key`'s events carried (0: none), or {@link MIXED_IDENTITIES}. */
  identityOfKey(key: number): number {
    return this.keyIdentity[key] ?? 0
  }

  private addMain(
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
    const row = this.main.append(hour, key, identity, tagset, outcome, offset, credits, latency, region)
    if ((row & CHUNK_MASK) === CHUNK_MASK) {
      const chunk = this.main.chunks[row >>> CHUNK_BITS]!
      chunk.keyIndex = KeyIndex.build(chunk, this.keyIds.length)
    }
  }

  /** Aggregates of one day, from its rows in both runs (see `DayIndex.compute`). */
  computeDay(day: number): Day {
    return this.days.compute(this, day)
  }

  /** The late rows as a sorted run (hour ascending, arrival order within an hour). */
  lateRun(): Run {
    return this.lateSorted ??= this.late.sorted(this.layout)
  }

  /** Merges the late rows into the main run when they are many enough to be worth it. */
  maybeMerge(): void {
    if (this.late.length < this.lateMerge) return
    const [displacedFrom] = this.main.rows(this.late.minHour, Number.MAX_SAFE_INTEGER)
    // Merging rewrites every displaced row: wait until the late rows are a quarter of them, so the
    // rewriting costs O(1) per late row over time.
    if (this.late.length < (this.main.length - displacedFrom) >>> 2) return
    this.merge(this.lateRun(), displacedFrom)
  }

  /** Rewrites the main run from `from` on as the merge of its tail and the late run. */
  private merge(late: Run, from: number): void {
    const main = this.main
    const n = main.length - from
    const tail = {
      hour: new Uint32Array(n),
      key: new Uint32Array(n),
      identity: new Uint32Array(n),
      tagset: new Uint32Array(n),
      outcome: new Uint8Array(n),
      offset: new Uint32Array(n),
      credits: new Uint32Array(n),
      latency: new Uint32Array(n),
      region: new Uint32Array(n)
    }
    for (let r = from, t = 0; r < main.length; r++, t++) {
      const chunk = main.chunks[r >>> CHUNK_BITS]!
      const i = r & CHUNK_MASK
      tail.hour[t] = chunk.hour[i]!
      tail.key[t] = chunk.key[i]!
      tail.identity[t] = chunk.identity[i]!
      tail.tagset[t] = chunk.tagset[i]!
      tail.outcome[t] = chunk.outcome[i]!
      tail.offset[t] = chunk.offset[i]!
      tail.credits[t] = chunk.credits[i]!
      tail.latency[t] = chunk.latency[i]!
      tail.region[t] = chunk.region[i]!
    }
    main.truncate(from)
    let t = 0
    let l = 0
    while (t < n || l < late.length) {
      const lateChunk = l < late.length ? late.chunks[l >>> CHUNK_BITS]! : undefined
      const lateHour = lateChunk === undefined ? Infinity : lateChunk.hour[l & CHUNK_MASK]!
      if (t < n && tail.hour[t]! <= lateHour) {
        this.addMain(
          tail.hour[t]!,
          tail.key[t]!,
          tail.identity[t]!,
          tail.tagset[t]!,
          tail.outcome[t]!,
          tail.offset[t]!,
          tail.credits[t]!,
          tail.latency[t]!,
          tail.region[t]!
        )
        t++
      } else {
        const i = l & CHUNK_MASK
        this.addMain(
          lateHour,
          lateChunk!.key[i]!,
          lateChunk!.identity[i]!,
          lateChunk!.tagset[i]!,
          lateChunk!.outcome[i]!,
          lateChunk!.offset[i]!,
          lateChunk!.credits[i]!,
          lateChunk!.latency[i]!,
          lateChunk!.region[i]!
        )
        l++
      }
    }
    this.late = new LateRows()
    this.lateSorted = new Run(this.layout)
  }

  /** Bytes held by columns, hour and key indexes, and cached day aggregates (dictionaries not counted). */
  get bytes(): number {
    let keyIndexes = 0
    for (const chunk of this.main.chunks) {
      const index = chunk.keyIndex
      if (index !== undefined) keyIndexes += index.entries.byteLength + index.keys.byteLength + index.starts.byteLength
    }
    return this.main.bytes + (this.lateSorted?.bytes ?? 0) + this.late.bytes + keyIndexes + this.days.bytes
  }
}
