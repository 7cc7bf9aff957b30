// Rbac over the memory storage: permissions by id or slug and roles by id or name, createRole
// making the permissions it names, and listings by page (keyset cursors, search).
import { describe, expect, it } from "@effect/vitest"
import { Identities } from "@keymeter/core/Identities"
import { Rbac } from "@keymeter/core/Rbac"
import * as Effect from "effect/Effect"
import { admin, setup, Test, WS } from "./KeyFixture.js"

const principal = (...permissions: Array<string>) => ({ workspaceId: WS, rootKeyId: "rk", permissions })

describe("Rbac", () => {
  it.effect("finds and deletes a permission by id or slug, and a role by id or name", () =>
    Effect.gen(function*() {
      yield* setup
      const rbac = yield* Rbac
      const read = yield* rbac.createPermission(admin, { name: "Read documents", slug: "docs.read" })
      expect(yield* rbac.getPermission(admin, { permissionId: read.id })).toEqual(read)
      expect(yield* rbac.getPermission(admin, { permissionId: "docs.read" })).toEqual(read)
      // Only the slug stands for the id: a name is not looked up.
      const byName = yield* Effect.flip(rbac.getPermission(admin, { permissionId: "Read documents" }))
      expect(byName).toMatchObject({
        _tag: "NotFound",
        message: "permissionId: no permission \"Read documents\" in this workspace"
      })

      const role = yield* rbac.createRole(admin, { name: "reader", permissions: ["docs.read"] })
      expect(yield* rbac.getRole(admin, { roleId: role.id })).toEqual(role)
      expect(yield* rbac.getRole(admin, { roleId: "reader" })).toEqual(role)
      expect(yield* Effect.flip(rbac.getRole(admin, { roleId: "writer" }))).toMatchObject({
        _tag: "NotFound",
        message: "roleId: no role \"writer\" in this workspace"
      })

      expect(yield* rbac.deleteRole(admin, { roleId: "reader" })).toEqual({})
      expect((yield* Effect.flip(rbac.getRole(admin, { roleId: role.id })))._tag).toBe("NotFound")
      expect(yield* rbac.deletePermission(admin, { permissionId: "docs.read" })).toEqual({})
      expect((yield* Effect.flip(rbac.getPermission(admin, { permissionId: read.id })))._tag).toBe("NotFound")
      expect((yield* Effect.flip(rbac.deletePermission(admin, { permissionId: "docs.read" })))._tag).toBe("NotFound")
    }).pipe(Effect.provide(Test)))

  it.effect("createRole makes the permissions it names that do not exist, if the caller may", () =>
    Effect.gen(function*() {
      yield* setup
      const rbac = yield* Rbac
      yield* rbac.createPermission(admin, { name: "docs.read" })
      const editor = yield* rbac.createRole(admin, { name: "editor", permissions: ["docs.read", "docs.write"] })
      expect(editor.permissions).toEqual(["docs.read", "docs.write"])
      expect((yield* rbac.getPermission(admin, { permissionId: "docs.write" })).name).toBe("docs.write")

      const roleMaker = principal("rbac.*.create_role", "rbac.*.add_permission_to_role")
      expect(yield* Effect.flip(rbac.createRole(roleMaker, { name: "auditor", permissions: ["audit.read"] })))
        .toMatchObject({ _tag: "InsufficientPermissions", required: ["rbac.*.create_permission"] })
      expect((yield* rbac.createRole(roleMaker, { name: "viewer", permissions: ["docs.read"] })).permissions)
        .toEqual(["docs.read"])

      // A name taken is refused before the permissions it names are made.
      expect((yield* Effect.flip(rbac.createRole(admin, { name: "editor", permissions: ["docs.delete"] })))._tag)
        .toBe("Conflict")
      expect((yield* Effect.flip(rbac.getPermission(admin, { permissionId: "docs.delete" })))._tag).toBe("NotFound")
    }).pipe(Effect.provide(Test)))

  it.effect("pages through permissions by id, with search, and refuses cursors of other listings", () =>
    Effect.gen(function*() {
      yield* setup
      const rbac = yield* Rbac
      for (const name of ["alpha.read", "alpha.write", "beta.read", "beta.write"]) {
        yield* rbac.createPermission(admin, { name })
      }
      yield* rbac.createPermission(admin, { name: "gamma", description: "Like ALPHA, but more" })
      const ids = (yield* rbac.listPermissions(admin)).map((p) => p.id)

      const first = yield* rbac.pagePermissions(admin, { limit: 2 })
      const second = yield* rbac.pagePermissions(admin, { limit: 2, cursor: first.cursor })
      const third = yield* rbac.pagePermissions(admin, { limit: 2, cursor: second.cursor })
      expect([first, second, third].map((page) => page.items.length)).toEqual([2, 2, 1])
      expect([...first.items, ...second.items, ...third.items].map((p) => p.id)).toEqual([...ids].sort())
      expect(third.cursor).toBeUndefined()
      expect((yield* rbac.pagePermissions(admin, {})).items).toHaveLength(5)

      // id, name, slug or description, ignoring case.
      const alpha = yield* rbac.pagePermissions(admin, { search: "Alpha", limit: 2 })
      expect(alpha.items.map((p) => p.name)).toEqual(["alpha.read", "alpha.write"])
      const rest = yield* rbac.pagePermissions(admin, { search: "Alpha", limit: 2, cursor: alpha.cursor })
      expect(rest).toEqual({ items: [expect.objectContaining({ name: "gamma" })] })
      expect((yield* rbac.pagePermissions(admin, { search: ids[2]!.toLowerCase() })).items.map((p) => p.id))
        .toEqual([ids[2]])
      expect(yield* rbac.pagePermissions(admin, { search: "delta" })).toEqual({ items: [] })

      const identities = yield* Identities
      for (const externalId of ["a", "b"]) yield* identities.create(admin, { externalId })
      const identityCursor = (yield* identities.list(admin, { limit: 1 })).cursor
      for (const name of ["reader", "writer"]) yield* rbac.createRole(admin, { name })
      const roleCursor = (yield* rbac.pageRoles(admin, { limit: 1 })).cursor
      expect(identityCursor).toBeDefined()
      expect(roleCursor).toBeDefined()
      const other = { ...admin, workspaceId: "ws_other" }
      for (const cursor of [identityCursor, "garbled", roleCursor]) {
        expect(yield* Effect.flip(rbac.pagePermissions(admin, { cursor }))).toMatchObject({
          _tag: "ValidationError",
          message: "cursor: is not a cursor listPermissions returned"
        })
      }
      expect((yield* Effect.flip(rbac.pagePermissions(other, { cursor: first.cursor })))._tag).toBe("ValidationError")
      expect((yield* Effect.flip(rbac.pagePermissions(admin, { limit: 101 })))._tag).toBe("ValidationError")
      expect((yield* Effect.flip(rbac.pagePermissions(principal("rbac.*.read_role"), {})))._tag)
        .toBe("InsufficientPermissions")
    }).pipe(Effect.provide(Test)))

  it.effect("pages through roles by id, with search", () =>
    Effect.gen(function*() {
      yield* setup
      const rbac = yield* Rbac
      yield* rbac.createRole(admin, { name: "reader" })
      yield* rbac.createRole(admin, { name: "writer", description: "writes what readers read" })
      yield* rbac.createRole(admin, { name: "admin" })
      const ids = (yield* rbac.listRoles(admin)).map((r) => r.id)

      const first = yield* rbac.pageRoles(admin, { limit: 2 })
      const second = yield* rbac.pageRoles(admin, { limit: 2, cursor: first.cursor })
      expect([...first.items, ...second.items].map((r) => r.id)).toEqual([...ids].sort())
      expect(first.cursor).toBeDefined()
      expect(second.cursor).toBeUndefined()
      expect((yield* rbac.pageRoles(admin, { search: "READER" })).items.map((r) => r.name)).toEqual([
        "reader",
        "writer"
      ])
      expect(yield* Effect.flip(rbac.pageRoles(admin, { cursor: "garbled" }))).toMatchObject({
        _tag: "ValidationError",
        message: "cursor: is not a cursor listRoles returned"
      })
      expect((yield* Effect.flip(rbac.pageRoles(principal("rbac.*.read_permission"), {})))._tag)
        .toBe("InsufficientPermissions")
    }).pipe(Effect.provide(Test)))
})
