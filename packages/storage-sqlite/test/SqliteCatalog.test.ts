// The catalog's writes share commits: concurrent writes go in one transaction, run bare and, should
// one fail, again each in a savepoint, so a failing one is rolled back alone and every other is
// durable when answered.
import { describe, expect, it } from "@effect/vitest"
import { Api } from "@keymeter/core/Api"
import { Catalog } from "@keymeter/core/Storage"
import { Workspace } from "@keymeter/core/Workspace"
import { SqliteStorage } from "@keymeter/storage-sqlite"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const tempFile = () => join(mkdtempSync(join(tmpdir(), "keymeter-sqlite-catalog-")), "k.db")

describe("SqliteCatalog", () => {
  it.live("answers concurrent writes after their commit; a failing one is rolled back alone", () =>
    Effect.gen(function*() {
      const filename = tempFile()
      const exits = yield* Effect.gen(function*() {
        const catalog = yield* Catalog
        yield* catalog.putWorkspace(new Workspace({ id: "ws", name: "ws" }))
        // Every seventh names a workspace that does not exist: its foreign key fails it.
        return yield* Effect.forEach(
          Array.from({ length: 64 }, (_, i) => i),
          (i) =>
            Effect.exit(catalog.putApi(
              new Api({ id: `api_${i}`, workspaceId: i % 7 === 3 ? "ws_missing" : "ws", name: `api ${i}` })
            )),
          { concurrency: "unbounded" }
        )
      }).pipe(Effect.provide(SqliteStorage.layer({ filename })))
      const failed = exits.flatMap((exit, i) => (Exit.isFailure(exit) ? [i] : []))
      expect(failed).toEqual(exits.map((_, i) => i).filter((i) => i % 7 === 3))
      for (const i of failed) expect(JSON.stringify(exits[i])).toContain("StorageError")
      // The file reopened holds every write that was answered with success, and none that failed.
      const apis = yield* Effect.flatMap(Catalog, (catalog) => catalog.listApis("ws")).pipe(
        Effect.provide(SqliteStorage.layer({ filename }))
      )
      expect(apis.map((api) => api.id).sort()).toEqual(
        exits.flatMap((exit, i) => (Exit.isSuccess(exit) ? [`api_${i}`] : [])).sort()
      )
    }))
})
