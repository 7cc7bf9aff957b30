/**
 * What the dashboard's browser suites share: Debian's Chromium (downloads are impossible here),
 * whether the suite runs, a page that records its requests and complaints, and the sign-in form.
 */
import { existsSync } from "node:fs"
import { join } from "node:path"
import { type Browser, chromium, type Page } from "playwright-core"
import { root } from "../Spawn.js"

export const CHROMIUM = process.env.KEYMETER_CHROMIUM ?? "/usr/bin/chromium"

/** Why a browser suite is skipped (undefined: it runs). CI always runs it. */
export const skip = (() => {
  if (existsSync(CHROMIUM)) return undefined
  if (process.env.CI) throw new Error(`CI runs the browser suite: no Chromium at ${CHROMIUM} (.ci/run installs it)`)
  console.warn(`Browser suite skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or KEYMETER_CHROMIUM)`)
  return "no chromium"
})()

/** Where the suites leave their screenshots (CI keeps them). */
export const screenshots = join(root, "test/screenshots")

/** Headless Chromium as this machine can run it: no sandbox, no GPU, no calls to the outside. */
export const launch = (): Promise<Browser> =>
  chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-dev-shm-usage",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync"
    ]
  })

/** A fresh page that records what it asks for and what it complains about. */
export const open = async (browser: Browser, width = 1280) => {
  const page = await browser.newPage({ viewport: { width, height: 900 } })
  const requests: Array<string> = []
  const errors: Array<string> = []
  page.on("request", (request) => requests.push(request.url()))
  page.on("pageerror", (error) => errors.push(String(error)))
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text())
  })
  return { page, requests, errors }
}

/** Signs in with a root key through the page's form. */
export const signIn = async (page: Page, key: string) => {
  await page.getByLabel("Root key").fill(key)
  await page.getByRole("button", { name: "Sign in" }).click()
}
