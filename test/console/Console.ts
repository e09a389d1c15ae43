/**
 * The console in headless Chromium against a real `serve` (issue 36's acceptance): a reviewer
 * sees a new task appear, decides it and watches its run resume and succeed; the agent's token
 * has no worklist; an excluded actor's decide is refused as the API states it; an operator finds
 * a quarantined run and reads why, and halts and resumes the tenant; tenant B's token shows none
 * of tenant A's data. Every page is checked by axe-core and photographed at two widths.
 */
import type { Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { build } from "../../console/Build.js"
import * as Browser from "./Browser.js"
import * as Fixture from "./Fixture.js"

const TEST_MS = 240_000

/** The focused element as `TAG#id`. */
const focused = (page: Page) =>
  page.evaluate(() => {
    const active = (globalThis as { document?: { activeElement?: { tagName: string; id: string } } }).document
      ?.activeElement
    return active === undefined ? "" : `${active.tagName}${active.id === "" ? "" : `#${active.id}`}`
  })

export const suite = (backend: Fixture.Backend) =>
  describe(`console (${backend.name})`, () => {
    let f: Fixture.Fixture | undefined
    let browser: Browser.Browser | undefined
    const fixture = () => f as Fixture.Fixture
    const open = async () => {
      const tab = await Browser.open(browser as Browser.Browser, fixture().base)
      tabs.push(tab)
      return tab
    }
    const tabs: Array<{ page: Page; problems: Array<string> }> = []
    const audit = (page: Page, name: string) => Browser.audit(page, backend.name, name)

    beforeAll(async () => {
      // The bundle the server serves is this tree's, never a stale one.
      await build()
      // Each kept as it comes, so a browser that fails to launch still leaves a server for afterAll to stop.
      const [server, launched] = await Promise.allSettled([Fixture.start(backend), Browser.launch()])
      if (server.status === "fulfilled") f = server.value
      if (launched.status === "fulfilled") browser = launched.value
      if (server.status === "rejected") throw server.reason
      if (launched.status === "rejected") throw launched.reason
    }, 180_000)

    afterAll(async () => {
      // No page logged an error (a refused script, style or connection under the CSP would).
      const problems = tabs.flatMap((t) => t.problems)
      await Promise.all([browser?.close(), Fixture.stop(f)])
      expect(problems).toEqual([])
    }, 60_000)

    it(
      "a reviewer sees a new task appear without a reload, decides it, and the run resumes and succeeds",
      async () => {
        const { page } = await open()
        await Browser.signIn(page, fixture().tokens.alice)
        await page.getByRole("heading", { name: /^Yours to decide/ }).waitFor()
        // Marks this document: a reload would lose the mark.
        await page.evaluate(() => Object.assign(globalThis, { sameDocument: true }))
        const refund = await Fixture.startRefund(fixture())
        const link = page.locator("#may-decide + ul").locator(`a[href="#/tasks/${refund.task}"]`)
        await link.waitFor()
        expect(await page.evaluate(() => (globalThis as { sameDocument?: boolean }).sameDocument)).toBe(true)
        expect(await link.textContent()).toContain(refund.invoice)
        // A task arriving while a keyboard user is on another leaves the focus where it was.
        await link.focus()
        const second = await Fixture.startRefund(fixture())
        await page.locator(`a[href="#/tasks/${second.task}"]`).waitFor()
        expect(await focused(page)).toBe("A")
        expect(
          await page.evaluate(() =>
            (
              globalThis as { document?: { activeElement?: { getAttribute(name: string): string | null } } }
            ).document?.activeElement?.getAttribute("href"),
          ),
        ).toBe(`#/tasks/${refund.task}`)
        await audit(page, "worklist")

        await link.click()
        await Browser.heading(page, "Task: refund.approve")
        const text = await Browser.mainText(page)
        for (const shown of ["charged twice", "invoice-bot", refund.invoice, "reviewer"]) expect(text).toContain(shown)
        await audit(page, "task")
        await page.getByRole("button", { name: "Claim" }).click()
        await page.getByText("claimed by alice").waitFor()
        await page.getByLabel("Reason (recorded with the decision)").fill("two captures for one order")
        await page.getByRole("button", { name: "Decide" }).click()
        await page.getByText("Decided: approved; the run was resumed.").waitFor()
        // The page then re-reads the task and redraws it, run link included: clicking the link
        // before the redraw can hit the one it replaces (seen once on a loaded machine).
        await Browser.fact(page, "State")
          .filter({ hasText: /^completed/ })
          .waitFor()

        await page.getByRole("link", { name: refund.run }).click()
        await Browser.heading(page, /^Run /)
        // The page re-reads the run until it is sealed: the sweep fires its cooling-off timer.
        await Browser.fact(page, "Outcome")
          .filter({ hasText: /^succeeded$/ })
          .waitFor({ timeout: 120_000 })
        const timeline = await page.locator("ol.timeline").textContent()
        for (const record of ["RunSuspended", "EffectDone: payments.refund", "EffectDone: ledger.post", "RunSealed"]) {
          expect(timeline).toContain(record)
        }
        await audit(page, "run")

        await page.getByRole("link", { name: refund.case }).click()
        await Browser.heading(page, "Case: invoice-dispute")
        expect(await Browser.mainText(page)).toContain(`invoice: ${refund.invoice}`)
        await audit(page, "case")
      },
      TEST_MS,
    )

    it(
      "the agent's token sees no worklist: the API's refusal, and no task; signing out forgets the token",
      async () => {
        const refund = await Fixture.startRefund(fixture())
        const { page } = await open()
        // By keyboard alone: the page's heading has the focus, the token field is next; Enter signs in.
        await Browser.heading(page, "Sign in")
        expect(await focused(page)).toBe("H1")
        await page.keyboard.press("Tab")
        expect(await focused(page)).toBe("INPUT#token")
        await page.keyboard.type(fixture().tokens.agent)
        await page.keyboard.press("Enter")
        await Browser.heading(page, "Worklist")
        await page.getByText("This credential has no worklist.").waitFor()
        const alert = await page.getByRole("alert").textContent()
        expect(alert).toContain("403 Forbidden: no policy permits api:task.list")
        expect(await page.locator(`a[href="#/tasks/${refund.task}"]`).count()).toBe(0)
        expect(await page.getByRole("heading", { name: /^Yours to decide/ }).count()).toBe(0)
        await audit(page, "worklist-agent")
        // The new page's heading has the focus, so a screen reader announces where it is.
        expect(
          await page.evaluate(
            () =>
              (globalThis as { document?: { activeElement?: { tagName?: string } } }).document?.activeElement?.tagName,
          ),
        ).toBe("H1")

        await page.getByRole("button", { name: "Sign out" }).click()
        await Browser.heading(page, "Sign in")
        expect(
          await page.evaluate(() => (globalThis as { sessionStorage?: { length: number } }).sessionStorage?.length),
        ).toBe(0)
        await audit(page, "sign-in")
      },
      TEST_MS,
    )

    it(
      "a token the server does not know is refused, and the page says the way out",
      async () => {
        const { page } = await open()
        await Browser.signIn(page, "not-a-token-of-this-server")
        const alert = page.getByRole("alert")
        await alert.waitFor()
        expect(await alert.textContent()).toContain("401 Unauthorized: unknown credential")
        expect(await alert.textContent()).toContain("sign out and sign in with another")
      },
      TEST_MS,
    )

    it(
      "an excluded actor sees the task as one it may not decide, and its decide shows the four-eyes refusal",
      async () => {
        const refund = await Fixture.startRefund(fixture(), "mallory")
        const { page } = await open()
        await Browser.signIn(page, fixture().tokens.mallory)
        const link = page.locator("#may-not-decide + p + ul").locator(`a[href="#/tasks/${refund.task}"]`)
        await link.waitFor()
        await link.click()
        await Browser.heading(page, "Task: refund.approve")
        await page.getByText("The API says this credential may not decide this task").waitFor()
        await page.getByLabel("Reason (recorded with the decision)").fill("looks right to me")
        await page.getByRole("button", { name: "Decide" }).click()
        const refusal = page.getByRole("alert")
        await refusal.waitFor()
        expect(await refusal.textContent()).toContain(
          '403 Excluded: "mallory" may not decide this task (four-eyes rule)',
        )
        await audit(page, "task-excluded")
      },
      TEST_MS,
    )

    it(
      "another reviewer takes a claimed task over, then releases it",
      async () => {
        const refund = await Fixture.startRefund(fixture())
        await Fixture.claim(fixture(), "alice", refund.task)
        const { page } = await open()
        await Browser.signIn(page, fixture().tokens.carl)
        await page.goto(`${fixture().base}/console#/tasks/${refund.task}`)
        await Browser.heading(page, "Task: refund.approve")
        expect(await Browser.fact(page, "State").textContent()).toBe("claimed by alice")
        await page.getByRole("button", { name: "Take over from alice" }).click()
        await page.getByText("Taken over from alice.").waitFor()
        await Browser.fact(page, "State")
          .filter({ hasText: /^claimed by carl$/ })
          .waitFor()
        await page.getByRole("button", { name: "Release" }).click()
        await page.getByText("Released.").waitFor()
        await Browser.fact(page, "State")
          .filter({ hasText: /^open$/ })
          .waitFor()
      },
      TEST_MS,
    )

    it(
      "a run's page lists its policy decisions; the approval's task shows the effect, its arguments and outbound label",
      async () => {
        const { run, task } = await Fixture.decidedRun(fixture())
        const { page } = await open()
        await Browser.signIn(page, fixture().tokens.alice)
        await page.goto(`${fixture().base}/console#/runs/${run}`)
        await page.getByRole("heading", { name: "Refused: console-test.send" }).waitFor()
        const text = await Browser.mainText(page)
        for (const shown of [
          Fixture.BLOCKED,
          "Released a value",
          "the operator typed the ticket",
          "Approval: console-test.send, waiting",
          Fixture.EYES,
        ])
          expect(text).toContain(shown)
        await audit(page, "run-decisions")

        await page.getByRole("link", { name: task }).click()
        await Browser.heading(page, "Task: approve console-test.send")
        expect(await page.locator(`dt:text-is("Effect") + dd`).textContent()).toBe("console-test.send")
        expect(JSON.parse((await page.locator(`dt:text-is("Arguments") + dd`).textContent()) ?? "")).toEqual({
          to: "ann",
        })
        expect(await page.locator(`dt:text-is("Outbound label") + dd`).textContent()).toBe("trusted")
        await audit(page, "task-approval")
        await page.getByRole("button", { name: "Claim" }).click()
        await page.getByText("claimed by alice").waitFor()
        await page.getByLabel("Reason (recorded with the decision)").fill("ann is expected")
        await page.getByRole("button", { name: "Decide" }).click()
        await page.getByText("Decided: approved; the run was resumed.").waitFor()
        await Fixture.outcome(fixture(), run, "succeeded")
        await page.getByRole("link", { name: run }).click()
        await page.getByRole("heading", { name: "Approval: console-test.send, approved" }).waitFor()
        expect(await Browser.mainText(page)).toContain("approved by alice: ann is expected")
      },
      TEST_MS,
    )

    it(
      "an operator finds the quarantined run first and reads why; halts and resumes the tenant",
      async () => {
        const run = await Fixture.quarantinedRun(fixture())
        const { page } = await open()
        await Browser.signIn(page, fixture().tokens.ops)
        await page.getByRole("link", { name: "Runs", exact: true }).click()
        await page.getByRole("heading", { name: "Quarantined runs" }).waitFor()
        await audit(page, "runs")
        await page.getByRole("link", { name: run }).click()
        await Browser.fact(page, "Outcome")
          .filter({ hasText: /^quarantined$/ })
          .waitFor()
        const reason = await Browser.fact(page, "Reason").textContent()
        // The divergence, as the runtime worded it: the journaled effect and the one offered instead.
        expect(reason).toMatch(/console-test\.look_up ek:\S+.*console-test\.look_up ek:/s)
        await audit(page, "run-quarantined")

        await page.getByRole("link", { name: "Cases", exact: true }).click()
        await page.getByRole("heading", { name: "Census" }).waitFor()
        await page.getByText("Open cases", { exact: true }).waitFor()
        await audit(page, "cases")

        await page.getByRole("link", { name: "Operations", exact: true }).click()
        await page.getByText("Ready: the store answers.").waitFor()
        await page.getByText("Admitting runs.", { exact: true }).waitFor()
        await audit(page, "operations")
        await page.getByLabel("Reason").fill("incident 42: payments provider down")
        await page.getByRole("button", { name: "Halt" }).click()
        await page.getByText("Halted: incident 42: payments provider down").waitFor()
        const refused = await fetch(`${fixture().base}/runs`, {
          method: "POST",
          headers: { authorization: `Bearer ${fixture().tokens.ops}`, "content-type": "application/json" },
          body: JSON.stringify({ capability: "console-test.drifts", input: { ticket: "halted" } }),
        })
        expect(refused.status).toBe(429)
        await audit(page, "operations-halted")
        await page.getByRole("button", { name: "Resume the tenant" }).click()
        await page.getByText("Admitting runs.", { exact: true }).waitFor()
      },
      TEST_MS,
    )

    it(
      "an operator cancels a waiting run from its page, and the page shows it cancelled with the reason",
      async () => {
        const refund = await Fixture.startRefund(fixture())
        const { page } = await open()
        await Browser.signIn(page, fixture().tokens.ops)
        await page.goto(`${fixture().base}/console#/runs/${refund.run}`)
        await Browser.fact(page, "Waiting for").filter({ hasText: "event agentplane.task.decided" }).waitFor()
        await page.getByLabel("Reason").fill("customer withdrew")
        await page.getByRole("button", { name: "Request cancellation" }).click()
        await page.getByText("Cancellation requested.", { exact: true }).waitFor()
        // The runtime honours it at the run's wait, in the background; the page re-reads the run.
        await Browser.fact(page, "Outcome")
          .filter({ hasText: /^cancelled$/ })
          .waitFor()
        expect(await Browser.fact(page, "Reason").textContent()).toBe("cancelled by ops: customer withdrew")
        await audit(page, "run-cancelled")
      },
      TEST_MS,
    )

    it(
      "tenant B's token never shows tenant A's task, case or run",
      async () => {
        const refund = await Fixture.startRefund(fixture())
        const quarantined = await Fixture.quarantinedRun(fixture())
        const { page } = await open()
        await Browser.signIn(page, fixture().tokens.bea)
        await page.getByRole("heading", { name: /^Yours to decide/ }).waitFor()
        expect(await Browser.mainText(page)).not.toContain(refund.invoice)
        expect(await page.locator(`a[href="#/tasks/${refund.task}"]`).count()).toBe(0)

        await page.goto(`${fixture().base}/console#/cases?status=open`)
        await page.getByRole("heading", { name: "By status" }).waitFor()
        expect(await Browser.mainText(page)).not.toContain(refund.invoice)
        await page.goto(`${fixture().base}/console#/runs?outcome=quarantined`)
        await page.getByRole("heading", { name: "Quarantined runs" }).waitFor()
        expect(await Browser.mainText(page)).not.toContain(quarantined)

        // Each page clears the last before it draws its heading, so an alert under the new heading is its own.
        for (const [route, title, refusal] of [
          [`/tasks/${refund.task}`, "Task", "404 TaskNotFound"],
          [`/cases/${refund.case}`, "Case", "404 NotFound"],
          [`/runs/${refund.run}`, /^Run run_/, "404 NotFound"],
        ] as const) {
          await page.goto(`${fixture().base}/console#${route}`)
          await Browser.heading(page, title)
          await page.getByRole("alert").filter({ hasText: refusal }).waitFor()
          expect(await Browser.mainText(page)).not.toContain(refund.invoice)
        }
      },
      TEST_MS,
    )
  })
