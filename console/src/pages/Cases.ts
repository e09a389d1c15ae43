/**
 * Cases: the tenant's census (open cases, the oldest one's age, due obligations), the cases of
 * one status (default escalated, the ones that need a person) and the breached obligations.
 * Each part asks its own route, so a token allowed some of them sees those and the refusals.
 */
import * as Api from "../Api.js"
import { facts, h } from "../Dom.js"
import * as Format from "../Format.js"
import { type Page, title } from "../Page.js"
import * as Refusal from "../Refusal.js"
import { obligations } from "./Obligations.js"

const STATUSES = ["escalated", "open", "awaiting_human", "awaiting_external", "closed"] as const

export const cases: Page = async ({ main, query, current }) => {
  const status = STATUSES.find((s) => s === query.get("status")) ?? "escalated"
  const [census, escalated, listed, breached] = await Promise.all([
    Api.get("/census"),
    Api.get("/cases?status=escalated&limit=500"),
    Api.get(`/cases?status=${status}&limit=200`),
    Api.get("/obligations?limit=100"),
  ])
  if (!current()) return undefined
  main.append(
    title("Cases"),
    h("h2", {}, "Census"),
    census.ok
      ? facts([
          ["Open cases", String(census.body.openCases)],
          [
            "Escalated",
            escalated.ok
              ? `${escalated.body.items.length}${escalated.body.truncated ? "+" : ""}`
              : Refusal.text(escalated),
          ],
          ["Oldest open case", census.body.oldestCaseAgeSecs === null ? "none" : age(census.body.oldestCaseAgeSecs)],
          ["Obligations due", String(census.body.dueDeadlines)],
        ])
      : Refusal.view(census, "The census is not shown:"),
    h("h2", { id: "by-status" }, "By status"),
    h(
      "ul",
      { class: "tabs", "aria-label": "Case status" },
      STATUSES.map((s) =>
        h(
          "li",
          {},
          h(
            "a",
            { href: `#/cases?status=${s}`, ...(s === status ? { "aria-current": "page" } : {}) },
            s.replace("_", " "),
          ),
        ),
      ),
    ),
    !listed.ok
      ? Refusal.view(listed)
      : listed.body.items.length === 0
        ? h("p", {}, `No ${status.replace("_", " ")} cases.`)
        : h(
            "ul",
            { class: "cards", "aria-labelledby": "by-status" },
            // biome-ignore lint/suspicious/noExplicitAny: a case as the API's JSON shows it
            listed.body.items.map((c: any) =>
              h(
                "li",
                {},
                h("h3", {}, Format.link(`/cases/${c.id}`, `${c.kind} ${c.id}`)),
                facts([
                  ["Keys", Format.keys(c.correlation)],
                  ["Status", c.status],
                  ["Opened", Format.instant(c.openedAt)],
                  ["Runs", String(c.runs.length)],
                ]),
              ),
            ),
          ),
    h("h2", {}, "Breached obligations"),
    breached.ok ? obligations(breached.body.items) : Refusal.view(breached),
  )
  return undefined
}

const age = (secs: number): string =>
  secs < 3600
    ? `${Math.floor(secs / 60)} min`
    : secs < 172800
      ? `${Math.floor(secs / 3600)} h`
      : `${Math.floor(secs / 86400)} days`
