/**
 * The worklist: the pending tasks the caller's roles may work, most pressing first (priority,
 * then due instant, then age), in two groups: those the API says the caller may decide, and
 * those it may see but not decide (excluded by four eyes, or held by another). Polled every
 * `POLL_MS`, so a new task appears without a reload and is announced.
 */
import * as Api from "../Api.js"
import { announce, type Child, facts, fill, h } from "../Dom.js"
import * as Format from "../Format.js"
import { type Page, title } from "../Page.js"
import * as Refusal from "../Refusal.js"

export const POLL_MS = 4000

// biome-ignore lint/suspicious/noExplicitAny: a task as the API's JSON shows it
type Task = any

export const worklist: Page = async ({ main, current }) => {
  const region = h("div", {})
  main.append(
    title("Worklist"),
    h("p", { class: "note" }, "Pending tasks for your roles, most pressing first. New tasks appear on their own."),
    region,
  )
  let shown: ReadonlySet<string> | undefined
  let last: string | undefined
  const refresh = async () => {
    const answer = await Api.get("/tasks?limit=200")
    if (!current()) return
    if (!answer.ok) {
      fill(
        region,
        Refusal.view(answer, "The API refused this credential a worklist:"),
        answer.status === 403 ? h("p", {}, "This credential has no worklist.") : null,
      )
      return
    }
    const tasks: Array<Task> = [...answer.body.items].sort(order)
    const ids = new Set<string>(tasks.map((t) => t.id))
    if (shown !== undefined) {
      const fresh = tasks.filter((t) => !shown?.has(t.id))
      if (fresh.length > 0) announce(`${fresh.length} new task${fresh.length === 1 ? "" : "s"} in the worklist`)
    }
    shown = ids
    // Unchanged, the list is left as it is: redrawing it would take a keyboard user's focus away.
    const drawn = JSON.stringify(answer.body)
    if (drawn === last) return
    last = drawn
    const focusedLink =
      document.activeElement instanceof HTMLAnchorElement && region.contains(document.activeElement)
        ? document.activeElement.getAttribute("href")
        : null
    const mine = tasks.filter((t) => t.mayDecide)
    const others = tasks.filter((t) => !t.mayDecide)
    fill(
      region,
      h("h2", { id: "may-decide" }, `Yours to decide (${mine.length})`),
      mine.length === 0 ? h("p", {}, "Nothing waits for you.") : cards(mine, "may-decide"),
      others.length === 0
        ? null
        : [
            h("h2", { id: "may-not-decide" }, `You may not decide (${others.length})`),
            h("p", { class: "note" }, "Excluded by the four-eyes rule, or held by another reviewer."),
            cards(others, "may-not-decide"),
          ],
      answer.body.truncated ? h("p", { class: "note" }, "More tasks wait than are shown here.") : null,
    )
    // A new task arriving keeps the focus on the task it was on.
    if (focusedLink !== null) region.querySelector<HTMLElement>(`a[href="${CSS.escape(focusedLink)}"]`)?.focus()
  }
  await refresh()
  const timer = setInterval(() => void refresh(), POLL_MS)
  return () => clearInterval(timer)
}

const order = (a: Task, b: Task): number =>
  (Format.RANK[a.priority] ?? 9) - (Format.RANK[b.priority] ?? 9) ||
  due(a) - due(b) ||
  Date.parse(a.createdAt) - Date.parse(b.createdAt)

const due = (t: Task): number => (t.dueAt === null ? Number.POSITIVE_INFINITY : Date.parse(t.dueAt))

const cards = (tasks: ReadonlyArray<Task>, labelledBy: string): Child =>
  h(
    "ul",
    { class: "cards", "aria-labelledby": labelledBy },
    tasks.map((t) =>
      h(
        "li",
        {},
        h("h3", {}, Format.link(`/tasks/${t.id}`, `${t.kind}: ${t.justification.summary}`)),
        facts([
          ["Priority", t.priority],
          ["Due", Format.instant(t.dueAt)],
          ["Roles", Format.list(t.candidateRoles)],
          ["Excluded", `${Format.list(t.excludedActors)}${t.excludedActors.length > 0 ? " (four eyes)" : ""}`],
          ["State", t.assignee === null ? t.state : `${t.state} by ${t.assignee}`],
        ]),
      ),
    ),
  )
