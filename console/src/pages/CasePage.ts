/** One case: keys, status, state, obligations, its runs and tasks, and its journal history. */
import * as Api from "../Api.js"
import { add, facts, h, json } from "../Dom.js"
import * as Format from "../Format.js"
import { type Page, title } from "../Page.js"
import * as Refusal from "../Refusal.js"
import { obligations } from "./Obligations.js"

export const casePage: Page = async ({ main, segments, current }) => {
  const answer = await Api.get(`/cases/${Api.seg(segments[0] ?? "")}`)
  if (!current()) return undefined
  if (!answer.ok) {
    main.append(title("Case"), Refusal.view(answer))
    return undefined
  }
  const { case: c, deadlines, tasks, history, historyTruncated } = answer.body
  add(
    main,
    title(`Case: ${c.kind}`),
    facts([
      ["Id", c.id],
      ["Status", c.status],
      ["Keys", Format.keys(c.correlation)],
      ["Opened", Format.instant(c.openedAt)],
      ["Version", String(c.version)],
    ]),
    h("h2", {}, "State"),
    json(c.state),
    h("h2", {}, "Obligations"),
    obligations(deadlines),
    h("h2", {}, "Runs"),
    c.runs.length === 0
      ? h("p", {}, "None.")
      : h(
          "ul",
          {},
          c.runs.map((r: string) => h("li", {}, Format.link(`/runs/${r}`, r))),
        ),
    h("h2", {}, "Tasks"),
    tasks.length === 0
      ? h("p", {}, "None.")
      : h(
          "ul",
          {},
          // biome-ignore lint/suspicious/noExplicitAny: a task as the API's JSON shows it
          tasks.map((t: any) =>
            h("li", {}, Format.link(`/tasks/${t.id}`, `${t.kind}: ${t.justification.summary}`), ` (${t.state})`),
          ),
        ),
    h("h2", {}, "Blobs"),
    h("p", { class: "note" }, "The API does not list a case's blobs yet."),
    h("h2", {}, "History"),
    h(
      "ol",
      {},
      // biome-ignore lint/suspicious/noExplicitAny: a history entry as the API's JSON shows it
      history.map((e: any) => h("li", {}, `${e.kind} (run ${Format.short(e.run)}, record ${e.seq})`)),
    ),
    historyTruncated ? h("p", { class: "note" }, "Older records are not shown.") : null,
  )
  return undefined
}
