/**
 * One run: its outcome or why it waits, why it concluded, its policy decisions, its journal as a
 * timeline, and the operator's verbs the API offers (cancel). While the run is not sealed the page re-reads it
 * every `POLL_MS`, so a run resumed in the background is seen going on and concluding.
 */
import * as Api from "../Api.js"
import { announce, facts, fill, h } from "../Dom.js"
import * as Format from "../Format.js"
import { type Page, title } from "../Page.js"
import * as Refusal from "../Refusal.js"
import { policyDecisions } from "./PolicyDecisions.js"
import { timeline } from "./Timeline.js"

export const POLL_MS = 2000

const SEALED = new Set(["succeeded", "quarantined", "cancelled", "compensated", "swept"])

export const runPage: Page = async ({ main, segments, current }) => {
  const id = segments[0] ?? ""
  const region = h("div", {})
  const outcome = h("div", {})
  main.append(title(`Run ${Format.short(id)}`), outcome, region)
  let last: string | undefined
  let timer: ReturnType<typeof setInterval> | undefined
  const refresh = async () => {
    const [run, journal] = await Promise.all([
      Api.get(`/runs/${Api.seg(id)}`),
      Api.get(`/runs/${Api.seg(id)}/journal?limit=500`),
    ])
    if (!current()) return
    if (!run.ok) {
      fill(region, Refusal.view(run))
      clearInterval(timer)
      return
    }
    const view = run.body
    const state = JSON.stringify([view.head, view.outcome])
    if (state === last) return
    if (last !== undefined) announce(`The run is now ${view.outcome ?? "open"}`)
    last = state
    // biome-ignore lint/suspicious/noExplicitAny: journal entries as the API's JSON shows them
    const entries: Array<any> = journal.ok ? journal.body.items : []
    const sealed = entries.filter((e) => e.record.kind === "RunSealed").at(-1)
    // The run's own conclusion reason when the API gives one, else the journal's seal record's.
    const reason = view.reason ?? sealed?.record.reason ?? null
    const s = view.suspended
    fill(
      region,
      facts([
        ["Id", view.run],
        ["Outcome", view.outcome ?? "open (not concluded)"],
        ["Reason", view.outcome === null ? null : (reason ?? "none given")],
        [
          "Waiting for",
          s === null
            ? null
            : s.reason === "awaiting_event"
              ? `event ${s.kind}${s.until === null ? "" : ` until ${s.until}`}`
              : ["the time ", Format.instant(s.until)],
        ],
        ["Case", view.case === null ? "none" : Format.link(`/cases/${view.case}`, view.case)],
        ["Journal head", `record ${view.head.seq}`],
      ]),
      view.outcome === null ? cancel(id, outcome) : null,
      h("p", { class: "note" }, "Raising a budget and resuming a run are not offered by the API yet."),
      h("h2", {}, "Policy decisions"),
      policyDecisions(view.decisions),
      h("h2", {}, "Journal"),
      journal.ok ? timeline(entries) : Refusal.view(journal, "The journal is not shown:"),
      journal.ok && journal.body.truncated ? h("p", { class: "note" }, "Later records are not shown.") : null,
    )
    if (SEALED.has(view.outcome)) clearInterval(timer)
  }
  await refresh()
  timer = setInterval(() => void refresh(), POLL_MS)
  return () => clearInterval(timer)
}

const cancel = (run: string, outcome: HTMLElement): HTMLElement => {
  const reason = h("input", { id: "cancel-reason", type: "text", required: true, autocomplete: "off" })
  return h(
    "form",
    {
      "aria-labelledby": "cancel-heading",
      onsubmit: async (event) => {
        event.preventDefault()
        const answer = await Api.call("POST", `/runs/${Api.seg(run)}/cancel`, { reason: reason.value })
        fill(
          outcome,
          answer.ok
            ? h(
                "p",
                { class: "done", role: "status" },
                answer.body.requested ? "Cancellation requested." : "Cancellation was already requested.",
              )
            : Refusal.view(answer, "Refused:"),
        )
      },
    },
    h("h2", { id: "cancel-heading" }, "Cancel"),
    h("label", { for: "cancel-reason" }, "Reason"),
    reason,
    h("button", { type: "submit" }, "Request cancellation"),
  )
}
