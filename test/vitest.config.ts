import { defineProject, mergeConfig } from "vitest/config"
import shared from "../vitest.shared.js"

// This workspace keeps its suites at its root, not under test/.
export default mergeConfig(shared, defineProject({ test: { name: "test", include: ["*.test.ts"] } }))
