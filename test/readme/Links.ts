/**
 * The links of a Markdown document and the anchors its headings make, read the way GitHub renders
 * them, so that a test can hold every relative link of README.md and docs/*.md to a file that
 * exists and, when it names one, to a heading of that file.
 */

/** A link as written: its target and the 1-based line it is on. */
export interface Link {
  readonly line: number
  readonly target: string
}

/** The document's lines outside fenced code blocks, each with its 1-based number. */
const prose = (markdown: string): ReadonlyArray<{ readonly line: number; readonly text: string }> => {
  const out: Array<{ line: number; text: string }> = []
  let fenced = false
  markdown.split("\n").forEach((text, i) => {
    if (/^\s*```/.test(text)) {
      fenced = !fenced
      return
    }
    if (!fenced) out.push({ line: i + 1, text })
  })
  return out
}

/** Inline code spans, which show link syntax without making links. */
const withoutCode = (text: string): string => text.replace(/`[^`]*`/g, "")

/** Every inline link and image of `markdown` (`[text](target)`, `![alt](target)`), outside code. */
export const links = (markdown: string): ReadonlyArray<Link> =>
  prose(markdown).flatMap(({ line, text }) =>
    [...withoutCode(text).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => ({
      line,
      target: m[1] ?? "",
    })),
  )

/** A link that leaves the repository (a scheme, or a protocol-relative address) is not checked here. */
export const isRelative = (target: string): boolean => !/^([a-z][a-z0-9+.-]*:|\/\/)/i.test(target)

/**
 * GitHub's anchor for a heading's text: markup and punctuation dropped, lowercased, spaces made
 * hyphens. Letters and digits of any script, `-` and `_` stay.
 */
export const slug = (heading: string): string =>
  heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/[`*]/g, "")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-")

/** Every anchor of `markdown`: its headings' slugs, a repeated one suffixed `-1`, `-2` … as GitHub does, and explicit `id`s. */
export const anchors = (markdown: string): ReadonlySet<string> => {
  const found = new Set<string>()
  const seen = new Map<string, number>()
  for (const { text } of prose(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(text)
    if (heading?.[1] !== undefined) {
      const base = slug(heading[1])
      const count = seen.get(base) ?? 0
      seen.set(base, count + 1)
      found.add(count === 0 ? base : `${base}-${count}`)
    }
    for (const id of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) if (id[1] !== undefined) found.add(id[1])
  }
  return found
}

/** A relative target split into its path (empty for the document itself) and its anchor, if any. */
export const split = (target: string): { readonly path: string; readonly anchor: string | undefined } => {
  const hash = target.indexOf("#")
  return hash === -1
    ? { path: decodeURI(target), anchor: undefined }
    : { path: decodeURI(target.slice(0, hash)), anchor: decodeURIComponent(target.slice(hash + 1)) }
}
