import { defineProject, mergeConfig } from "vitest/config"
import shared from "../../vitest.shared.js"

// The engine's property tests replay hundreds of random histories against a naive reference: a few
// seconds each alone, past 30 s beside every other package's suite in CI (load average 11 on two
// cores seen), so they get two minutes.
export default mergeConfig(shared, defineProject({ test: { name: "engine", testTimeout: 120_000 } }))
