// The server's V8 settings: with them, V8 decides nothing on pretenuring, whatever survives.
import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const serverHeap = fileURLToPath(new URL("../src/internal/ServerHeap.ts", import.meta.url))

/**
 * Runs, in a node of its own, objects of one site kept alive across young collections (what makes
 * V8 pretenure a site), and answers how many decisions V8 took on pretenuring a site.
 */
const pretenuringDecisions = (tuned: boolean): number => {
  const dir = mkdtempSync(join(tmpdir(), "keymeter-heap-"))
  try {
    const script = join(dir, "survivors.ts")
    writeFileSync(
      script,
      `import * as ServerHeap from ${JSON.stringify(serverHeap)}
${tuned ? "ServerHeap.tune()" : ""}
const make = (i: number) => ({ a: i, b: [i] })
const kept: Array<unknown> = []
for (let i = 0; i < 2_000_000; i++) kept.push(make(i))
console.log(kept.length)
`
    )
    const output = execFileSync(process.execPath, ["--trace-pretenuring-statistics", "--import", "tsx", script], {
      encoding: "utf8",
      cwd: fileURLToPath(new URL("..", import.meta.url))
    })
    expect(output).toContain("2000000")
    return output.split("\n").filter((line) => line.includes("pretenuring: AllocationSite")).length
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

describe("ServerHeap", () => {
  it("turns V8's pretenuring off", () => {
    // Without the settings the same run weighs its sites for pretenuring: the check below could fail.
    expect(pretenuringDecisions(false)).toBeGreaterThan(0)
    expect(pretenuringDecisions(true)).toBe(0)
  }, 60_000)
})
