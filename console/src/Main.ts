/**
 * The console's entry: routes on the location's hash (`#/tasks/<id>`), so the server serves one
 * page and a token never travels in a path or query. Signed out, every route shows the sign-in.
 */
import { fill, h } from "./Dom.js"
import type { Page, Stop } from "./Page.js"
import { casePage } from "./pages/CasePage.js"
import { cases } from "./pages/Cases.js"
import { operations } from "./pages/Operations.js"
import { runPage } from "./pages/RunPage.js"
import { runs } from "./pages/Runs.js"
import { signIn } from "./pages/SignIn.js"
import { taskPage } from "./pages/TaskPage.js"
import { worklist } from "./pages/Worklist.js"
import * as Session from "./Session.js"

const SECTIONS: ReadonlyArray<readonly [route: string, label: string]> = [
  ["/worklist", "Worklist"],
  ["/cases", "Cases"],
  ["/runs", "Runs"],
  ["/operations", "Operations"],
]

/** The page for a route's first segment, and the nav section it belongs to. */
const ROUTES: Readonly<Record<string, readonly [list: Page, one: Page, section: string]>> = {
  worklist: [worklist, worklist, "/worklist"],
  tasks: [worklist, taskPage, "/worklist"],
  cases: [cases, casePage, "/cases"],
  runs: [runs, runPage, "/runs"],
  operations: [operations, operations, "/operations"],
}

let stop: Stop | undefined
let generation = 0

const render = async (): Promise<void> => {
  const hash = location.hash
  // `#main` and other plain anchors (the skip link) are not routes: stay on the page.
  if (hash !== "" && !hash.startsWith("#/")) return
  stop?.()
  stop = undefined
  const mine = ++generation
  const [path = "", search = ""] = hash.slice(1).split("?")
  const [name = "worklist", ...segments] = path
    .split("/")
    .filter((s) => s !== "")
    .map(decodeURIComponent)
  const main = document.getElementById("main") as HTMLElement
  const nav = document.getElementById("nav") as HTMLElement
  const signedIn = Session.token() !== null
  const route = ROUTES[name] ?? ROUTES.worklist
  if (route === undefined) return
  const [list, one, section] = route
  fill(
    nav,
    signedIn
      ? h(
          "ul",
          {},
          SECTIONS.map(([r, label]) =>
            h("li", {}, h("a", { href: `#${r}`, ...(r === section ? { "aria-current": "page" } : {}) }, label)),
          ),
          h("li", {}, h("button", { type: "button", class: "secondary", onclick: signOut }, "Sign out")),
        )
      : null,
  )
  const page = !signedIn ? signIn : segments.length > 0 && one !== list ? one : list
  fill(main)
  const stopped = await page({ main, segments, query: new URLSearchParams(search), current: () => mine === generation })
  if (mine === generation) {
    stop = stopped
    main.querySelector("h1")?.focus()
  } else stopped?.()
}

const signOut = (): void => {
  Session.signOut()
  location.hash = "#/worklist"
  void render()
}

window.addEventListener("hashchange", () => void render())
window.addEventListener("agentplane:signed-in", () => void render())
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => void render())
else void render()
