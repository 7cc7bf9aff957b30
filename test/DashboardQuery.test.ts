/**
 * The dashboard's query section in a real browser (Debian's Chromium driven by playwright-core, as
 * in Dashboard.test.ts): SQL run in the page answers, cell for cell, what v2's SQL analytics routes
 * answer for the same query; refusals show the server's reason under the query, which stays; a
 * 10,000-row answer is drawn a slice at a time. Screenshots go to `test/screenshots/`.
 */
import { createKeymeter, type Keymeter } from "keymeter"
import { mkdirSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { join } from "node:path"
import type { Browser, Locator, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launch, open as openPage, screenshots, signIn, skip } from "./internal/Browser.js"

const HOUR = 3_600_000
const DAY = 24 * HOUR
/** Verifications beyond the seeded ones, so that an answer can reach the 10,000-row budget. */
const BULK = 10_000

type Row = Record<string, unknown>

/** A cell as the page should show it: an ISO date and its ms for a time, arrays joined, null marked. */
const shown = (name: string, value: unknown) =>
  ["day", "time", "hour"].includes(name) && typeof value === "number"
    ? `${new Date(value).toISOString()} ${value}`
    : value === null
    ? "null"
    : Array.isArray(value)
    ? value.join(", ")
    : String(value)

describe.skipIf(skip !== undefined)("dashboard query section in Chromium", () => {
  let keymeter: Keymeter
  let server: Server
  let base: string
  let browser: Browser
  let apiId: string
  let admin: string
  let ratelimitsOnly: string

  beforeAll(async () => {
    keymeter = await createKeymeter()
    apiId = (await keymeter.createApi({ name: "main" })).apiId
    admin = (await keymeter.createRootKey({ permissions: ["*"] })).key
    ratelimitsOnly = (await keymeter.createRootKey({ permissions: ["ratelimit.*.read_analytics"] })).key
    const now = Date.now()
    const outcomes = ["valid", "valid", "valid", "rateLimited", "usageExceeded", "notFound"] as const
    // 600 over the last 20 days, then the bulk over the last 10 hours.
    await keymeter.record(Array.from({ length: 600 }, (_, i) => ({
      apiId,
      keyId: `key_${i % 7}`,
      outcome: outcomes[i % outcomes.length]!,
      // Half a minute before the bulk's latest, so the latest rows are the bulk's.
      time: now - (i % 20) * DAY - (i % 5) * HOUR - 30_000,
      tags: [i % 2 === 0 ? "plan:pro" : "plan:free"],
      ...(i % 3 === 0 ? { identity: { id: `id_${i % 4}`, externalId: `customer_${i % 4}` } } : {})
    })))
    for (let from = 0; from < BULK; from += 1000) {
      await keymeter.record(Array.from({ length: 1000 }, (_, i) => ({
        apiId,
        keyId: `bulk_${(from + i) % 3}`,
        outcome: "valid" as const,
        time: now - ((from + i) % 600) * 60_000,
        tags: ["bulk", `n:${(from + i) % 2}`]
      })))
    }
    // Limit decisions: user_1 passes twice then is blocked thrice; user_2 passes three times; user_3
    // is decided by its override (1 a minute), once passed and once blocked.
    const decide = async (identifier: string, limit: number, times: number) => {
      for (let i = 0; i < times; i++) {
        await keymeter.limit({ namespace: "api.requests", identifier, limit, duration: 60_000 })
      }
    }
    await decide("user_1", 2, 5)
    await decide("user_2", 5, 3)
    await keymeter.setOverride({ namespaceName: "api.requests", identifier: "user_3", limit: 1, duration: 60_000 })
    await decide("user_3", 10, 2)
    const handler = keymeter.handler()
    server = createServer((req, res) => handler(req, res))
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const address = server.address()
    base = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`
    browser = await launch()
    mkdirSync(screenshots, { recursive: true })
  }, 120_000)

  afterAll(async () => {
    await browser?.close()
    await new Promise((resolve) => server?.close(resolve))
    await keymeter?.close()
  })

  const open = (width = 1280) => openPage(browser, width)

  /** A SQL query through the HTTP API, as the page sends it: its status and body. */
  const query = async (route: "analytics.getVerifications" | "analytics.getRatelimits", sql: string, key = admin) => {
    const reply = await fetch(`${base}/v2/${route}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ query: sql })
    })
    return { status: reply.status, body: await reply.json() as { data?: Array<Row>; error?: Row } }
  }

  /** The rows of a query the API answers (200 expected). */
  const rowsOf = async (route: "analytics.getVerifications" | "analytics.getRatelimits", sql: string) => {
    const answer = await query(route, sql)
    expect(answer.status, JSON.stringify(answer.body)).toBe(200)
    return answer.body.data!
  }

  const editor = (page: Page) => page.getByLabel(/^SQL query over/)
  const answer = (page: Page) => page.getByRole("region", { name: "answer" })
  /** The answer's headers and cells, as shown. */
  const table = async (region: Locator) => ({
    headers: await region.locator("thead th").allTextContents(),
    cells: await region.locator("tbody tr").evaluateAll((rows) =>
      rows.map((row: any) => [...row.querySelectorAll("td")].map((td: any) => td.textContent as string))
    )
  })
  /** What the page should show for the API's rows: the first row's columns, in order. */
  const expected = (rows: ReadonlyArray<Row>) => {
    const headers = Object.keys(rows[0]!)
    return { headers, cells: rows.map((row) => headers.map((name) => shown(name, row[name]))) }
  }
  const rowCount = (page: Page) => answer(page).getByTestId("row-count").textContent()

  it(
    "runs the opening example and a grouping query (Ctrl+Enter): the table is the API's answer, cell for cell",
    async () => {
      const { errors, page, requests } = await open()
      await page.goto(`${base}/dashboard`)
      await signIn(page, admin)
      await page.getByRole("navigation", { name: "sections" }).getByRole("link", { name: "Query" }).click()
      await page.waitForURL((url) => url.searchParams.get("section") === "query")
      expect(await page.getByRole("radio", { name: "Verifications" }).isChecked()).toBe(true)
      const example = await editor(page).inputValue()
      expect(example).toContain("toStartOfDay(time) AS day")
      expect(example).toContain("FROM key_verifications_v1")

      // The opening example: outcomes per day over the last 30 days.
      await page.getByRole("button", { name: "Run" }).click()
      await answer(page).locator("tbody tr").first().waitFor()
      const perDay = await rowsOf("analytics.getVerifications", example)
      expect(perDay.length).toBeGreaterThan(20)
      expect(await table(answer(page))).toEqual(expected(perDay))
      expect(await rowCount(page)).toBe(`${perDay.length} rows`)
      expect(await answer(page).getByTestId("elapsed").textContent()).toMatch(/^\d+ ms$|^\d+\.\d\d s$/)
      // The counts add up to what was recorded in the window (all of it).
      expect(perDay.reduce((sum, row) => sum + (row.total as number), 0)).toBe(600 + BULK)

      // Another grouping, typed and run from the keyboard.
      const byKey =
        "SELECT key_id, count() AS total, countIf(outcome = 'VALID') AS valid, uniq(external_id) AS people\n" +
        "FROM key_verifications_v1\nWHERE time >= now() - INTERVAL 30 DAY\nGROUP BY key_id\nORDER BY key_id"
      await editor(page).fill(byKey)
      await editor(page).press("ControlOrMeta+Enter")
      await expect.poll(() => answer(page).locator("thead th").allTextContents()).toEqual([
        "key_id",
        "total",
        "valid",
        "people"
      ])
      const keys = await rowsOf("analytics.getVerifications", byKey)
      expect(keys.map((row) => row.key_id)).toEqual([
        "bulk_0",
        "bulk_1",
        "bulk_2",
        ...[0, 1, 2, 3, 4, 5, 6].map((i) => `key_${i}`)
      ])
      expect(await table(answer(page))).toEqual(expected(keys))
      expect(await rowCount(page)).toBe("10 rows")
      // The view is in the URL: the family and the query last run, never the key.
      const url = new URL(page.url())
      expect(url.searchParams.get("family")).toBe("verifications")
      expect(url.searchParams.get("q")).toBe(byKey)
      expect(page.url()).not.toContain(admin)
      await page.screenshot({ path: join(screenshots, "query-1280.png"), fullPage: true })
      await page.setViewportSize({ width: 390, height: 844 })
      await page.screenshot({ path: join(screenshots, "query-390.png"), fullPage: true })
      // At phone width the page does not scroll sideways (the table scrolls inside its panel).
      expect(await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth)).toBeLessThanOrEqual(
        390
      )
      expect(requests.every((u) => u.startsWith(base))).toBe(true)
      expect(errors).toEqual([])
      await page.close()
    },
    60_000
  )

  it("an invalid query shows the server's reason under it, with its line and column; the query stays", async () => {
    const { errors, page } = await open()
    await page.goto(`${base}/dashboard?section=query`)
    await signIn(page, admin)
    const bad = "SELECT nope FROM key_verifications_v1"
    await editor(page).fill(bad)
    await page.getByRole("button", { name: "Run" }).click()
    const alert = page.getByRole("alert")
    await alert.waitFor()
    const refused = await query("analytics.getVerifications", bad)
    expect(refused.status).toBe(400)
    const detail = refused.body.error!.detail as string
    expect(detail).toContain("line 1, column 8")
    expect(await alert.textContent()).toContain(`400 Invalid Query: ${detail}`)
    // Under the query, which is kept as typed; no answer is shown.
    expect(await editor(page).inputValue()).toBe(bad)
    const [area, box] = [await editor(page).boundingBox(), await alert.boundingBox()]
    expect(box!.y).toBeGreaterThan(area!.y + area!.height)
    expect(await answer(page).count()).toBe(0)
    expect(await editor(page).getAttribute("aria-invalid")).toBe("true")
    // Its place is one click away: the word at line 1, column 8 is selected in the editor.
    await alert.getByRole("button", { name: "Show line 1, column 8" }).click()
    expect(
      await editor(page).evaluate((el: any) => [
        el.selectionStart,
        el.selectionEnd,
        (globalThis as any).document.activeElement === el
      ])
    )
      .toEqual([7, 11, true])
    await page.screenshot({ path: join(screenshots, "query-error.png"), fullPage: true })

    // On line 2: the line and column count from the query's start.
    const second = "SELECT key_id,\n  count( FROM key_verifications_v1"
    await editor(page).fill(second)
    await page.getByRole("button", { name: "Run" }).click()
    await expect.poll(() => alert.textContent()).toContain("line 2, column")
    const place = /line 2, column (\d+)/.exec(await alert.textContent() ?? "")!
    await alert.getByRole("button", { name: `Show line 2, column ${place[1]}` }).click()
    expect(await editor(page).evaluate((el: any) => el.value.slice(el.selectionStart, el.selectionEnd))).toBe("FROM")

    // Over the answer budget (10,000 rows): 422, and the budget named.
    const tooMany = "SELECT time, key_id FROM key_verifications_v1"
    await editor(page).fill(tooMany)
    await page.getByRole("button", { name: "Run" }).click()
    const over = await query("analytics.getVerifications", tooMany)
    expect(over.status).toBe(422)
    await expect.poll(() => alert.textContent()).toBe(`422 Query Budget Exceeded: ${over.body.error!.detail}`)
    expect(await editor(page).inputValue()).toBe(tooMany)

    // A good query again clears the error.
    await editor(page).fill("SELECT count() AS total FROM key_verifications_v1")
    await page.getByRole("button", { name: "Run" }).click()
    await expect.poll(() => answer(page).locator("tbody td").allTextContents()).toEqual([String(600 + BULK)])
    expect(await page.getByRole("alert").count()).toBe(0)
    // The refusals are 400 and 422 answers the browser logs; the page itself logs nothing else.
    expect(errors.filter((e) => !/status of (400|422)/.test(e))).toEqual([])
    await page.close()
  }, 60_000)

  it("a 10,000-row answer: the first 500 rows with a note, more on demand", async () => {
    const { errors, page } = await open()
    await page.goto(`${base}/dashboard?section=query`)
    await signIn(page, admin)
    // Ordered by every column but tags (equal wherever the others are): rows tied in the order look alike.
    const latest = "SELECT time, key_id, outcome, tags, identity_id FROM key_verifications_v1\n" +
      "ORDER BY time DESC, key_id, outcome, identity_id LIMIT 10000"
    await editor(page).fill(latest)
    const started = Date.now()
    await page.getByRole("button", { name: "Run" }).click()
    await answer(page).locator("tbody tr").first().waitFor()
    const drawn = Date.now() - started
    expect(await rowCount(page)).toBe("10,000 rows")
    expect(await answer(page).locator("tbody tr").count()).toBe(500)
    const note = answer(page).getByRole("note")
    expect(await note.textContent()).toContain("Showing the first 500 of 10,000 rows.")
    const rows = await rowsOf("analytics.getVerifications", latest)
    expect(rows).toHaveLength(10_000)
    const [first] = (await table(answer(page))).cells
    expect(first).toEqual(expected(rows).cells[0])
    expect(first![3]).toMatch(/^bulk, n:[01]$/)
    await answer(page).getByRole("button", { name: "Show 500 more" }).click()
    await expect.poll(() => answer(page).locator("tbody tr").count()).toBe(1000)
    expect(await note.textContent()).toContain("Showing the first 1,000 of 10,000 rows.")
    await answer(page).getByRole("button", { name: "Show all" }).click()
    await expect.poll(() => answer(page).locator("tbody tr").count()).toBe(10_000)
    expect(await answer(page).getByRole("note").count()).toBe(0)
    // The last row drawn is the API's last.
    expect(await answer(page).locator("tbody tr").last().locator("td").allTextContents()).toEqual(
      expected(rows).cells[9_999]
    )
    expect(drawn).toBeLessThan(15_000)
    expect(errors).toEqual([])
    await page.close()
  }, 90_000)

  it(
    "rate limits: the switch opens their example; a query over ratelimits_v1 is the API's answer; each family keeps its own",
    async () => {
      const { errors, page, requests } = await open()
      await page.goto(`${base}/dashboard?section=query`)
      await signIn(page, admin)
      const verificationsDraft =
        "SELECT outcome, count() AS total FROM key_verifications_v1 GROUP BY outcome ORDER BY outcome"
      await editor(page).fill(verificationsDraft)
      await page.getByRole("button", { name: "Run" }).click()
      await answer(page).locator("tbody tr").first().waitFor()
      const outcomes = await rowsOf("analytics.getVerifications", verificationsDraft)

      await page.getByRole("radio", { name: "Rate limits" }).check()
      await page.waitForURL((url) => url.searchParams.get("family") === "ratelimits")
      expect(await editor(page).inputValue()).toContain("FROM ratelimits_v1")
      expect(await answer(page).count()).toBe(0)
      const decisions = "SELECT identifier, count() AS total, sum(passed) AS passed, total - passed AS blocked,\n" +
        "  max(time) AS last\nFROM ratelimits_v1\nGROUP BY identifier\nORDER BY identifier"
      await editor(page).fill(decisions)
      await page.getByRole("button", { name: "Run" }).click()
      await answer(page).locator("tbody tr").first().waitFor()
      const rows = await rowsOf("analytics.getRatelimits", decisions)
      expect(rows.map(({ blocked, identifier, passed, total }) => ({ identifier, total, passed, blocked }))).toEqual([
        { identifier: "user_1", total: 5, passed: 2, blocked: 3 },
        { identifier: "user_2", total: 3, passed: 3, blocked: 0 },
        { identifier: "user_3", total: 2, passed: 1, blocked: 1 }
      ])
      const shownTable = await table(answer(page))
      expect(shownTable.headers).toEqual(["identifier", "total", "passed", "blocked", "last"])
      expect(shownTable.cells.map((cells) => cells.slice(0, 4))).toEqual(
        rows.map((row) => [row.identifier, row.total, row.passed, row.blocked].map(String))
      )
      // `last` holds unix ms: shown as an ISO date too.
      expect(shownTable.cells.map((cells) => cells[4])).toEqual(
        rows.map((row) => `${new Date(row.last as number).toISOString()} ${row.last}`)
      )
      await page.screenshot({ path: join(screenshots, "query-ratelimits.png"), fullPage: true })

      // Back to verifications: its draft and its answer as they were.
      await page.getByRole("radio", { name: "Verifications" }).check()
      expect(await editor(page).inputValue()).toBe(verificationsDraft)
      expect(await table(answer(page))).toEqual(expected(outcomes))

      // A bookmark of the rate-limit view runs its query as it opens.
      await page.goto(
        `${base}/dashboard?${new URLSearchParams({ section: "query", family: "ratelimits", q: decisions })}`
      )
      await answer(page).locator("tbody tr").first().waitFor()
      expect(await editor(page).inputValue()).toBe(decisions)
      expect((await table(answer(page))).cells.map((cells) => cells[0])).toEqual(["user_1", "user_2", "user_3"])
      expect(requests.every((u) => u.startsWith(base))).toBe(true)
      expect(errors).toEqual([])
      await page.close()
    },
    60_000
  )

  it("every example and every table's rows answer in both families", async () => {
    const { errors, page } = await open()
    await page.goto(`${base}/dashboard?section=query`)
    await signIn(page, admin)
    for (const family of ["Verifications", "Rate limits"]) {
      await page.getByRole("radio", { name: family }).check()
      const help = page.getByRole("complementary")
      await help.locator("details").evaluate((details: any) => {
        details.open = true
      })
      const buttons = help.getByRole("button")
      const names = await buttons.allTextContents()
      expect(names.length).toBe(family === "Verifications" ? 6 + 5 : 5 + 5)
      for (let i = 0; i < names.length; i++) {
        // Each run starts from no answer shown, so the count below is this run's.
        await editor(page).fill("SELECT 1 AS marker")
        await page.getByRole("button", { name: "Run" }).click()
        await expect.poll(() => answer(page).locator("thead th").allTextContents()).toEqual(["marker"])
        await buttons.nth(i).click()
        await expect.poll(() => answer(page).locator("thead th").first().textContent(), { message: names[i] }).not.toBe(
          "marker"
        )
        expect(await page.getByRole("alert").count(), names[i]).toBe(0)
        expect(await rowCount(page), names[i]).toMatch(/^[\d,]+ rows?$/)
        // The editor holds what ran, and the API answers it the same.
        const ran = await editor(page).inputValue()
        const route = family === "Verifications" ? "analytics.getVerifications" : "analytics.getRatelimits"
        const rows = await rowsOf(route, ran)
        expect(await rowCount(page), names[i]).toBe(
          `${rows.length.toLocaleString("en-US")} ${rows.length === 1 ? "row" : "rows"}`
        )
        expect(rows.length, names[i]).toBeGreaterThan(0)
      }
    }
    expect(errors).toEqual([])
    await page.close()
  }, 120_000)

  it(
    "a key that may read rate-limit analytics only: Query offers rate limits alone, and a verifications bookmark opens them",
    async () => {
      const { errors, page } = await open()
      await page.goto(
        `${base}/dashboard?${new URLSearchParams({ section: "query", family: "verifications", q: "SELECT 1 AS one" })}`
      )
      await signIn(page, ratelimitsOnly)
      await editor(page).waitFor()
      expect(await page.getByRole("navigation", { name: "sections" }).getByRole("link").allTextContents()).toEqual([
        "Usage",
        "Query"
      ])
      expect(await page.getByRole("radio").count()).toBe(0)
      expect(await page.getByLabel(/^SQL query over rate limits/).count()).toBe(1)
      expect(await editor(page).inputValue()).toContain("FROM ratelimits_v1")
      expect(new URL(page.url()).searchParams.get("family")).toBe("ratelimits")
      await page.getByRole("button", { name: "Run" }).click()
      await answer(page).locator("tbody tr").first().waitFor()
      const rows = await rowsOf("analytics.getRatelimits", await editor(page).inputValue())
      expect(await table(answer(page))).toEqual(expected(rows))
      expect(errors).toEqual([])
      await page.close()
    },
    60_000
  )
})
