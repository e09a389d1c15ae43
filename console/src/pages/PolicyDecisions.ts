/**
 * A run's policy decisions as `GET /runs/{run}` lists them (§7.12): each refusal (the ones the
 * run handled too), each approval the policy asked for with who decided it or the task that
 * waits, each release. The API derives them from the journal; the page only words them.
 */
import { type Child, facts, h } from "../Dom.js"
import * as Format from "../Format.js"

// biome-ignore lint/suspicious/noExplicitAny: decisions as the API's JSON shows them
export const policyDecisions = (decisions: ReadonlyArray<any>): HTMLElement =>
  decisions.length === 0
    ? h("p", {}, "None: no effect of this run was refused, held for approval or released.")
    : h(
        "ol",
        { class: "cards decisions" },
        decisions.map((d) => h("li", {}, h("h3", {}, heading(d)), facts(details(d)))),
      )

// internal

// biome-ignore lint/suspicious/noExplicitAny: a decision's JSON
const heading = (d: any): string => {
  switch (d._tag) {
    case "Denied":
      return `Refused: ${d.action}`
    case "Approval":
      return `Approval: ${d.action ?? "an effect"}, ${
        d.decided === null ? "waiting" : d.decided.approved ? "approved" : "not approved"
      }`
    case "Released":
      return "Released a value"
    default:
      return String(d._tag)
  }
}

// biome-ignore lint/suspicious/noExplicitAny: a decision's JSON
const details = (d: any): ReadonlyArray<readonly [string, Child]> => {
  const at: ReadonlyArray<readonly [string, Child]> = [["Where", `record ${d.seq}, step ${d.step} (${d.phase})`]]
  switch (d._tag) {
    case "Denied":
      return [["Reason", d.reason], ["Resource", d.resource], ...at]
    case "Approval":
      return [
        ["Asked of", Format.list(d.roles)],
        ["Why", d.reason],
        [
          "Decided",
          d.decided === null
            ? "not yet"
            : `${d.decided.approved ? "approved" : "not approved"} by ${d.decided.actor}: ${d.decided.reason}`,
        ],
        ["Task", d.task === null ? "none" : Format.link(`/tasks/${d.task}`, d.task)],
        ...at,
      ]
    case "Released":
      return [
        ["By", d.releaser],
        ["Why", d.release],
        ["Labels released", Format.list(d.labels)],
        ["Value digest", d.valueDigest],
        ...at,
      ]
    default:
      return at
  }
}
