import { defineConfig } from "vitest/config"

// Vite's own server conditions, after ours (setting conditions replaces its defaults).
const conditions = ["@keymeter/source", "module", "node", "development|production"]

// Shared by every workspace's vitest.config.ts; turbo runs each workspace's suite on its own.
export default defineConfig({
  // Workspace packages resolve to their TypeScript sources (the `@keymeter/source` export
  // condition), so tests need no build.
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    include: ["test/**/*.test.ts"],
    setupFiles: [new URL("./vitest.setup.ts", import.meta.url).pathname],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Suites share sockets and temp files; a fork per file keeps native handles isolated.
    pool: "forks"
  }
})
