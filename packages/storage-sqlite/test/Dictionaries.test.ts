/**
 * The writer's dictionaries: codes handed out in a transaction are forgotten when it fails, the
 * shortcuts (single-tag sets, an identity id's usual external id, the last partition) included.
 */
import { describe, expect, it } from "@effect/vitest"
import { Dictionaries } from "../src/internal/Dictionaries.js"
import * as Tables from "../src/internal/Tables.js"

describe("Dictionaries", () => {
  it("forgets the codes of a failed transaction, shortcuts included, and hands them out again", () => {
    const d = new Dictionaries(Tables.verifications)
    const kept = d.tagsetCode(["kept"])
    const keptIdentity = d.identityCode({ id: "id_1", externalId: "ext_1" })
    const keptPartition = d.partitionFor("ws", "api_1")
    d.commit()

    const single = d.tagsetCode(["gone"])
    const pair = d.tagsetCode(["a", "b"])
    const identity = d.identityCode({ id: "id_2", externalId: "ext_2" })
    const sameIdOtherExternal = d.identityCode({ id: "id_1", externalId: "ext_other" })
    const partition = d.partitionFor("ws", "api_2")
    expect(d.tagsetCode(["gone"])).toBe(single)
    expect(d.identityCode({ id: "id_2", externalId: "ext_2" })).toBe(identity)
    d.rollback()

    expect(d.partition("ws", "api_2")).toBeUndefined()
    expect(d.partition("ws", "api_1")).toBe(keptPartition)
    expect(d.tagsetCode(["kept"])).toBe(kept)
    expect(d.identityCode({ id: "id_1", externalId: "ext_1" })).toBe(keptIdentity)
    // The codes are free again, for other values: nothing maps to the forgotten ones.
    expect(d.tagsetCode(["other"])).toBe(single)
    expect(d.tagsetCode(["gone"])).toBe(pair)
    expect(d.identityCode({ id: "id_3", externalId: "ext_3" })).toBe(identity)
    expect(d.identityCode({ id: "id_2", externalId: "ext_2" })).toBe(sameIdOtherExternal)
    expect(d.partitionFor("ws", "api_3").no).toBe(partition.no)
    expect(d.pending.tagsets.map(([, json]) => json)).toEqual(["[\"other\"]", "[\"gone\"]"])
  })

  it("keeps two external ids of one identity id apart", () => {
    const d = new Dictionaries(Tables.verifications)
    const first = d.identityCode({ id: "id_1", externalId: "ext_1" })
    const second = d.identityCode({ id: "id_1", externalId: "ext_2" })
    expect(second).not.toBe(first)
    expect(d.identityCode({ id: "id_1", externalId: "ext_1" })).toBe(first)
    expect(d.identityCode({ id: "id_1", externalId: "ext_2" })).toBe(second)
  })
})
