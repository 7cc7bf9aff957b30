/**
 * What installing keymeter costs a user: packages, MiB on disk and seconds, for a memory-only
 * embedder and for a SQLite consumer, each installed from the packed tarballs into a fresh project
 * with an empty npm cache (everything else comes from the registry, as for a new user).
 *
 *   npm run footprint --workspace=@keymeter/bench
 */
import * as Tarballs from "@keymeter/testing/Tarballs"
import { execFileSync } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../..", import.meta.url))
const work = mkdtempSync(join(tmpdir(), "keymeter-footprint-"))
const folder = join(work, "tarballs")

/** Installed packages: folders under node_modules (scoped ones counted one by one). */
const countPackages = (dir: string): number => {
  let count = 0
  const walk = (modules: string) => {
    if (!existsSync(modules)) return
    for (const entry of readdirSync(modules)) {
      if (entry.startsWith(".")) continue
      if (entry.startsWith("@")) {
        for (const scoped of readdirSync(join(modules, entry))) {
          count++
          walk(join(modules, entry, scoped, "node_modules"))
        }
      } else {
        count++
        walk(join(modules, entry, "node_modules"))
      }
    }
  }
  walk(join(dir, "node_modules"))
  return count
}

const mib = (dir: string) =>
  Number(execFileSync("du", ["-sk", join(dir, "node_modules")]).toString().split("\t")[0]) / 1024

try {
  await Tarballs.packAll(root, folder)
  const consumers: ReadonlyArray<[string, ReadonlyArray<Tarballs.Published>]> = [
    ["memory only (keymeter)", Tarballs.MEMORY],
    ["SQLite (keymeter @keymeter/storage-sqlite)", [...Tarballs.MEMORY, "storage-sql", "storage-sqlite"]]
  ]
  const rows: Array<string> = ["| consumer | packages | MiB on disk | seconds |", "|---|---:|---:|---:|"]
  for (const [name, packages] of consumers) {
    const dir = join(work, name.split(" ")[0]!)
    const started = performance.now()
    await Tarballs.install(dir, folder, packages, [], { cache: join(work, `cache-${name.split(" ")[0]}`) })
    const seconds = (performance.now() - started) / 1000
    rows.push(`| ${name} | ${countPackages(dir)} | ${mib(dir).toFixed(1)} | ${seconds.toFixed(1)} |`)
  }
  console.log(rows.join("\n"))
} finally {
  rmSync(work, { recursive: true, force: true })
}
