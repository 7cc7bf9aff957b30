#!/usr/bin/env node
// Runs the TypeScript entry through tsx's loader: the workspace ships sources, not builds.
import { register } from "tsx/esm/api"

register()
await import("../src/bin.ts")
