/**
 * The integer codes that rollup rows hold instead of strings, cached in memory. Codes are handed
 * out here (this process is the only writer) and written in the transaction that first uses them;
 * when that transaction fails, `rollback` forgets them again.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { Identity } from "@keymeter/core/Verification"
import * as Effect from "effect/Effect"
import type { Tables } from "./Tables.js"

/** What is known of one (workspace, api) partition. */
export interface Partition {
  readonly no: number
  readonly workspaceId: string
  readonly apiId: string
  /** Days <= this are in the day tables. */
  compactedThrough: number
  /** First and last hour holding data; -1 when none. */
  minHour: number
  maxHour: number
}

/** Length-prefixed join: no separator can collide. */
const joinKey = (parts: ReadonlyArray<string>): string => {
  let out = ""
  for (const part of parts) out += part.length + ":" + part
  return out
}

/**
 * The dictionaries of one family of tables (see `Tables`); they carry its table names for the
 * modules that count with them.
 */
export class Dictionaries {
  constructor(readonly tables: Tables) {}

  private readonly partitions = new Map<string, Partition>()
  readonly partitionsByNo: Array<Partition | undefined> = []
  private readonly keyCodes = new Map<string, number>()
  readonly keyNames: Array<string> = []
  private readonly identityCodes = new Map<string, number>()
  /** The first identity code of each identity id. */
  private readonly identityById = new Map<string, number>()
  readonly identityList: Array<Identity | undefined> = [undefined]
  private readonly tagsetCodes = new Map<string, number>([["[]", 0]])
  /** Tag sets of one tag by that tag: most events carry one, and no JSON is built for them. */
  private readonly singleTagsets = new Map<string, number>()
  readonly tagsetList: Array<ReadonlyArray<string>> = [[]]
  /** Tag sets holding each tag, for AND filters. */
  private readonly tagsetsOfTag = new Map<string, Array<number>>()

  /** New entries of the open transaction, to write and, on failure, to forget. */
  pending = {
    partitions: [] as Array<Partition>,
    keys: [] as Array<[number, string]>,
    identities: [] as Array<[number, Identity]>,
    tagsets: [] as Array<[number, string]>
  }
  /** Partition bounds as they were before the open transaction moved them. */
  private touched = new Map<Partition, { minHour: number; maxHour: number }>()

  /** The apis (namespaces) of a workspace that hold events, as scans find them. */
  partitionsOf(workspaceId: string): Array<Partition> {
    return this.partitionsByNo.filter((p): p is Partition => p !== undefined && p.workspaceId === workspaceId)
  }

  loadPartition(partition: Partition) {
    this.partitions.set(joinKey([partition.workspaceId, partition.apiId]), partition)
    this.partitionsByNo[partition.no] = partition
  }
  loadKey(no: number, value: string) {
    this.keyCodes.set(value, no)
    this.keyNames[no] = value
  }
  loadIdentity(no: number, identity: Identity) {
    this.identityCodes.set(joinKey([identity.id, identity.externalId]), no)
    this.identityList[no] = identity
    if (!this.identityById.has(identity.id)) this.identityById.set(identity.id, no)
  }
  loadTagset(no: number, json: string) {
    const tags = JSON.parse(json) as Array<string>
    this.tagsetCodes.set(json, no)
    if (tags.length === 1) this.singleTagsets.set(tags[0]!, no)
    this.tagsetList[no] = tags
    for (const tag of tags) {
      let list = this.tagsetsOfTag.get(tag)
      if (list === undefined) this.tagsetsOfTag.set(tag, list = [])
      list.push(no)
    }
  }

  partition(workspaceId: string, apiId: string): Partition | undefined {
    // Batches come from one workspace and mostly one api: the last answer usually holds.
    const last = this.lastPartition
    if (last !== undefined && last.apiId === apiId && last.workspaceId === workspaceId) return last
    const found = this.partitions.get(joinKey([workspaceId, apiId]))
    if (found !== undefined) this.lastPartition = found
    return found
  }
  private lastPartition: Partition | undefined

  /** The partition of (workspace, api), created when new. */
  partitionFor(workspaceId: string, apiId: string): Partition {
    let partition = this.partition(workspaceId, apiId)
    if (partition === undefined) {
      partition = { no: this.partitionsByNo.length, workspaceId, apiId, compactedThrough: -1, minHour: -1, maxHour: -1 }
      this.loadPartition(partition)
      this.pending.partitions.push(partition)
    }
    return partition
  }

  /** Widens a partition's hour bounds, remembering the old ones until commit. */
  seeHour(partition: Partition, hour: number) {
    if (partition.maxHour >= hour && partition.minHour <= hour && partition.minHour >= 0) return
    if (!this.touched.has(partition)) {
      this.touched.set(partition, { minHour: partition.minHour, maxHour: partition.maxHour })
    }
    if (partition.minHour < 0 || hour < partition.minHour) partition.minHour = hour
    if (hour > partition.maxHour) partition.maxHour = hour
  }

  keyCode(value: string): number {
    let code = this.keyCodes.get(value)
    if (code === undefined) {
      code = Math.max(1, this.keyNames.length)
      this.loadKey(code, value)
      this.pending.keys.push([code, value])
    }
    return code
  }

