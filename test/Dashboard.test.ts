/**
 * The dashboard in a real browser: Debian's Chromium driven by playwright-core, against a keymeter
 * serving seeded data. Numbers are checked against the API's own answers, not pixels; every
 * request the page makes stays on its origin, and it logs no error. Screenshots go to
 * `test/screenshots/` (a CI artifact).
 */
import { createKeymeter, type Keymeter } from "keymeter"
import { mkdirSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { join } from "node:path"
import { type Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launch, open as openPage, screenshots, signIn, skip } from "./internal/Browser.js"

const HOUR = 3_600_000
const NAMESPACE = "api.requests"
/** A namespace with an override and no decision. */
const QUIET = "quiet"
/** A row of getRatelimits' answer. */
interface Decisions {
  readonly time?: number
  readonly identifier?: string
  readonly total: number
  readonly passed: number
  readonly blocked: number
}
/** A time as the page shows it. */
const utcText = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace("T", " ") + " UTC"
/** The seeded namespace's second page of overrides, in creation order. */
const LAST_PAGE = ["seed_20", "seed_21", "seed_22", "seed_23", "seed_24", "seed_*"]

describe.skipIf(skip !== undefined)("dashboard in Chromium", () => {
  let keymeter: Keymeter
  let server: Server
  let base: string
  let browser: Browser
  let apiId: string
  let admin: string
  let reader: string
  let readOnly: string

  beforeAll(async () => {
    keymeter = await createKeymeter()
    apiId = (await keymeter.createApi({ name: "main" })).apiId
    admin = (await keymeter.createRootKey({ permissions: ["*"] })).key
    reader = (await keymeter.createRootKey({ permissions: ["api.nope.read_api"] })).key
    const now = Date.now()
    const outcomes = ["valid", "valid", "valid", "rateLimited", "usageExceeded", "notFound"] as const
    await keymeter.record(Array.from({ length: 600 }, (_, i) => ({
      apiId,
      keyId: `key_${i % 7}`,
      outcome: outcomes[i % outcomes.length]!,
      time: now - (i % 20) * HOUR,
      tags: [i % 2 === 0 ? "plan:pro" : "plan:free"],
      ...(i % 3 === 0 ? { identity: { id: `id_${i % 4}`, externalId: `customer_${i % 4}` } } : {})
    })))
    // Overrides for the rate-limits section: 25 exact ones and a pattern, more than a page of 20.
    for (let i = 0; i < 25; i++) {
      await keymeter.setOverride({ namespaceName: NAMESPACE, identifier: `seed_${i}`, limit: 10 + i, duration: 60_000 })
    }
    await keymeter.setOverride({ namespaceName: NAMESPACE, identifier: "seed_*", limit: 3, duration: 1000 })
    // Limit decisions: identifiers blocked past the limit asked (one holding a comma), one decided
    // by its own override (seed_3: 13 a minute), one by the pattern (seed_*: 3 a second).
    const decide = async (identifier: string, limit: number, times: number) => {
      for (let i = 0; i < times; i++) {
        await keymeter.limit({ namespace: NAMESPACE, identifier, limit, duration: 60_000 })
      }
    }
    await decide("user_1", 2, 6)
    await decide("user,2", 1, 4)
    await decide("user_3", 3, 4)
    await decide("user_4", 10, 5)
    await decide("seed_3", 1, 15)
    await decide("seed_zz", 1, 5)
    await keymeter.setOverride({ namespaceName: QUIET, identifier: "nobody", limit: 1, duration: 60_000 })
    readOnly = (await keymeter.createRootKey({
      permissions: ["api.*.read_api", "api.*.read_key", "ratelimit.*.read_override"]
    })).key
    const handler = keymeter.handler()
    server = createServer((req, res) => handler(req, res))
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const address = server.address()
    base = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`
    browser = await launch()
    mkdirSync(screenshots, { recursive: true })
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await new Promise((resolve) => server?.close(resolve))
    await keymeter?.close()
  })

  const open = (width = 1280) => openPage(browser, width)

  /** A GET of the HTTP API with the admin key, as the page asks it. */
  const api = async <A>(route: string, query: Record<string, string> = {}): Promise<A> => {
    const reply = await fetch(`${base}/v1/${route}?${new URLSearchParams(query)}`, {
      headers: { authorization: `Bearer ${admin}` }
    })
    expect(reply.status).toBe(200)
    return await reply.json() as A
  }

  it("signs in with a good key: the chart has one point per hour and its totals are the API's", async () => {
    const { errors, page, requests } = await open()
    await page.goto(`${base}/dashboard?apiId=${apiId}&window=24h`)
    await signIn(page, admin)
    await page.locator("[data-total=total]").waitFor()
    const shown = await page.evaluate(() => ({
      totals: (globalThis as any).__keymeterTotals,
      chart: (globalThis as any).__keymeter.chart
    }))
    const end = Date.now()
    const start = Math.floor((end - 24 * HOUR) / HOUR) * HOUR
    const [all] = await keymeter.getVerifications({ apiId, start, end })
    const hours = await keymeter.getVerifications({ apiId, start, end, groupBy: "hour" })
    expect(shown.chart.bucket).toBe("hour")
    expect(shown.chart.buckets).toBe(hours.length)
    expect(shown.totals.total).toBe(all!.total)
    expect(shown.totals.valid).toBe(all!.valid)
    expect(shown.totals.rateLimited).toBe(all!.rateLimited)
    expect(await page.locator("[data-total=total]").textContent()).toBe(String(all!.total))
    // The canvas has ink.
    const ink = await page.evaluate(() => {
      const canvas = (globalThis as any).document.querySelector("canvas")
      const data: Uint8ClampedArray = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data
      let n = 0
      for (let i = 3; i < data.length; i += 4) if (data[i]! > 0) n++
      return n
    })
    expect(ink).toBeGreaterThan(1000)
    // The key is in sessionStorage only, never in the URL.
    expect(page.url()).not.toContain(admin)
    expect(await page.evaluate(() => (globalThis as any).document.cookie)).toBe("")
    await page.screenshot({ path: join(screenshots, "usage-1280.png"), fullPage: true })
    await page.setViewportSize({ width: 390, height: 844 })
    await page.screenshot({ path: join(screenshots, "usage-390.png"), fullPage: true })
    expect(requests.every((url) => url.startsWith(base))).toBe(true)
    expect(errors).toEqual([])
    await page.close()
  }, 60_000)

  it("without an api in the URL, picks the first the key may read and puts it in the URL", async () => {
    const { errors, page } = await open()
    await page.goto(`${base}/dashboard`)
    await signIn(page, admin)
    await page.locator("[data-total=total]").waitFor()
    expect(new URL(page.url()).searchParams.get("apiId")).toBe(apiId)
    expect(await page.getByLabel("Api").inputValue()).toBe(apiId)
    // The same view again from the URL alone (a bookmark), in a new tab of the same session.
    const bookmark = page.url()
    await page.goto(bookmark)
    await page.locator("[data-total=total]").waitFor()
    expect(page.url()).toBe(bookmark)
    expect(errors).toEqual([])
    await page.close()
  }, 60_000)

  it("top keys, identities and tags: a click filters the chart and the URL; the filter's chip clears it", async () => {
    const { errors, page } = await open()
    await page.goto(`${base}/dashboard?apiId=${apiId}&window=24h`)
    await signIn(page, admin)
    await page.locator("[data-total=total]").waitFor()
    const end = Date.now()
    const start = Math.floor((end - 24 * HOUR) / HOUR) * HOUR
    const topKeys = await keymeter.getVerifications({
      apiId,
      start,
      end,
      groupBy: "key",
      orderBy: "total",
      order: "desc",
      limit: 10
    })
    const keysTable = page.locator("section.top").filter({ hasText: "Top keys" })
    await keysTable.locator("tbody tr").first().waitFor()
    expect(await keysTable.locator("tbody tr td:first-child").allTextContents()).toEqual(
      topKeys.map((row) => row.keyId)
    )
    const keyId = topKeys[1]!.keyId!
    await keysTable.getByRole("link", { name: keyId }).click()
    await page.waitForURL((url) => url.searchParams.get("keyId") === keyId)
    await page.waitForFunction((total) => (globalThis as any).__keymeterTotals?.total === total, topKeys[1]!.total)
    expect(await page.locator("[data-total=total]").textContent()).toBe(String(topKeys[1]!.total))
    // An identity on top of it, by its external id.
    const [customer] = await keymeter.getVerifications({
      apiId,
      start,
      end,
      keyId,
      groupBy: "identity",
      orderBy: "total",
      order: "desc",
      limit: 10
    })
    const identities = page.locator("section.top").filter({ hasText: "Top identities" })
    await identities.getByRole("link", { name: customer!.identity!.externalId }).click()
    await page.waitForURL((url) => url.searchParams.get("externalId") === customer!.identity!.externalId)
    await page.waitForFunction((total) => (globalThis as any).__keymeterTotals?.total === total, customer!.total)
    await page.screenshot({ path: join(screenshots, "filtered.png"), fullPage: true })
    // Chips clear the filters, back to the whole api.
    await page.getByRole("button", { name: `remove filter keyId ${keyId}` }).click()
    await page.getByRole("button", { name: /remove filter externalId/ }).click()
    const [all] = await keymeter.getVerifications({ apiId, start, end })
    await page.waitForFunction((total) => (globalThis as any).__keymeterTotals?.total === total, all!.total)
    expect(new URL(page.url()).searchParams.get("keyId")).toBeNull()
    // Tags are listed too.
    const tags = page.locator("section.top").filter({ hasText: "Top tags" })
    expect((await tags.locator("tbody tr td:first-child").allTextContents()).sort()).toEqual(["plan:free", "plan:pro"])
    expect(errors).toEqual([])
    await page.close()
  }, 60_000)

  it(
    "a custom window and a resolution from the URL or the form: one point per bucket of the API's answer",
    async () => {
      const { errors, page } = await open()
      const end = Math.floor(Date.now() / HOUR) * HOUR + HOUR
      const start = end - 3 * 24 * HOUR
      await page.goto(`${base}/dashboard?apiId=${apiId}&window=custom&start=${start}&end=${end}&resolution=day`)
      await signIn(page, admin)
      await page.locator("[data-total=total]").waitFor()
      const days = await keymeter.getVerifications({ apiId, start, end, groupBy: "day" })
      const chart = () => page.evaluate(() => (globalThis as any).__keymeter.chart)
      expect(await chart()).toMatchObject({ bucket: "day", buckets: days.length })
      expect(await page.getByLabel("From (UTC)").inputValue()).toBe(new Date(start).toISOString().slice(0, 16))
      await page.getByLabel("Resolution").selectOption("hour")
      const hours = await keymeter.getVerifications({ apiId, start, end, groupBy: "hour" })
      await page.waitForFunction((n) => (globalThis as any).__keymeter?.chart?.buckets === n, hours.length)
      expect(new URL(page.url()).searchParams.get("resolution")).toBe("hour")
      const [all] = await keymeter.getVerifications({ apiId, start, end })
      expect(await page.locator("[data-total=total]").textContent()).toBe(String(all!.total))
      expect(errors).toEqual([])
      await page.close()
    },
    60_000
  )

  it("a bad key is sent back to sign-in with the reason; a key that may not read the api says so", async () => {
    const { errors, page } = await open()
    await page.goto(`${base}/dashboard?apiId=${apiId}`)
    await signIn(page, "sk_not_a_key")
    await expect(page.getByRole("alert").textContent()).resolves.toMatch(/This key was refused/)
    await signIn(page, reader)
    await expect(page.getByRole("alert").textContent()).resolves.toMatch(
      new RegExp(`This key may not read api ${apiId}`)
    )
    await page.screenshot({ path: join(screenshots, "refused.png"), fullPage: true })
    // 401 and 403 answers are expected here; the page itself logs nothing else.
    expect(errors.filter((e) => !/status of 40[13]/.test(e))).toEqual([])
    await page.close()
  }, 60_000)

  it(
    "rate limits: an override made in the page (keyboard only) is what getOverride answers; edited, resolved, then deleted and gone",
    async () => {
      const { errors, page } = await open()
      await page.goto(`${base}/dashboard`)
      await signIn(page, admin)
      await page.getByRole("link", { name: "Rate limits" }).click()
      await page.waitForURL((url) => url.searchParams.get("section") === "ratelimits")
      const overrides = page.getByRole("region", { name: "overrides" })
      await overrides.locator("tbody tr").first().waitFor()
      // Paged in creation order, 20 at a time.
      expect(await overrides.locator("tbody tr").count()).toBe(20)
      await expect.poll(() => overrides.getByRole("navigation").textContent()).toContain("1–20 of 26")
      await overrides.getByRole("button", { name: "Next page" }).click()
      await page.waitForFunction(() =>
        (globalThis as any).document.querySelector("nav.pager span")?.textContent === "21–26 of 26"
      )
      expect(await overrides.locator("tbody tr td:first-child").allTextContents()).toEqual(LAST_PAGE)
      await overrides.getByRole("button", { name: "Previous page" }).click()
      await expect.poll(() => overrides.locator("tbody tr").first().textContent()).toContain("seed_0")

      // The form checks the setOverride bounds before asking the server.
      await page.getByRole("button", { name: "New override" }).focus()
      await page.keyboard.press("Enter")
      const form = page.getByRole("form", { name: "new override" })
      await form.waitFor()
      await expect.poll(() => page.evaluate(() => (globalThis as any).document.activeElement?.name)).toBe("identifier")
      await page.keyboard.type("ab")
      await page.keyboard.press("Tab")
      await page.keyboard.press("ControlOrMeta+a")
      await page.keyboard.type("-1")
      await page.keyboard.press("Tab")
      await page.keyboard.press("ControlOrMeta+a")
      await page.keyboard.type("0")
      await page.keyboard.press("Enter")
      expect(await form.locator(".problem").allTextContents()).toEqual([
        "An identifier has 3 to 512 characters (* matches any run of them).",
        "The limit is a whole number of requests, 0 or more.",
        "The window is 1 second or more, in whole milliseconds."
      ])
      expect(await form.getByLabel("Identifier (or pattern with *)").getAttribute("aria-invalid")).toBe("true")
      await form.getByLabel("Identifier (or pattern with *)").fill("customer_42")
      await form.getByLabel("Limit (requests per window)").fill("7")
      await form.getByLabel("Window", { exact: true }).fill("2")
      await form.getByLabel("Unit").selectOption("min")
      await page.screenshot({ path: join(screenshots, "override-form.png"), fullPage: true })
      await form.getByLabel("Window", { exact: true }).focus()
      await page.keyboard.press("Enter")
      await expect.poll(() => page.getByRole("status").textContent()).toBe("Override customer_42 saved: 7 per 2 min.")
      expect(await keymeter.getOverride({ namespaceName: NAMESPACE, identifier: "customer_42" })).toMatchObject({
        identifier: "customer_42",
        limit: 7,
        duration: 120_000,
        async: false
      })

      // Edited on the last page: the identifier stays, the numbers change.
      await overrides.getByRole("button", { name: "Next page" }).click()
      await overrides.getByRole("button", { name: "edit customer_42" }).click()
      const edit = page.getByRole("form", { name: "edit override customer_42" })
      expect(await edit.getByLabel("Window", { exact: true }).inputValue()).toBe("2")
      expect(await edit.getByLabel("Unit").inputValue()).toBe("min")
      await edit.getByLabel("Limit (requests per window)").fill("9")
      await edit.getByRole("button", { name: "Save override" }).click()
      await expect.poll(() => page.getByRole("status").textContent()).toBe("Override customer_42 saved: 9 per 2 min.")
      expect(await keymeter.getOverride({ namespaceName: NAMESPACE, identifier: "customer_42" })).toMatchObject({
        limit: 9,
        duration: 120_000
      })

      // Which override applies: the pattern for an identifier it matches, none for others.
      const resolve = page.getByRole("form", { name: "which override applies" })
      await resolve.getByLabel("Identifier").fill("seed_anything")
      await resolve.getByRole("button", { name: "Find" }).click()
      await expect.poll(() => resolve.getByTestId("resolved").locator("p").textContent()).toBe(
        "seed_* (a pattern) applies to seed_anything: 3 per 1 s."
      )
      await resolve.getByLabel("Identifier").fill("customer_42")
      await resolve.getByRole("button", { name: "Find" }).click()
      await expect.poll(() => resolve.getByTestId("resolved").locator("p").textContent()).toBe(
        "customer_42 (its own override) applies to customer_42: 9 per 2 min."
      )
      await resolve.getByLabel("Identifier").fill("nobody")
      await resolve.getByRole("button", { name: "Find" }).click()
      await expect.poll(() => resolve.getByTestId("resolved").locator("p").textContent()).toMatch(
        /^No override applies to nobody/
      )
      await page.screenshot({ path: join(screenshots, "ratelimits-1280.png"), fullPage: true })
      await page.setViewportSize({ width: 390, height: 844 })
      await page.screenshot({ path: join(screenshots, "ratelimits-390.png"), fullPage: true })
      // At phone width the page does not scroll sideways (wide tables scroll inside their panel).
      expect(await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth)).toBeLessThanOrEqual(
        390
      )
      await page.setViewportSize({ width: 1280, height: 900 })

      // Delete asks first; "Keep" keeps it, then the keyboard confirms.
      await overrides.getByRole("button", { name: "delete customer_42" }).click()
      await overrides.getByRole("group", { name: "confirm deleting customer_42" }).getByRole("button", { name: "Keep" })
        .click()
      await expect.poll(() => page.evaluate(() => (globalThis as any).document.activeElement?.ariaLabel)).toBe(
        "delete customer_42"
      )
      expect((await keymeter.getOverride({ namespaceName: NAMESPACE, identifier: "customer_42" })).limit).toBe(9)
      await page.keyboard.press("Enter")
      await expect.poll(() => page.evaluate(() => (globalThis as any).document.activeElement?.textContent)).toBe(
        "Yes, delete"
      )
      await page.keyboard.press("Enter")
      await expect.poll(() => page.getByRole("status").textContent()).toBe("Override customer_42 deleted.")
      await expect(keymeter.getOverride({ namespaceName: NAMESPACE, identifier: "customer_42" })).rejects.toMatchObject(
        {
          code: "NOT_FOUND"
        }
      )
      await expect.poll(() => overrides.locator("tbody tr td:first-child").allTextContents()).toEqual(LAST_PAGE)
      // "No override applies" is getOverride's 404, which the browser logs; the page logs nothing else.
      expect(errors.filter((e) => !/status of 404/.test(e))).toEqual([])
      await page.close()
    },
    90_000
  )

  it(
    "rate limits: passed and blocked per bucket, the most blocked identifiers and each override's hits are the API's; a row filters the chart",
    async () => {
      const { errors, page, requests } = await open()
      await page.goto(`${base}/dashboard?section=ratelimits`)
      await signIn(page, admin)
      const { namespaces } = await api<{ namespaces: Array<{ namespaceId: string; name: string }> }>(
        "ratelimits.listNamespaces"
      )
      const namespaceId = namespaces.find((n) => n.name === NAMESPACE)!.namespaceId
      const decisions = page.getByRole("region", { name: "limit decisions" })
      await page.waitForFunction(() => (globalThis as any).__keymeter?.chart?.label?.startsWith("limit decisions"))
      // The last day by default, in hours.
      const end = Date.now()
      const window = { namespaceId, start: String(Math.floor((end - 24 * HOUR) / HOUR) * HOUR), end: String(end) }
      expect(new URL(page.url()).searchParams.get("window")).toBe("24h")
      const chart = () => page.evaluate(() => (globalThis as any).__keymeter.chart)
      const seriesOf = (points: ReadonlyArray<Decisions>) => ({
        passed: points.map((p) => p.passed),
        blocked: points.map((p) => p.blocked)
      })
      const hours = await api<Array<Decisions>>("analytics.getRatelimits", { ...window, groupBy: "hour" })
      expect(await chart()).toEqual({
        label: "limit decisions per hour, passed and blocked",
        bucket: "hour",
        buckets: hours.length,
        x: hours.map((p) => p.time! / 1000),
        series: seriesOf(hours)
      })
      const [all] = await api<Array<Decisions>>("analytics.getRatelimits", window)
      expect(all!.blocked).toBeGreaterThan(0)
      const tiles = () => decisions.locator("[data-total]").allTextContents()
      expect(await tiles()).toEqual([all!.total, all!.passed, all!.blocked].map(String))

      // The most blocked identifiers, as the API orders them.
      const top = await api<Array<Decisions>>("analytics.getRatelimits", {
        ...window,
        groupBy: "identifier",
        orderBy: "blocked",
        order: "desc",
        limit: "10"
      })
      expect(top[0]).toMatchObject({ identifier: "user_1", total: 6, passed: 2, blocked: 4 })
      const table = decisions.locator("section.top")
      await table.locator("tbody tr").first().waitFor()
      expect(await table.locator("tbody tr").evaluateAll((rows) => rows.map((row: any) => row.innerText.split("\t"))))
        .toEqual(top.map((row) => [row.identifier, String(row.total), String(row.passed), String(row.blocked)]))

      // A row filters the chart and the totals to its identifier (one holding a comma too).
      for (const identifier of ["user_1", "user,2"]) {
        await table.getByRole("link", { name: identifier, exact: true }).click()
        await page.waitForURL((url) => url.searchParams.get("identifier") === identifier)
        const mine = await api<Array<Decisions>>("analytics.getRatelimits", { ...window, identifier, groupBy: "hour" })
        const [theirs] = await api<Array<Decisions>>("analytics.getRatelimits", { ...window, identifier })
        await page.waitForFunction(
          (series) => JSON.stringify((globalThis as any).__keymeter?.chart?.series) === series,
          JSON.stringify(seriesOf(mine))
        )
        expect(await tiles()).toEqual([theirs!.total, theirs!.passed, theirs!.blocked].map(String))
        expect(await table.locator("tr[aria-current=true] a").textContent()).toBe(identifier)
      }
      expect(await tiles()).toEqual(["4", "1", "3"])
      await page.screenshot({ path: join(screenshots, "ratelimits-filtered.png"), fullPage: true })
      await decisions.getByRole("button", { name: "remove filter identifier user,2" }).click()
      await page.waitForFunction(
        (series) => JSON.stringify((globalThis as any).__keymeter?.chart?.series) === series,
        JSON.stringify(seriesOf(hours))
      )
      expect(new URL(page.url()).searchParams.has("identifier")).toBe(false)
      expect(await tiles()).toEqual([all!.total, all!.passed, all!.blocked].map(String))

      // Each override's hits and last hit, as listOverrides answers them.
      const overrides = page.getByRole("region", { name: "overrides" })
      await overrides.locator("tbody tr").first().waitFor()
      const listed = await api<{ overrides: Array<{ identifier: string; hits: number; lastHitAt?: number }> }>(
        "ratelimits.listOverrides",
        { namespaceId, limit: "20" }
      )
      expect(listed.overrides.find((o) => o.identifier === "seed_3")).toMatchObject({ hits: 15 })
      const headers = await overrides.locator("th").allTextContents()
      const column = (name: string) =>
        overrides.locator(`tbody tr td:nth-child(${headers.indexOf(name) + 1})`).allTextContents()
      expect(await column("identifier")).toEqual(listed.overrides.map((o) => o.identifier))
      expect(await column("hits")).toEqual(listed.overrides.map((o) => String(o.hits)))
      expect(await column("last hit")).toEqual(
        listed.overrides.map((o) => o.lastHitAt === undefined ? "never" : utcText(o.lastHitAt))
      )
      await page.screenshot({ path: join(screenshots, "ratelimits-decisions-1280.png"), fullPage: true })
      await page.setViewportSize({ width: 390, height: 844 })
      await page.screenshot({ path: join(screenshots, "ratelimits-decisions-390.png"), fullPage: true })
      expect(await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth)).toBeLessThanOrEqual(
        390
      )
      await page.setViewportSize({ width: 1280, height: 900 })

      // Another window: days, as the API buckets them.
      await decisions.getByLabel("Window").selectOption("7d")
      await page.waitForURL((url) => url.searchParams.get("window") === "7d")
      const weekEnd = Date.now()
      const days = await api<Array<Decisions>>("analytics.getRatelimits", {
        namespaceId,
        start: String(Math.floor((weekEnd - 7 * 24 * HOUR) / HOUR) * HOUR),
        end: String(weekEnd),
        groupBy: "day"
      })
      await page.waitForFunction((n) =>
        (globalThis as any).__keymeter?.chart?.bucket === "day" &&
        (globalThis as any).__keymeter.chart.buckets === n, days.length)
      expect((await chart()).series).toEqual(seriesOf(days))

      // A namespace without decisions shows zeros, not an error.
      await page.getByLabel("Namespace").selectOption(namespaces.find((n) => n.name === QUIET)!.namespaceId)
      await expect.poll(() => decisions.locator("h2").first().textContent()).toBe(`Limit decisions in ${QUIET}`)
      await expect.poll(tiles).toEqual(["0", "0", "0"])
      await expect.poll(() => table.textContent()).toContain("None in this window.")
      expect(await decisions.textContent()).toContain("No limit decisions in this window.")
      expect(await page.getByRole("alert").count()).toBe(0)
      expect(requests.every((url) => url.startsWith(base))).toBe(true)
      expect(errors).toEqual([])
      await page.close()
    },
    60_000
  )

  it(
    "keys: a key made in the page verifies with the secret shown once; disabled, then deleted in the page",
    async () => {
      const { errors, page } = await open()
      for (let i = 0; i < 3; i++) await keymeter.keys.create({ apiId, name: `seeded ${i}`, externalId: "customer_7" })
      await page.goto(`${base}/dashboard?section=keys`)
      await signIn(page, admin)
      const keys = page.getByRole("region", { name: "keys" })
      await keys.locator("tbody tr").first().waitFor()
      const listed = await keymeter.keys.list({ apiId, limit: 20 })
      expect(await keys.locator("tbody tr").count()).toBe(listed.keys.length)
      expect(new URL(page.url()).searchParams.get("apiId")).toBe(apiId)

      await page.getByRole("button", { name: "New key" }).click()
      const form = page.getByRole("form", { name: "new key" })
      await form.getByLabel("Prefix (optional)").fill("no-dashes")
      await form.getByRole("button", { name: "Create key" }).click()
      expect(await form.locator(".problem").allTextContents()).toEqual(["A prefix is 1 to 16 letters or digits."])
      await form.getByLabel("Prefix (optional)").fill("dash")
      await form.getByLabel("Name (optional)").fill("made in the page")
      await form.getByLabel(/^External id/).fill("customer_9")
      await form.getByLabel(/^Credits/).fill("5")
      await form.getByRole("button", { name: "Create key" }).click()
      const secretPanel = page.getByRole("region", { name: "new key's secret" })
      const secret = await secretPanel.getByLabel("Secret").inputValue()
      expect(secret).toMatch(/^dash_/)
      await page.screenshot({ path: join(screenshots, "keys-created.png"), fullPage: true })
      const verified = await keymeter.keys.verify({ key: secret })
      expect(verified).toMatchObject({
        valid: true,
        code: "VALID",
        name: "made in the page",
        credits: { remaining: 4 }
      })
      const keyId = verified.keyId!
      await secretPanel.getByRole("button", { name: "Done" }).click()
      expect(await page.getByLabel("Secret").count()).toBe(0)

      // Only customer_9's keys, by the filter; then disabled and enabled again.
      await page.getByLabel("External id", { exact: true }).fill("customer_9")
      await page.getByRole("button", { name: "Filter" }).click()
      await page.waitForURL((url) => url.searchParams.get("externalId") === "customer_9")
      await expect.poll(() => keys.locator("tbody tr td:first-child").allTextContents()).toEqual([
        `${keyId}${(await keymeter.keys.get({ keyId })).start}…`
      ])
      await keys.getByRole("button", { name: `disable ${keyId}` }).click()
      await expect.poll(() => page.getByRole("status").textContent()).toBe(`Key ${keyId} disabled.`)
      expect((await keymeter.keys.get({ keyId })).enabled).toBe(false)
      expect((await keymeter.keys.verify({ key: secret })).code).toBe("DISABLED")
      await keys.getByRole("button", { name: `enable ${keyId}` }).click()
      await expect.poll(() => page.getByRole("status").textContent()).toBe(`Key ${keyId} enabled.`)
      expect((await keymeter.keys.get({ keyId })).enabled).toBe(true)
      await page.screenshot({ path: join(screenshots, "keys-1280.png"), fullPage: true })
      await page.setViewportSize({ width: 390, height: 844 })
      await page.screenshot({ path: join(screenshots, "keys-390.png"), fullPage: true })
      expect(await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth)).toBeLessThanOrEqual(
        390
      )
      await page.setViewportSize({ width: 1280, height: 900 })

      // The key's id opens its usage (last 30 days); back returns to the keys as they were.
      await keys.getByRole("link", { name: `usage of ${keyId}` }).click()
      await page.waitForURL((url) => url.searchParams.get("keyId") === keyId && !url.searchParams.has("section"))
      const end = Date.now()
      const [usage] = await keymeter.getVerifications({
        apiId,
        keyId,
        start: Math.floor((end - 30 * 24 * HOUR) / HOUR) * HOUR,
        end
      })
      expect(usage!.total).toBeGreaterThan(0)
      await page.waitForFunction((total) => (globalThis as any).__keymeterTotals?.total === total, usage!.total)
      expect(await page.getByLabel("Window").inputValue()).toBe("30d")
      await page.goBack()
      await keys.getByRole("button", { name: `delete ${keyId}` }).waitFor()
      expect(await page.getByLabel("External id", { exact: true }).inputValue()).toBe("customer_9")
      await keys.getByRole("button", { name: `delete ${keyId}` }).click()
      await keys.getByRole("button", { name: "Yes, delete" }).click()
      await expect.poll(() => page.getByRole("status").textContent()).toBe(`Key ${keyId} deleted.`)
      await expect(keymeter.keys.get({ keyId })).rejects.toMatchObject({ code: "NOT_FOUND" })
      expect((await keymeter.keys.verify({ key: secret })).code).toBe("NOT_FOUND")
      await expect.poll(() => keys.textContent()).toContain("No keys of customer_9 in this api.")
      expect(errors).toEqual([])
      await page.close()
    },
    90_000
  )

  it(
    "a read-only key sees no write controls nor decisions; a usage-only key sees no rate-limit or key sections",
    async () => {
      const { errors, page, requests } = await open()
      await page.goto(`${base}/dashboard?section=ratelimits`)
      await signIn(page, readOnly)
      const overrides = page.getByRole("region", { name: "overrides" })
      await overrides.locator("tbody tr").first().waitFor()
      const writes = /^(New override|New namespace|New key|Edit|Delete|Disable|Enable|edit |delete |disable |enable )/
      expect(await page.getByRole("button", { name: writes }).count()).toBe(0)
      expect(await overrides.locator("th").allTextContents()).toEqual([
        "identifier",
        "limit",
        "window",
        "async",
        "updated",
        "hits",
        "last hit"
      ])
      // Without read_analytics: the overrides, and a note instead of the charts (nothing asked, so no 403).
      expect(await page.getByRole("note").textContent()).toBe(
        "This key may not read the limit decisions of api.requests, so no charts here: they take " +
          `ratelimit.*.read_analytics or ratelimit.${
            new URL(page.url()).searchParams.get("namespaceId")
          }.read_analytics.`
      )
      expect(await page.getByRole("region", { name: "limit decisions" }).count()).toBe(0)
      expect(requests.filter((url) => url.includes("analytics.getRatelimits"))).toEqual([])
      // Reading is allowed: which override applies still answers.
      const resolve = page.getByRole("form", { name: "which override applies" })
      await resolve.getByLabel("Identifier").fill("seed_3")
      await resolve.getByRole("button", { name: "Find" }).click()
      await expect.poll(() => resolve.getByTestId("resolved").locator("p").textContent()).toContain("applies to seed_3")
      await page.screenshot({ path: join(screenshots, "ratelimits-read-only.png"), fullPage: true })
      await page.getByRole("link", { name: "Keys" }).click()
      const keys = page.getByRole("region", { name: "keys" })
      await keys.locator("tbody tr").first().waitFor()
      expect(await page.getByRole("button", { name: writes }).count()).toBe(0)
      await page.getByRole("button", { name: "Sign out" }).click()
      // A key that may read usage only: no sections but usage, and SQL queries over what it may read.
      await signIn(page, reader)
      await page.getByRole("navigation", { name: "sections" }).waitFor()
      expect(await page.getByRole("navigation", { name: "sections" }).getByRole("link").allTextContents()).toEqual([
        "Usage",
        "Query"
      ])
      expect(errors.filter((e) => !/status of 403/.test(e))).toEqual([])
      await page.close()
    },
    60_000
  )

  it("serves its assets with their types, a year of cache under hashed names, and a same-origin policy", async () => {
    const page = await fetch(`${base}/dashboard`)
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8")
    expect(page.headers.get("content-security-policy")).toMatch(/^default-src 'self'/)
    const html = await page.text()
    const assets = [...html.matchAll(/dashboard\/assets\/([\w-]+\.(js|css))/g)].map((m) => m[1]!)
    expect(assets).toHaveLength(3)
    for (const asset of assets) {
      const reply = await fetch(`${base}/dashboard/assets/${asset}`)
      expect(reply.status).toBe(200)
      expect(reply.headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
      expect(reply.headers.get("content-type")).toMatch(asset.endsWith(".js") ? /^text\/javascript/ : /^text\/css/)
    }
    expect((await fetch(`${base}/dashboard/assets/nope-123.js`)).status).toBe(404)
  })
})
