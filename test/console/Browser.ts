/**
 * Headless Chromium for the console tests: Debian's `chromium`, driven by playwright-core (no
 * browser download), a fresh profile per launch. `audit` runs axe-core in the page and writes
 * screenshots at a desktop and a phone width to `.tmp/console-screenshots/` (git-ignored).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type BrowserContext, chromium, type Page } from "playwright-core"
import { expect } from "vitest"

export const EXECUTABLE = "/usr/bin/chromium"

export const SHOTS = join(import.meta.dirname, "..", "..", ".tmp", "console-screenshots")

const DESKTOP = { width: 1280, height: 800 }
const PHONE = { width: 390, height: 844 }

/**
 * Generous, for a loaded 2-core machine: every wait is for a condition, so a slow page only
 * takes longer; only a page that never gets there fails.
 */
export const WAIT_MS = 60_000

export interface Browser {
  readonly context: BrowserContext
  readonly close: () => Promise<void>
}

export const launch = async (): Promise<Browser> => {
  const profile = mkdtempSync(join(tmpdir(), "agentplane-chromium-"))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: EXECUTABLE,
    headless: true,
    viewport: DESKTOP,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  })
  context.setDefaultTimeout(WAIT_MS)
  return {
    context,
    close: async () => {
      await context.close()
      rmSync(profile, { recursive: true, force: true })
    },
  }
}

/**
 * A new tab (so a new, empty session storage) on the console. Every console message of level
 * error and every uncaught exception is collected in `problems`: a CSP violation shows there,
 * and so does an asset that failed to load. The API's refusals (a 403 the page shows, a 404 for
 * another tenant's run) are logged by the browser too; those are the tests' subject, not problems.
 */
export const open = async (browser: Browser, base: string) => {
  const page = await browser.context.newPage()
  const problems: Array<string> = []
  page.on("console", (message) => {
    const api = !new URL(message.location().url || base).pathname.startsWith("/console")
    if (message.type() === "error" && !(api && message.text().startsWith("Failed to load resource"))) {
      problems.push(`${message.text()} (${message.location().url})`)
    }
  })
  page.on("pageerror", (error) => problems.push(String(error)))
  await page.goto(`${base}/console`)
  return { page, problems }
}

/** Signs in with `token` and waits for the worklist, where a sign-in lands. */
export const signIn = async (page: Page, token: string): Promise<void> => {
  await page.getByLabel("Bearer token").fill(token)
  await page.getByRole("button", { name: "Sign in" }).click()
  await heading(page, "Worklist")
}

/** Waits for the page whose heading is `name`. */
export const heading = (page: Page, name: string | RegExp) => page.getByRole("heading", { level: 1, name }).waitFor()

/** The value of the page's first list of facts (the page's subject) under `label`. */
export const fact = (page: Page, label: string) =>
  page.locator("dl.facts").first().locator(`dt:text-is("${label}") + dd`)

/** The text of the page's main region. */
export const mainText = async (page: Page): Promise<string> => (await page.locator("main").textContent()) ?? ""

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8")

interface Violation {
  readonly id: string
  readonly impact: string | null
  readonly help: string
  readonly nodes: ReadonlyArray<{ readonly target: ReadonlyArray<string> }>
}

/**
 * axe-core on the page as it is: no serious or critical finding. Evaluated through the DevTools
 * protocol, which the page's CSP does not govern (an injected script tag would be refused).
 * Then a screenshot at each width, named `<backend>-<name>-<width>.png`.
 */
export const audit = async (page: Page, backend: string, name: string): Promise<void> => {
  await page.evaluate(axeSource)
  const violations = await page.evaluate(async () => {
    // biome-ignore lint/suspicious/noExplicitAny: axe and document are the page's globals
    const page = globalThis as any
    const results = await page.axe.run(page.document, { resultTypes: ["violations"] })
    return results.violations as ReadonlyArray<Violation>
  })
  const grave = violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.impact} ${v.id}: ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`)
  expect(grave, `axe on ${name}`).toEqual([])
  mkdirSync(SHOTS, { recursive: true })
  for (const size of [DESKTOP, PHONE]) {
    await page.setViewportSize(size)
    await page.screenshot({ path: join(SHOTS, `${backend}-${name}-${size.width}.png`), fullPage: true })
  }
  await page.setViewportSize(DESKTOP)
}
