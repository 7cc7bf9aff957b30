/* global console */
// Builds the dashboard's browser assets into dist/assets: the page's script (Preact and uPlot
// bundled in, minified), uPlot's stylesheet and the page's own, each named by the hash of its
// content (so they can be cached for a year), and a manifest the server reads. Prints the size.
import { build } from "esbuild"
import { createHash } from "node:crypto"
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { gzipSync } from "node:zlib"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const out = join(root, "dist/assets")
const require = createRequire(import.meta.url)

const bundled = await build({
  entryPoints: [join(root, "src/app/main.tsx")],
  bundle: true,
  minify: true,
  format: "iife",
  target: "es2020",
  jsx: "automatic",
  jsxImportSource: "preact",
  // Dependency-free modules of @keymeter/core (permissions, override bounds) from their source.
  conditions: ["@keymeter/source"],
  write: false,
  legalComments: "none"
})
const files = {
  "app.js": bundled.outputFiles[0].contents,
  "uplot.css": readFileSync(require.resolve("uplot/dist/uPlot.min.css")),
  "app.css": readFileSync(join(root, "src/app/app.css"))
}
rmSync(out, { recursive: true, force: true })
mkdirSync(out, { recursive: true })
const manifest = {}
let gzipped = 0
for (const [name, body] of Object.entries(files)) {
  const hash = createHash("sha256").update(body).digest("hex").slice(0, 12)
  const [base, ext] = name.split(".")
  const hashed = `${base}-${hash}.${ext}`
  writeFileSync(join(out, hashed), body)
  manifest[name] = hashed
  gzipped += gzipSync(body, { level: 9 }).length
}
writeFileSync(join(out, "manifest.json"), JSON.stringify(manifest, null, 2) + "\n")
console.log(
  `dashboard assets: ${(gzipped / 1024).toFixed(1)} KiB gzipped in all (${Object.values(manifest).join(", ")})`
)
