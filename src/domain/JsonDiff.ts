/**
 * Where two JSON values first differ, for messages a person reads (a run that diverged from its
 * journal names the argument that changed, not only two effect keys).
 */
import { Option } from "effect"
import type { Json } from "./Json.js"

export interface Difference {
  /** JSON-path-like: `$.prompt[1].content`. */
  readonly path: string
  readonly expected: Json | undefined
  readonly offered: Json | undefined
}

/** The first difference in document order (object keys sorted), or none when the two are equal. */
export const first = (expected: Json, offered: Json): Option.Option<Difference> => walk("$", expected, offered)

/** One line: the path and both values, each cut to `width` characters. */
export const render = (d: Difference, width = 120): string =>
  `at ${d.path}: journaled ${cut(d.expected, width)}, offered ${cut(d.offered, width)}`

const walk = (path: string, a: Json | undefined, b: Json | undefined): Option.Option<Difference> => {
  if (a === b) return Option.none()
  const diff = Option.some({ path, expected: a, offered: b })
  if (a === undefined || b === undefined || a === null || b === null) return diff
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b)) return diff
    const n = Math.max(a.length, b.length)
    for (let i = 0; i < n; i++) {
      const d = walk(`${path}[${i}]`, a[i] as Json | undefined, b[i] as Json | undefined)
      if (Option.isSome(d)) return d
    }
    return Option.none()
  }
  if (typeof a === "object" && typeof b === "object") {
    const ao = a as { readonly [k: string]: Json }
    const bo = b as { readonly [k: string]: Json }
    const keys = [...new Set([...Object.keys(ao), ...Object.keys(bo)])].sort()
    for (const k of keys) {
      const d = walk(/^[A-Za-z_$][\w$]*$/.test(k) ? `${path}.${k}` : `${path}[${JSON.stringify(k)}]`, ao[k], bo[k])
      if (Option.isSome(d)) return d
    }
    return Option.none()
  }
  return diff
}

const cut = (value: Json | undefined, width: number): string => {
  const text = value === undefined ? "(absent)" : JSON.stringify(value)
  return text.length <= width ? text : `${text.slice(0, width - 1)}…`
}
