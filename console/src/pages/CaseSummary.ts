/** A case's keys, status, obligations and state, for the task page; a refusal when the token may not read cases. */
import * as Api from "../Api.js"
import { facts, h, json } from "../Dom.js"
import * as Format from "../Format.js"
import * as Refusal from "../Refusal.js"
import { obligations } from "./Obligations.js"

export const caseSummary = async (id: string): Promise<HTMLElement> => {
  const answer = await Api.get(`/cases/${Api.seg(id)}`)
  if (!answer.ok) return h("div", {}, Refusal.view(answer, "The case could not be read:"))
  const c = answer.body.case
  return h(
    "div",
    {},
    facts([
      ["Case", Format.link(`/cases/${c.id}`, `${c.kind} ${c.id}`)],
      ["Status", c.status],
      ["Keys", Format.keys(c.correlation)],
    ]),
    h("h3", {}, "Obligations"),
    obligations(answer.body.deadlines),
    h("h3", {}, "State"),
    json(c.state),
  )
}
