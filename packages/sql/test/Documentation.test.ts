import { describe, expect, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { AGGREGATES } from "../src/internal/Aggregates.js"
import { SCALARS, SPECIAL } from "../src/internal/Functions.js"
import { TABLES } from "../src/Tables.js"

/** The README's "SQL analytics" section: what users are told is supported. */
const section = (() => {
  const readme = readFileSync(join(__dirname, "../../../README.md"), "utf8")
  // Fenced blocks out: their backticks would pair with the inline ones.
  return readme.split(/^### SQL analytics$/m)[1]!.split(/^### /m)[0]!.replace(/^```[\s\S]*?^```$/gm, "")
})()

/** Every `name` written as code in the section, lowercased. */
const codeWords = new Set(
  [...section.matchAll(/`([^`]+)`/g)].flatMap(([, code]) =>
    [...code!.matchAll(/[A-Za-z_][A-Za-z0-9_]*/g)].map(([word]) => word.toLowerCase())
  )
)

describe("the README's SQL analytics section", () => {
  it("lists exactly the functions the executor knows", () => {
    const known = [...SCALARS.keys(), ...SPECIAL, ...AGGREGATES.keys()]
    for (const name of known) expect(codeWords.has(name), name).toBe(true)
    // And lists no function the executor lacks: every `name` of the Aggregates and Functions lists.
    const lists = section.split("- Aggregates:")[1]!.split("- Semantics")[0]!
    const written = new Set([...lists.matchAll(/`([A-Za-z][A-Za-z0-9]*)/g)].map(([, name]) => name!.toLowerCase()))
    for (const name of written) expect(known.includes(name), name).toBe(true)
  })

  it("names every public table and column", () => {
    for (const table of TABLES.values()) {
      const short = table.name.replace(/^(key_verifications|ratelimits)/, "")
      expect(codeWords.has(table.name) || codeWords.has(short), table.name).toBe(true)
      for (const column of table.columns) expect(codeWords.has(column.name), `${table.name}.${column.name}`).toBe(true)
    }
  })
})
