/**
 * Tenant isolation on /v2: workspace B's admin, naming each of workspace A's keys, apis,
 * identities, permissions, roles, namespaces and overrides through every /v2 route, reads nothing
 * of them and changes nothing: each answer is a not-found (or, for a verification, NOT_FOUND), and
 * A's objects read the same before and after.
 */
import { expect, layer } from "@effect/vitest"
import { MemoryStorage } from "@keymeter/storage-memory"
import * as Effect from "effect/Effect"
import * as TestServer from "./TestServer.js"
import { keys, post } from "./TestServer.js"

layer(TestServer.layer(MemoryStorage.layer), { excludeTestServices: true })("tenant isolation on /v2", (it) => {
  it.effect("another workspace's admin reaches nothing of this one through any /v2 route", () =>
    Effect.gen(function*() {
      const a = (route: string, body: unknown) => post(`/v2/${route}`, body, keys.admin)
      const b = (route: string, body: unknown) => post(`/v2/${route}`, body, keys.otherAdmin)
      const made = (yield* a("keys.createKey", {
        apiId: "api_a1",
        externalId: "customer_a",
        credits: { remaining: 10 },
        ratelimits: [{ name: "calls", limit: 5, duration: 60_000, autoApply: true }]
      })).body.data
      const permission = (yield* a("permissions.createPermission", { name: "a.read", slug: "a.read" })).body.data
      const role = (yield* a("permissions.createRole", { name: "a_role", permissions: ["a.read"] })).body.data
      yield* a("keys.addRoles", { keyId: made.keyId, roles: ["a_role"] })
      yield* a("ratelimit.setOverride", { namespace: "email", identifier: "vip_a", limit: 9, duration: 60_000 })
      const snapshot = Effect.all({
        key: a("keys.getKey", { keyId: made.keyId }),
        identity: a("identities.getIdentity", { identity: "customer_a" }),
        override: a("ratelimit.getOverride", { namespace: "email", identifier: "vip_a" }),
        role: a("permissions.getRole", { role: role.roleId }),
        api: a("apis.getApi", { apiId: "api_a1" })
      }).pipe(
        Effect.map((all) => Object.fromEntries(Object.entries(all).map(([name, reply]) => [name, reply.body.data])))
      )
      const before = yield* snapshot

      const attempts: ReadonlyArray<readonly [string, unknown]> = [
        ["keys.getKey", { keyId: made.keyId }],
        ["keys.whoami", { key: made.key }],
        ["keys.updateKey", { keyId: made.keyId, enabled: false }],
        ["keys.updateCredits", { keyId: made.keyId, operation: "set", value: 0 }],
        ["keys.rerollKey", { keyId: made.keyId, expiration: 0 }],
        ["keys.deleteKey", { keyId: made.keyId }],
        ["keys.addPermissions", { keyId: made.keyId, permissions: ["a.read"] }],
        ["keys.removePermissions", { keyId: made.keyId, permissions: ["a.read"] }],
        ["keys.setPermissions", { keyId: made.keyId, permissions: [] }],
        ["keys.addRoles", { keyId: made.keyId, roles: [role.roleId] }],
        ["keys.removeRoles", { keyId: made.keyId, roles: [role.roleId] }],
        ["keys.setRoles", { keyId: made.keyId, roles: [] }],
        ["apis.getApi", { apiId: "api_a1" }],
        ["apis.listKeys", { apiId: "api_a1" }],
        ["apis.deleteApi", { apiId: "api_a1" }],
        ["keys.createKey", { apiId: "api_a1" }],
        ["keys.migrateKeys", { migrationId: "m", apiId: "api_a1", keys: [{ hash: "a".repeat(64) }] }],
        ["identities.getIdentity", { identity: "customer_a" }],
        ["identities.updateIdentity", { identity: "customer_a", meta: { taken: true } }],
        ["identities.deleteIdentity", { identity: "customer_a" }],
        ["permissions.getPermission", { permission: permission.permissionId }],
        ["permissions.deletePermission", { permission: "a.read" }],
        ["permissions.getRole", { role: role.roleId }],
        ["permissions.deleteRole", { role: "a_role" }],
        ["ratelimit.getOverride", { namespace: "rlns_a1", identifier: "vip_a" }],
        ["ratelimit.deleteOverride", { namespace: "rlns_a1", identifier: "vip_a" }],
        ["ratelimit.listOverrides", { namespace: "rlns_a1" }]
      ]
      for (const [route, body] of attempts) {
        const reply = yield* b(route, body)
        expect(reply.status, `${route} ${JSON.stringify(reply.body)}`).toBe(404)
        expect(reply.body.error.status).toBe(404)
      }
      // A verification of A's key by B: not found, and it counts nothing against A's credits or limits.
      expect((yield* b("keys.verifyKey", { key: made.key })).body.data).toEqual({ valid: false, code: "NOT_FOUND" })
      // Listings of B hold none of A's.
      const lists = yield* Effect.all([
        b("identities.listIdentities", {}),
        b("permissions.listPermissions", {}),
        b("permissions.listRoles", {})
      ])
      for (const list of lists) {
        expect(list.status).toBe(200)
        expect(JSON.stringify(list.body.data)).not.toMatch(/customer_a|a\.read|a_role/)
      }
      // B's limit in a namespace of the same name is B's own window and overrides.
      const limited =
        (yield* b("ratelimit.limit", { namespace: "email", identifier: "vip_a", limit: 1, duration: 60_000 }))
          .body.data
      expect(limited).toMatchObject({ success: true, limit: 1 })
      expect(limited.overrideId).toBeUndefined()

      expect(yield* snapshot).toEqual(before)
      const verified = (yield* a("keys.verifyKey", { key: made.key })).body.data
      expect(verified).toMatchObject({ valid: true, credits: 9, ratelimits: [{ name: "calls", remaining: 4 }] })
    }))
})