  /** Code of a key already stored, or undefined. */
  knownKey(value: string): number | undefined {
    return this.keyCodes.get(value)
  }

  identityCode(identity: Identity): number {
    // An identity id almost always comes with one external id: check that pair before joining.
    const usual = this.identityById.get(identity.id)
    if (usual !== undefined && this.identityList[usual]!.externalId === identity.externalId) return usual
    const id = joinKey([identity.id, identity.externalId])
    let code = this.identityCodes.get(id)
    if (code === undefined) {
      code = this.identityList.length
      const copy = { id: identity.id, externalId: identity.externalId }
      this.loadIdentity(code, copy)
      this.pending.identities.push([code, copy])
    }
    return code
  }

  tagsetCode(tags: ReadonlyArray<string>): number {
    if (tags.length === 0) return 0
    if (tags.length === 1) {
      const single = this.singleTagsets.get(tags[0]!)
      if (single !== undefined) return single
    }
    const json = JSON.stringify(tags)
    let code = this.tagsetCodes.get(json)
    if (code === undefined) {
      code = this.tagsetList.length
      this.loadTagset(code, json)
      this.pending.tagsets.push([code, json])
    }
    return code
  }

  /** Codes of the identities with this external id. */
  identitiesWithExternalId(externalId: string): Array<number> {
    const out: Array<number> = []
    for (let no = 1; no < this.identityList.length; no++) {
      if (this.identityList[no]?.externalId === externalId) out.push(no)
    }
    return out
  }

  /** Codes of the tag sets holding every one of `tags`. */
  tagsetsWithAll(tags: ReadonlyArray<string>): Array<number> {
    let result: Set<number> | undefined
    for (const tag of tags) {
      const holding = this.tagsetsOfTag.get(tag)
      if (holding === undefined) return []
      result = result === undefined ? new Set(holding) : new Set(holding.filter((t) => result!.has(t)))
    }
    return result === undefined ? [] : [...result].sort((a, b) => a - b)
  }

  /** The open transaction committed: its entries stay. */
  commit() {
    this.pending = { partitions: [], keys: [], identities: [], tagsets: [] }
    this.touched.clear()
  }

  /** The open transaction failed: forget what it added and restore what it moved. */
  rollback() {
    this.lastPartition = undefined
    for (const partition of this.pending.partitions) {
      this.partitions.delete(joinKey([partition.workspaceId, partition.apiId]))
      this.partitionsByNo.length = Math.min(this.partitionsByNo.length, partition.no)
    }
    for (const [no, value] of this.pending.keys) {
      this.keyCodes.delete(value)
      this.keyNames.length = Math.min(this.keyNames.length, no)
    }
    for (const [no, identity] of this.pending.identities) {
      this.identityCodes.delete(joinKey([identity.id, identity.externalId]))
      if (this.identityById.get(identity.id) === no) this.identityById.delete(identity.id)
      this.identityList.length = Math.min(this.identityList.length, no)
    }
    for (const [no, json] of this.pending.tagsets) {
      this.tagsetCodes.delete(json)
      const tags = JSON.parse(json) as Array<string>
      if (tags.length === 1 && this.singleTagsets.get(tags[0]!) === no) this.singleTagsets.delete(tags[0]!)
      this.tagsetList.length = Math.min(this.tagsetList.length, no)
      for (const tag of tags) {
        const list = this.tagsetsOfTag.get(tag)!
        list.splice(list.indexOf(no), 1)
      }
    }
    for (const [partition, bounds] of this.touched) {
      partition.minHour = bounds.minHour
      partition.maxHour = bounds.maxHour
    }
    this.commit()
  }
}

/** The dictionaries of `tables` as stored, with each partition's bounds and compaction mark. */
export const load = (tables: Tables) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const dictionaries = new Dictionaries(tables)
    const bounds = new Map<number, { min: number; max: number }>()
    for (
      const [p, min, max] of yield* sql.unsafe(
        `SELECT p, min(hour), max(hour) FROM ${tables.rollups.hourTotal} GROUP BY p`
      ).values
    ) {
      bounds.set(p as number, { min: min as number, max: max as number })
    }
    for (
      const [no, workspaceId, apiId, compacted] of yield* sql.unsafe(
        `SELECT no, workspace_id, api_id, compacted_through FROM ${tables.partitions}`
      ).values
    ) {
      const b = bounds.get(no as number)
      dictionaries.loadPartition({
        no: no as number,
        workspaceId: workspaceId as string,
        apiId: apiId as string,
        compactedThrough: compacted as number,
        minHour: b?.min ?? -1,
        maxHour: b?.max ?? -1
      })
    }
    for (const [no, value] of yield* sql.unsafe(`SELECT no, value FROM ${tables.keys}`).values) {
      dictionaries.loadKey(no as number, value as string)
    }
    for (
      const [no, id, externalId] of yield* sql.unsafe(`SELECT no, identity_id, external_id FROM ${tables.identities}`)
        .values
    ) {
      dictionaries.loadIdentity(no as number, { id: id as string, externalId: externalId as string })
    }
    for (const [no, tags] of yield* sql.unsafe(`SELECT no, tags FROM ${tables.tagsets} WHERE no > 0`).values) {
      dictionaries.loadTagset(no as number, tags as string)
    }
    return dictionaries
  })
