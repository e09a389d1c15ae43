/** Small renderings shared by the pages. */
import { type Child, h } from "./Dom.js"

/** An RFC 3339 instant as the reader's local time, the instant itself kept in `<time>`. */
export const instant = (value: string | null | undefined): Child =>
  value === null || value === undefined
    ? "none"
    : h(
        "time",
        { datetime: value },
        new Date(value).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" }),
      )

export const list = (values: ReadonlyArray<string>): string => (values.length === 0 ? "none" : values.join(", "))

/** Correlation keys as `namespace: value`. */
export const keys = (correlation: ReadonlyArray<{ namespace: string; value: string }>): string =>
  list(correlation.map((k) => `${k.namespace}: ${k.value}`))

/** A link inside the console. */
export const link = (route: string, text: string): HTMLAnchorElement => h("a", { href: `#${route}` }, text)

/** An id shortened for a heading or a card, whole in the link's accessible name. */
export const short = (id: string): string => (id.length > 20 ? `${id.slice(0, 16)}…` : id)

export const RANK: Readonly<Record<string, number>> = { urgent: 0, high: 1, normal: 2, low: 3 }
