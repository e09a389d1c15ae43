/**
 * Reading `§` citations out of source text and numbered sections out of the design documents
 * (`docs/design`), for `Sections.test.ts`.
 *
 * A citation is `§` and a dotted number, optionally continued by `,`, `and`, `–` or `-` and
 * another number, with or without its own `§` (`§7.6, §7.8`, `§7.2–§7.3`, `§6.3.5, 6.5–6.7`); a
 * bare continuation must be dotted, so `§4, 2 more` cites §4 alone. A citation written right
 * after the name of another document (`RFC 9162 §2.1`, `binding §3.1.1`, `Webhook §4`) is that
 * document's, together with its continuation, and is not checked against the design.
 *
 * A section is a heading whose text starts with `§<number>`, and it must carry the stable anchor
 * `<a id="s<number>"></a>` on the line before it, so links survive a change of wording.
 */

// Built from its code point, so this module's own text holds no citation for the scan to read.
const SECTION_SIGN = "\u00a7"
const NUMBER = String.raw`\d+(?:\.\d+)*`
const DOTTED = String.raw`\d+(?:\.\d+)+`
const CITATION = new RegExp(
  String.raw`${SECTION_SIGN}(?:${NUMBER})(?:\s*(?:,|and|–|-)\s*(?:${SECTION_SIGN}${NUMBER}|${DOTTED}))*`,
  "gu",
)
const NUMBERS = new RegExp(NUMBER, "g")
const EXTERNAL = /(?:RFC\s*\d+|binding|Webhook)\s*$/i
const HEADING = new RegExp(String.raw`^#{1,6}\s+${SECTION_SIGN}(${NUMBER})(?:\s|$)`)
const ANCHOR = /^<a id="s(\d+(?:\.\d+)*)"><\/a>$/

/** One citation of a design section: the line it is on (from 1) and the number it cites. */
export interface Citation {
  readonly line: number
  readonly section: string
  /** The citation as written, for the failure message. */
  readonly text: string
}

/** The design sections `text` cites, line by line, leaving out other documents' sections. */
export const citations = (text: string): ReadonlyArray<Citation> =>
  text.split("\n").flatMap((content, index) =>
    [...content.matchAll(CITATION)].flatMap((match) => {
      const before = content.slice(0, match.index)
      if (EXTERNAL.test(before)) return []
      return [...match[0].matchAll(NUMBERS)].map((number) => ({
        line: index + 1,
        section: number[0],
        text: match[0],
      }))
    }),
  )

/** A numbered heading of a design document: its number, its line, and the anchor above it. */
export interface Section {
  readonly section: string
  readonly line: number
  /** The id of the `<a id>` on the line before the heading; none when there is none. */
  readonly anchor: string | undefined
}

/** The numbered headings of one design document, in order. */
export const sections = (markdown: string): ReadonlyArray<Section> => {
  const lines = markdown.split("\n")
  return lines.flatMap((content, index) => {
    const heading = HEADING.exec(content)
    if (heading?.[1] === undefined) return []
    const anchor = ANCHOR.exec((lines[index - 1] ?? "").trim())?.[1]
    return [{ section: heading[1], line: index + 1, anchor }]
  })
}

/** Every `<a id="…">` of a document, numbered sections' and others (`g1`). */
export const anchors = (markdown: string): ReadonlySet<string> =>
  new Set([...markdown.matchAll(/<a id="([^"]+)"><\/a>/g)].flatMap((m) => (m[1] === undefined ? [] : [m[1]])))

/** The relative markdown links of a document: `[text](target.md)` or `[text](target.md#anchor)`. */
export const links = (
  markdown: string,
): ReadonlyArray<{ readonly file: string; readonly anchor: string | undefined }> =>
  [...markdown.matchAll(/\]\(([A-Za-z0-9_./-]+\.md)(?:#([^)\s]+))?\)/g)].flatMap((m) =>
    m[1] === undefined ? [] : [{ file: m[1], anchor: m[2] }],
  )
