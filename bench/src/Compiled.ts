/**
 * The processes the bench starts run keymeter compiled, as an installed `keymeter` runs and as an
 * application embedding it imports it: the packages' `dist/`, brought up to date once per bench.
 * Through tsx, every closure keymeter creates is also named by a helper call (esbuild's
 * `keepNames`): a third of a small SQL query's time, none of it a user's. The bench's own files
 * still run through tsx.
 */
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../..", import.meta.url))
const tsxLoader = new URL("../../node_modules/tsx/dist/loader.mjs", import.meta.url).href

let built = false

/** Builds every package the bench's processes import (`tsc -b`, a second or two when up to date). */
export const build = (): void => {
  if (built) return
  const tsc = spawnSync(process.execPath, [
    `${root}node_modules/typescript/bin/tsc`,
    "-b",
    `${root}packages/keymeter/tsconfig.src.json`
  ], { stdio: "inherit" })
  if (tsc.status !== 0) throw new Error("could not build packages/keymeter")
  built = true
}

/** Node's arguments for a bench script (a file of this folder) over compiled keymeter. */
export const script = (file: string, args: ReadonlyArray<string>): Array<string> => {
  build()
  return ["--import", tsxLoader, fileURLToPath(new URL(`./${file}`, import.meta.url)), ...args]
}

/** The standalone server's entry, compiled. */
export const serverMain = (): string => {
  build()
  return `${root}packages/keymeter/dist/main.js`
}
