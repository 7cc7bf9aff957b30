/**
 * The README's commands, run as written: each shell block of "Five minutes with curl" against the
 * standalone server with the example provisioning, its output held to the answer the README
 * prints under it (the `# ...` lines); the admin CLI's block through `npx keymeter` (optional
 * `[...]` parts left out); and `npx keymeter-server`. In the repository after `npm ci`, as a
 * newcomer runs them.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { execFile, spawn } from "node:child_process"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import type { Running } from "./Spawn.js"
import { freePort, root, start, stop } from "./Spawn.js"

const README_BASE = "http://127.0.0.1:8787"

interface Step {
  readonly script: string
  readonly expected: string
}

const readme = () => readFileSync(join(root, "README.md"), "utf8")

/** The lines of the admin CLI's shell block. */
const cliLines = () => {
  const section = readme().split(/^### Admin CLI$/m)[1]!.split(/^#+ /m)[0]!
  return /^```sh\n([\s\S]*?)^```$/m.exec(section)![1]!.trim().split("\n")
}

/** The walkthrough's shell blocks but the one that starts the server, with their printed answers. */
const walkthrough = (): Array<Step> => {
  const section = readme().split(/^## Five minutes with curl$/m)[1]!.split(/^## /m)[0]!
  return [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)]
    .map((block) => block[1]!.split("\n"))
    .filter((lines) => !lines.some((line) => line.includes("npm start")))
    .map((lines) => ({
      script: lines.filter((line) => !line.startsWith("#")).join("\n"),
      expected: lines.filter((line) => line.startsWith("#")).map((line) => line.slice(1)).join("\n")
    }))
}

/** Fields that differ on every run: ids, secrets, clock-derived times. */
const VOLATILE = new Set(["time", "reset", "overrideId", "id", "requestId", "keyId", "key", "lastHitAt"])

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

describe("README commands", () => {
  it("the admin CLI's block runs as written through npx keymeter, each line printing JSON", async () => {
    const env = {
      ...process.env,
      KEYMETER_STORAGE: `sqlite:${join(mkdtempSync(join(tmpdir(), "keymeter-readme-")), "k.db")}`
    }
    const lines = cliLines()
    expect(lines.length).toBeGreaterThanOrEqual(6)
    let rootKeyId = ""
    for (const line of lines) {
      expect(line).toMatch(/^npx keymeter /)
      // Optional parts: a placeholder (`[--permission ...]`, `<unix ms>`) left out, a value given kept.
      const command = line.replace(/ \[([^\]]*)\]/g, (_, part: string) => /\.\.\.|</.test(part) ? "" : ` ${part}`)
        .replace("rk_...", rootKeyId)
      const { stdout } = await run("bash", ["-euo", "pipefail", "-c", command], { cwd: root, env })
      const printed = JSON.parse(stdout)
      if (/root-key create/.test(command)) rootKeyId = printed.id
    }
    expect(rootKeyId).toMatch(/^rk_/)
  }, 120_000)

  it("npx keymeter-server starts the server", async () => {
    const port = await freePort()
    const child = spawn("bash", ["-c", "exec npx keymeter-server"], {
      cwd: root,
      env: { ...process.env, PORT: String(port), KEYMETER_STORAGE: "memory" },
      detached: true,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    child.stdout!.on("data", (chunk) => (output += chunk))
    child.stderr!.on("data", (chunk) => (output += chunk))
    try {
      for (let waited = 0; !output.includes("Listening on") && waited < 20_000; waited += 100) {
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      expect(output).toContain(`Listening on http://127.0.0.1:${port}`)
      expect((await fetch(`http://127.0.0.1:${port}/v1/analytics.getVerifications`)).status).toBe(401)
    } finally {
      // npx runs the server as its child: the whole group is stopped.
      process.kill(-child.pid!, "SIGTERM")
    }
  }, 30_000)
})
