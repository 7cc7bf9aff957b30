#!/usr/bin/env node
// The standalone server (see keymeter.js for why this file is not dist/main.js itself).
import { run } from "./run.js"

await run("main.js")
