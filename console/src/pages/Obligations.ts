/** A case's obligations (deadlines): name, state, due and warning instants. */
import { facts, h } from "../Dom.js"
import * as Format from "../Format.js"

// biome-ignore lint/suspicious/noExplicitAny: deadlines as the API's JSON shows them
export const obligations = (deadlines: ReadonlyArray<any>): HTMLElement =>
  deadlines.length === 0
    ? h("p", {}, "None.")
    : h(
        "ul",
        { class: "cards" },
        deadlines.map((d) =>
          h(
            "li",
            {},
            facts([
              ["Obligation", d.name],
              ["State", d.state],
              ["Due", Format.instant(d.resolvedAt)],
              ["Warn", Format.instant(d.warnAt)],
            ]),
          ),
        ),
      )
