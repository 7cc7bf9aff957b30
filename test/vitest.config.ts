import { defineProject, mergeConfig } from "vitest/config"
import shared from "../vitest.shared.js"

// This workspace keeps its suites at its root, not under test/.
// Hooks start servers (see Spawn's ready budget), so they may take longer than the shared default.
export default mergeConfig(
  shared,
  defineProject({ test: { name: "test", include: ["*.test.ts"], hookTimeout: 120_000 } })
)
