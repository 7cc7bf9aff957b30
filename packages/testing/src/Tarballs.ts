/**
 * keymeter's packages as npm publishes them: built, packed into tarballs, and installed into fresh
 * projects that know nothing of this repository. Used by the install suite and the footprint
 * script.
 */
import { execFile } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { promisify } from "node:util"

/** The publishable packages, by folder under `packages/`. */
export const PUBLISHED = [
  "core",
  "engine",
  "sql",
  "storage-memory",
  "storage-sql",
  "storage-sqlite",
  "storage-clickhouse",
  "storage-postgres",
  "ratelimit-redis",
  "http",
  "dashboard",
  "keymeter"
] as const

/** A publishable package's folder name. */
export type Published = typeof PUBLISHED[number]

/** What a memory-only embedder installs: keymeter and the packages it depends on. */
export const MEMORY: ReadonlyArray<Published> = [
  "keymeter",
  "core",
  "engine",
  "sql",
  "storage-memory",
  "http",
  "dashboard"
]

/**
 * The environment for npm and node children. The npm running a script sets npm_* variables (its
 * prefix, its workspace) that would steer a nested install into the repository.
 */
export const env: NodeJS.ProcessEnv = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name))
)

/**
 * Runs a command to its end and resolves with its stdout. Asynchronous: an install takes a minute,
 * and a blocked event loop would starve whatever else the process does (a test worker's RPC).
 */
export const run = async (command: string, args: ReadonlyArray<string>, cwd: string): Promise<string> => {
  try {
    const { stdout } = await promisify(execFile)(command, args, {
      cwd,
      env,
      encoding: "utf8",
      timeout: 300_000,
      maxBuffer: 64 * 1024 * 1024
    })
    return stdout
  } catch (error) {
    const { stderr, stdout } = error as { stdout?: string; stderr?: string }
    throw new Error(`${command} ${args.join(" ")} failed:\n${stdout}\n${stderr}`)
  }
}

/** The tarball `npm pack` makes of a package, in `folder`. */
export const tarball = (folder: string, pkg: Published): string =>
  join(folder, `${pkg === "keymeter" ? "keymeter" : `keymeter-${pkg}`}-0.1.0.tgz`)

/** Builds every publishable package of the repository at `root` and packs it into `folder`. */
export const packAll = async (root: string, folder: string): Promise<void> => {
  await run(process.execPath, [
    join(root, "node_modules/typescript/bin/tsc"),
    "-b",
    ...PUBLISHED.map((pkg) => `packages/${pkg}/tsconfig.src.json`)
  ], root)
  mkdirSync(folder, { recursive: true })
  for (const pkg of PUBLISHED) await run("npm", ["pack", "--pack-destination", folder], join(root, "packages", pkg))
}

/**
 * A fresh project in `dir` (a plain package.json, ESM) with `packages` installed from the tarballs
 * in `folder` and `extra` from the registry.
 */
export const install = async (
  dir: string,
  folder: string,
  packages: ReadonlyArray<Published>,
  extra: ReadonlyArray<string> = [],
  options: { readonly cache?: string | undefined } = {}
): Promise<string> => {
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }))
  const cache = options.cache !== undefined ? ["--cache", options.cache] : []
  await run("npm", [
    "install",
    "--no-audit",
    "--no-fund",
    ...cache,
    ...packages.map((pkg) => tarball(folder, pkg)),
    ...extra
  ], dir)
  return dir
}
