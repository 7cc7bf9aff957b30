import { defineConfig } from "vitest/config"

// `npx vitest` at the top runs every workspace as one project each.
export default defineConfig({
  test: {
    projects: ["packages/*", "test"]
  }
})
