/** Sign-in: the caller's bearer token, kept in this tab's session storage until sign-out. */
import { h } from "../Dom.js"
import { type Page, title } from "../Page.js"
import * as Session from "../Session.js"

export const signIn: Page = async ({ main }) => {
  const input = h("input", {
    id: "token",
    name: "token",
    type: "password",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
    "aria-describedby": "token-help",
  })
  const form = h(
    "form",
    {
      onsubmit: (event) => {
        event.preventDefault()
        const value = input.value.trim()
        if (value === "") return
        Session.signIn(value)
        if (location.hash !== "#/worklist") location.hash = "#/worklist"
        window.dispatchEvent(new Event("agentplane:signed-in"))
      },
    },
    h("label", { for: "token" }, "Bearer token"),
    input,
    h(
      "p",
      { id: "token-help", class: "note" },
      "The token your operator gave you. It stays in this tab's session storage, is sent only to this server, and is forgotten when you sign out or close the tab. What you see and may do is what this token may do.",
    ),
    h("button", { type: "submit" }, "Sign in"),
  )
  main.append(title("Sign in"), form)
  return undefined
}
