/**
 * Runs a TypeScript entry point as its own process (through tsx), the way a user would, and waits
 * for the line that says it is ready.
 */
import { Ports } from "@keymeter/testing"
import { type ChildProcess, spawn } from "node:child_process"
import { resolve as resolvePath } from "node:path"
import { fileURLToPath } from "node:url"

export const root = fileURLToPath(new URL("..", import.meta.url))

/** tsx's loader by URL, so a process started outside the repository still finds it. */
const tsxLoader = new URL("../node_modules/tsx/dist/loader.mjs", import.meta.url).href

/** A free TCP port on 127.0.0.1. */
export const freePort = Ports.freePort

export interface Running {
  readonly child: ChildProcess
  /** Everything printed so far, stdout and stderr. */
  output(): string
  /** Resolves with the exit code once the process ends. */
  readonly exited: Promise<number | null>
}

/**
 * Node's arguments to run the TypeScript file `entry` (relative to the repository root): tsx's
 * loader, and workspace packages resolved to their sources (the `@keymeter/source` condition).
 */
export const nodeArgs = (entry: string): Array<string> => [
  "--conditions=@keymeter/source",
  "--import",
  tsxLoader,
  resolvePath(root, entry)
]

/** How a process is started and when it is ready. */
export interface StartOptions {
  readonly env?: Record<string, string>
  readonly ready: RegExp
  readonly timeoutMs?: number
  /** Working directory (default: the repository root). */
  readonly cwd?: string
}

/**
 * How long a server may take to say it is ready: tsx compiles it from source at start, which takes
 * a few seconds alone and, in CI beside every other suite, once over 20 s.
 */
const DEFAULT_READY_MS = 90_000

/**
 * Starts `entry` (relative to the repository root) with Node and the tsx loader, and resolves once
 * a line matches `ready`. Not through the tsx CLI: its wrapper process relays SIGTERM and then
 * kills the server before in-flight requests finish.
 */
export const start = (entry: string, options: StartOptions) => startNode(nodeArgs(entry), entry, options)

/** Starts Node with `args` (a built script, say) and resolves once a line matches `ready`. */
export const startNode = (
  args: ReadonlyArray<string>,
  name: string,
  options: StartOptions
) =>
  new Promise<Running & { readonly match: RegExpMatchArray }>((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: options.cwd ?? root,
      env: { ...process.env, ...options.env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)))
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`${name} was not ready in time; output:\n${output}`))
    }, options.timeoutMs ?? DEFAULT_READY_MS)
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const match = output.match(options.ready)
      if (match !== null) {
        clearTimeout(timer)
        child.stdout!.off("data", onData)
        child.stdout!.on("data", (more: Buffer) => (output += more.toString()))
        resolve({ child, output: () => output, exited, match })
      }
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.once("exit", (code) => {
      clearTimeout(timer)
      reject(new Error(`${name} exited with ${code} before it was ready; output:\n${output}`))
    })
  })

/** Sends `signal` and waits for the exit code, killing the process if it hangs. */
export const stop = async (running: Running, signal: NodeJS.Signals = "SIGTERM", timeoutMs = 10_000) => {
  running.child.kill(signal)
  const timer = setTimeout(() => running.child.kill("SIGKILL"), timeoutMs)
  const code = await running.exited
  clearTimeout(timer)
  return code
}

/**
 * The standalone server (`packages/keymeter/src/main.ts`) on a free port with `env` added (memory
 * storage unless `env` says otherwise); resolves once it listens, with its base URL.
 */
export const serveKeymeter = async (env: Record<string, string> = {}) => {
  const port = await freePort()
  const server = await start("packages/keymeter/src/main.ts", {
    env: { PORT: String(port), KEYMETER_STORAGE: "memory", ...env },
    ready: /Listening on (http:\/\/127\.0\.0\.1:\d+)/
  })
  return { server, base: server.match[1]! }
}
