/**
 * One task: what the agent proposes and why, the case and the run that asked, and the verbs
 * (claim, release, take over, decide with a reason). Every verb is the API's route with the
 * caller's token; a refusal (four eyes, a role, another holder) is shown as the API states it.
 * The decide form stays offered when the API says the caller may not decide, so the refusal is
 * the API's own, not the page's guess.
 */
import * as Api from "../Api.js"
import { type Child, facts, fill, h, json } from "../Dom.js"
import * as Format from "../Format.js"
import { type Page, title } from "../Page.js"
import * as Refusal from "../Refusal.js"
import { caseSummary } from "./CaseSummary.js"

export const taskPage: Page = async ({ main, segments, current }) => {
  const id = segments[0] ?? ""
  const answer = await Api.get(`/tasks/${Api.seg(id)}`)
  if (!current()) return undefined
  if (!answer.ok) {
    main.append(title("Task"), Refusal.view(answer))
    return undefined
  }
  const body = h("div", {})
  const outcome = h("div", {})
  main.append(outcome, body)
  // biome-ignore lint/suspicious/noExplicitAny: the task as the API's JSON shows it
  const draw = async (task: any) => {
    const j = task.justification
    // biome-ignore lint/suspicious/noExplicitAny: an answer's JSON
    type Done = (result: { body: any }) => string
    const act = async (method: "POST", path: string, payload: unknown, done: string | Done) => {
      const result = await Api.call(method, path, payload)
      if (!current()) return
      if (!result.ok) {
        fill(outcome, Refusal.view(result, "Refused:"))
        return
      }
      fill(outcome, h("p", { class: "done", role: "status" }, typeof done === "string" ? done : done(result)))
      const again = await Api.get(`/tasks/${Api.seg(task.id)}`)
      if (current() && again.ok) await draw(again.body)
    }
    const reason = h("textarea", { id: "reason", name: "reason", rows: "3", required: true })
    const approve = h("input", { type: "radio", name: "approved", id: "approve", value: "yes", checked: true })
    const reject = h("input", { type: "radio", name: "approved", id: "reject", value: "no" })
    // Open, claimed and escalated tasks still wait for a decision (`Task.isPending`).
    const pending = task.state === "open" || task.state === "claimed" || task.state === "escalated"
    fill(
      body,
      facts([
        ["Id", task.id],
        ["State", task.assignee === null ? task.state : `${task.state} by ${task.assignee}`],
        ["Priority", task.priority],
        ["Due", Format.instant(task.dueAt)],
        ["Created", Format.instant(task.createdAt)],
        ["Roles", Format.list(task.candidateRoles)],
        ["Excluded", Format.list(task.excludedActors)],
        ["On expiry", task.onExpiry],
      ]),
      task.mayDecide
        ? null
        : h(
            "p",
            { class: "note" },
            "The API says this credential may not decide this task: it is excluded (four eyes), holds none of its roles, the task is held by another, or it is no longer pending.",
          ),
      h("h2", {}, "Justification"),
      facts([
        ["Summary", j.summary],
        ["Confidence", j.confidence === null ? "not given" : String(j.confidence)],
        ["Cost", j.cost ?? "not given"],
        [
          "Evidence",
          j.evidence.length === 0
            ? "none"
            : h(
                "ul",
                {},
                j.evidence.map((e: string) => h("li", {}, e)),
              ),
        ],
      ]),
      h("h3", {}, "Proposed action"),
      proposed(j.proposedAction),
      pending
        ? [
            h("h2", {}, "Act"),
            h(
              "div",
              { class: "actions" },
              task.state !== "claimed"
                ? h(
                    "button",
                    {
                      type: "button",
                      onclick: () => void act("POST", `/tasks/${task.id}/claim`, undefined, "Claimed."),
                    },
                    "Claim",
                  )
                : [
                    h(
                      "button",
                      {
                        type: "button",
                        class: "secondary",
                        onclick: () => void act("POST", `/tasks/${task.id}/release`, undefined, "Released."),
                      },
                      "Release",
                    ),
                    h(
                      "button",
                      {
                        type: "button",
                        class: "secondary",
                        onclick: () =>
                          void act(
                            "POST",
                            `/tasks/${task.id}/takeover`,
                            { from: task.assignee },
                            `Taken over from ${task.assignee}.`,
                          ),
                      },
                      `Take over from ${task.assignee}`,
                    ),
                  ],
            ),
            h(
              "form",
              {
                "aria-labelledby": "decide-heading",
                onsubmit: (event) => {
                  event.preventDefault()
                  void act(
                    "POST",
                    `/tasks/${task.id}/decide`,
                    { approved: approve.checked, reason: reason.value },
                    (r) =>
                      `Decided: ${approve.checked ? "approved" : "rejected"}; the run was ${r.body.delivery.result}.`,
                  )
                },
              },
              h("h3", { id: "decide-heading" }, "Decide"),
              h(
                "fieldset",
                {},
                h("legend", {}, "Decision"),
                h("label", { class: "choice" }, approve, " Approve"),
                h("label", { class: "choice" }, reject, " Reject"),
              ),
              h("label", { for: "reason" }, "Reason (recorded with the decision)"),
              reason,
              h("button", { type: "submit" }, "Decide"),
            ),
          ]
        : null,
      h("h2", {}, "Run"),
      h("p", {}, "Asked by run ", Format.link(`/runs/${task.run}`, task.run)),
      task.case === null ? null : [h("h2", {}, "Case"), await caseSummary(task.case)],
    )
  }
  await draw(answer.body)
  // The heading last: once it shows, the task, its case and its run are on the page.
  main.prepend(title(`Task: ${answer.body.kind}`))
  return undefined
}

// internal

/**
 * What the task would let happen. An approval the policy asked for (§7.12) proposes the effect:
 * its kind, its arguments and the outbound label of the step, each shown as such; any other
 * proposal is shown as the JSON the agent wrote.
 */
// biome-ignore lint/suspicious/noExplicitAny: a proposal's JSON
const proposed = (action: any): Child =>
  action !== null && typeof action === "object" && typeof action.kind === "string" && "outbound_label" in action
    ? facts([
        ["Effect", action.kind],
        ["Arguments", json(action.args ?? null)],
        [
          "Outbound label",
          action.outbound_label === "untrusted"
            ? "untrusted: the step had received input from outside (see the evidence)"
            : String(action.outbound_label),
        ],
      ])
    : json(action)
