/**
 * Operations: readiness, the tenant's emergency stop (halt with a reason, resume), its gauges
 * and the dead letters. The last sweep's report is not exposed by the API: the page says so.
 */
import * as Api from "../Api.js"
import { facts, fill, h } from "../Dom.js"
import * as Format from "../Format.js"
import { type Page, title } from "../Page.js"
import * as Refusal from "../Refusal.js"

export const operations: Page = async ({ main, current }) => {
  const region = h("div", {})
  const outcome = h("div", {})
  main.append(title("Operations"), outcome, region)
  const draw = async () => {
    const [ready, census, letters] = await Promise.all([
      Api.get("/readyz"),
      Api.get("/census"),
      Api.get("/dead-letters?limit=50"),
    ])
    if (!current()) return
    const reason = h("input", { id: "halt-reason", type: "text", required: true, autocomplete: "off" })
    const act = async (method: "PUT" | "DELETE", body: unknown, done: string) => {
      const answer = await Api.call(method, "/admin/halt", body)
      fill(outcome, answer.ok ? h("p", { class: "done", role: "status" }, done) : Refusal.view(answer, "Refused:"))
      await draw()
    }
    const c = census.body
    fill(
      region,
      h("h2", {}, "Readiness"),
      h("p", {}, ready.ok ? "Ready: the store answers." : `Not ready: ${Refusal.text(ready)}`),
      h("h2", {}, "Tenant"),
      !census.ok
        ? Refusal.view(census, "The census is not shown:")
        : [
            h("p", { id: "halt-state" }, c.halted === null ? "Admitting runs." : `Halted: ${c.halted}`),
            c.halted === null
              ? h(
                  "form",
                  {
                    "aria-labelledby": "halt-heading",
                    onsubmit: (event) => {
                      event.preventDefault()
                      void act("PUT", { reason: reason.value }, "Halted: no new runs are admitted.")
                    },
                  },
                  h("h3", { id: "halt-heading" }, "Halt the tenant"),
                  h("label", { for: "halt-reason" }, "Reason"),
                  reason,
                  h("button", { type: "submit" }, "Halt"),
                )
              : h(
                  "button",
                  { type: "button", onclick: () => void act("DELETE", undefined, "Resumed: runs are admitted again.") },
                  "Resume the tenant",
                ),
            h("h3", {}, "Gauges"),
            facts([
              ["Open cases", String(c.openCases)],
              ["Oldest open case (s)", c.oldestCaseAgeSecs === null ? "none" : String(c.oldestCaseAgeSecs)],
              ["Obligations due", String(c.dueDeadlines)],
              ["Pending timers", String(c.pendingTimers)],
              ["Open tasks", String(c.openTasks)],
              ["Running runs", String(c.runningRuns)],
            ]),
          ],
      h("h2", {}, "Last sweep"),
      h("p", { class: "note" }, "The API does not expose the last sweep's report; agentplane sweep prints it."),
      h("h2", {}, "Dead letters"),
      !letters.ok
        ? Refusal.view(letters)
        : letters.body.items.length === 0
          ? h("p", {}, "None.")
          : h(
              "ul",
              { class: "cards" },
              // biome-ignore lint/suspicious/noExplicitAny: a dead letter as the API's JSON shows it
              letters.body.items.map((d: any) =>
                h(
                  "li",
                  {},
                  facts([
                    ["Event", `${d.event.kind} ${d.event.id} from ${d.event.source}`],
                    ["Received", Format.instant(d.receivedAt)],
                    ["Why", d.reason],
                  ]),
                ),
              ),
            ),
    )
  }
  await draw()
  return undefined
}
