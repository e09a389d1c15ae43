/** Runs by outcome, quarantined first (the runs that need a person), newest conclusion first. */
import * as Api from "../Api.js"
import { add, h } from "../Dom.js"
import * as Format from "../Format.js"
import { type Page, title } from "../Page.js"
import * as Refusal from "../Refusal.js"

const OUTCOMES = ["quarantined", "exhausted", "failed", "cancelled", "compensated", "swept", "succeeded"] as const

export const runs: Page = async ({ main, query, current }) => {
  const outcome = OUTCOMES.find((o) => o === query.get("outcome")) ?? "quarantined"
  const answer = await Api.get(`/runs?outcome=${outcome}&limit=200`)
  if (!current()) return undefined
  add(
    main,
    title("Runs"),
    h(
      "ul",
      { class: "tabs", "aria-label": "Outcome" },
      OUTCOMES.map((o) =>
        h("li", {}, h("a", { href: `#/runs?outcome=${o}`, ...(o === outcome ? { "aria-current": "page" } : {}) }, o)),
      ),
    ),
    h("h2", { id: "listed" }, `${outcome[0]?.toUpperCase()}${outcome.slice(1)} runs`),
    !answer.ok
      ? Refusal.view(answer)
      : answer.body.items.length === 0
        ? h("p", {}, `No ${outcome} runs.`)
        : h(
            "ul",
            { "aria-labelledby": "listed" },
            answer.body.items.map((r: string) => h("li", {}, Format.link(`/runs/${r}`, r))),
          ),
    answer.ok && answer.body.truncated ? h("p", { class: "note" }, "More runs than are shown here.") : null,
  )
  return undefined
}
