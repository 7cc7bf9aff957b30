// The admin command line: the catalog it names and the command it asks for, or the usage error.
import { describe, expect, it } from "@effect/vitest"
import * as Admin from "@keymeter/core/Admin"
import * as Either from "effect/Either"
import * as AdminCommandLine from "../src/AdminCommandLine.js"

const usage = (argv: ReadonlyArray<string>) => {
  const command = AdminCommandLine.commandOf(argv)
  return Either.isLeft(command) && command.left.usage === true ? command.left.message : undefined
}

describe("AdminCommandLine", () => {
  it("reads each command", () => {
    expect(AdminCommandLine.commandOf(["workspace", "create", "--name", "Acme", "--id", "ws_a"])).toEqual(
      Either.right(Admin.Command.WorkspaceCreate({ name: "Acme", id: "ws_a" }))
    )
    expect(AdminCommandLine.commandOf(["--db", "k.db", "workspace", "list"])).toEqual(
      Either.right(Admin.Command.WorkspaceList())
    )
    expect(
      AdminCommandLine.commandOf([
        "root-key",
        "create",
        "--workspace",
        "ws_a",
        "--permission",
        "api.*.read_api",
        "--permission",
        "*",
        "--expires-at",
        "1700000000000"
      ])
    ).toEqual(Either.right(Admin.Command.RootKeyCreate({
      workspaceId: "ws_a",
      permissions: ["api.*.read_api", "*"],
      name: undefined,
      expiresAt: 1_700_000_000_000
    })))
    expect(AdminCommandLine.commandOf(["root-key", "revoke", "--workspace", "ws_a", "--id", "rk_1"])).toEqual(
      Either.right(Admin.Command.RootKeyRevoke({ workspaceId: "ws_a", id: "rk_1" }))
    )
    expect(AdminCommandLine.commandOf(["api", "create", "--workspace", "ws_a", "--name", "main"])).toEqual(
      Either.right(Admin.Command.ApiCreate({ workspaceId: "ws_a", name: "main", id: undefined }))
    )
  })

  it("answers a usage error for a missing flag, a bad value, an unknown command or option", () => {
    expect(usage(["workspace", "create"])).toBe("--name is required")
    expect(usage(["root-key", "list"])).toBe("--workspace is required")
    expect(usage(["root-key", "create", "--workspace", "w", "--expires-at", "soon"])).toBe(
      "--expires-at must be unix milliseconds"
    )
    expect(usage(["key", "make"])).toBe("Unknown command: key make")
    expect(usage([])).toBe("A command is required")
    expect(usage(["workspace", "list", "--colour", "red"])).toMatch(/colour/)
  })

  it("names the catalog: --db, --storage, KEYMETER_STORAGE, else the default file", () => {
    expect(AdminCommandLine.catalogOf(["--db", "k.db", "workspace", "list"], {})).toEqual({ sqlite: "k.db" })
    expect(AdminCommandLine.catalogOf(["--storage", "postgres://h/db"], {})).toEqual({ postgres: "postgres://h/db" })
    expect(AdminCommandLine.catalogOf(["--storage", "memory"], {})).toHaveProperty("invalid")
    // A malformed setting is shown by its scheme and host at most: it may hold a password.
    expect(AdminCommandLine.catalogOf(["--storage", "mysql://root:hunter2@db/x"], {})).toEqual({
      invalid: "--storage must be sqlite:<path> or a postgres:// URL, got \"mysql://db\""
    })
    expect(AdminCommandLine.catalogOf([], { KEYMETER_STORAGE: "sqlite:x.db" })).toEqual({ sqlite: "x.db" })
    expect(AdminCommandLine.catalogOf([], { KEYMETER_STORAGE: "memory" })).toEqual({
      sqlite: AdminCommandLine.DEFAULT_FILE
    })
  })
})
