import { defineConfig } from "vitest/config"

// Shared by every workspace's vitest.config.ts; turbo runs each workspace's suite on its own.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    setupFiles: [new URL("./vitest.setup.ts", import.meta.url).pathname],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Suites share sockets and temp files; a fork per file keeps native handles isolated.
    pool: "forks"
  }
})
