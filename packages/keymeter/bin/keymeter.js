#!/usr/bin/env node
// The admin CLI. A file of its own rather than dist/ itself: npm links bins when it installs,
// before `prepare` builds dist/ in a clone of the repository, and skips a bin whose file is missing.
import { run } from "./run.js"

await run("cli.js")
