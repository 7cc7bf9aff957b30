/**
 * The README's curl walkthrough, run as written: each shell block of "Five minutes with curl"
 * against the standalone server with the example provisioning, its output held to the answer
 * the README prints under it (the `# ...` lines).
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { promisify } from "node:util"
import type { Running } from "./Spawn.js"
import { freePort, root, start, stop } from "./Spawn.js"

const README_BASE = "http://127.0.0.1:8787"

interface Step {
  readonly script: string
  readonly expected: string
}

/** The walkthrough's shell blocks but the one that starts the server, with their printed answers. */
const walkthrough = (): Array<Step> => {
  const readme = readFileSync(join(root, "README.md"), "utf8")
  const section = readme.split(/^## Five minutes with curl$/m)[1]!.split(/^## /m)[0]!
  return [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)]
    .map((block) => block[1]!.split("\n"))
    .filter((lines) => !lines.some((line) => line.includes("npm start")))
    .map((lines) => ({
      script: lines.filter((line) => !line.startsWith("#")).join("\n"),
      expected: lines.filter((line) => line.startsWith("#")).map((line) => line.slice(1)).join("\n")
    }))
}

/** Fields that differ on every run: ids, secrets, clock-derived times. */
const VOLATILE = new Set(["time", "reset", "overrideId", "id", "requestId", "keyId", "key"])

/**
 * The `"field":value` pairs the README shows, in order (its `...` elides the rest). Every one
 * must appear in the output, in that order; of a volatile field, its name and the prefix of an id
 * (`"overrideId":"rlor_`).
 */
const shownFields = (expected: string) =>
  [...expected.matchAll(/"(\w+)":("(?:[^"\\]|\\.)*"|-?\d+|true|false|null)/g)].map(([pair, field, value]) =>
    VOLATILE.has(field!) ? `"${field}":${value!.match(/^"[a-z]+_/)?.[0] ?? ""}` : pair
  )

const holdsInOrder = (output: string, fields: ReadonlyArray<string>) => {
  let from = 0
  for (const field of fields) {
    // A number must end where the README's does: `"limit":2` is not `"limit":20`.
    let at = output.indexOf(field, from)
    while (at >= 0 && /\d$/.test(field) && /\d/.test(output[at + field.length] ?? "")) {
      at = output.indexOf(field, at + 1)
    }
    if (at < 0) return `${field} not found after position ${from}`
    from = at + field.length
  }
  return "ok"
}

const run = promisify(execFile)
let server: Running & { readonly match: RegExpMatchArray }

beforeAll(async () => {
  const port = await freePort()
  server = await start("packages/keymeter/src/main.ts", {
    env: { PORT: String(port), KEYMETER_STORAGE: "memory", KEYMETER_PROVISION: "examples/provision.json" },
    ready: /Listening on (http:\/\/127\.0\.0\.1:\d+)/
  })
})
afterAll(async () => {
  await stop(server)
})

describe("README walkthrough", () => {
  it("every curl block answers what the README shows, in order", async () => {
    const steps = walkthrough()
    expect(steps.length).toBeGreaterThanOrEqual(6)
    for (const step of steps) {
      const script = step.script.replaceAll(README_BASE, server.match[1]!)
      const { stdout } = await run("bash", ["-euo", "pipefail", "-c", script], { cwd: root })
      const fields = shownFields(step.expected)
      expect(fields.length, `the README shows an answer for:\n${step.script}`).toBeGreaterThan(0)
      expect(holdsInOrder(stdout, fields), `${step.script}\nprinted:\n${stdout}`).toBe("ok")
    }
  })
})
