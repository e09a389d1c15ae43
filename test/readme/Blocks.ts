/**
 * The fenced code blocks of a document (README.md, docs/*.md) and the marker comment before each,
 * and the bash text that runs an sh block with its expected output checked. The convention is
 * written at the top of `Readme.test.ts` and in a comment at the top of README.md.
 */

/** What the marker before a block asks for; `run` when there is none. */
export type Marker =
  | { readonly _tag: "run" }
  | { readonly _tag: "server" }
  | { readonly _tag: "excerpt"; readonly path: string }
  | { readonly _tag: "skip"; readonly reason: string }
  | { readonly _tag: "invalid"; readonly text: string }

export interface Block {
  readonly lang: string
  /** The 1-based line of the opening fence, for messages. */
  readonly line: number
  readonly text: string
  readonly marker: Marker
}

const FENCE = /^```(\S*)\s*$/
const MARKER = /^<!--\s*readme:\s*(.*?)\s*-->$/

/** Every fenced block of `markdown`, in order. */
export const parse = (markdown: string): ReadonlyArray<Block> => {
  const lines = markdown.split("\n")
  const blocks: Array<Block> = []
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i] ?? "")
    if (open === null) continue
    const start = i
    const body: Array<string> = []
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i] ?? ""); i++) body.push(lines[i] ?? "")
    let before = start - 1
    while (before >= 0 && (lines[before] ?? "").trim() === "") before--
    blocks.push({
      lang: open[1] ?? "",
      line: start + 1,
      text: body.join("\n"),
      marker: marker(MARKER.exec((lines[before] ?? "").trim())?.[1]),
    })
  }
  return blocks
}

const marker = (text: string | undefined): Marker => {
  if (text === undefined) return { _tag: "run" }
  if (text === "server") return { _tag: "server" }
  const excerpt = /^excerpt\s+(\S+)$/.exec(text)
  if (excerpt?.[1] !== undefined) return { _tag: "excerpt", path: excerpt[1] }
  const skip = /^skip\s+(\S.*)$/.exec(text)
  if (skip?.[1] !== undefined) return { _tag: "skip", reason: skip[1] }
  return { _tag: "invalid", text }
}

/**
 * The lines of `block` missing from `file` in order: every non-blank line of the block that is
 * not a comment must occur in the file (trimmed), after the previous one.
 */
export const missingFromExcerpt = (block: string, file: string): ReadonlyArray<string> => {
  const source = file.split("\n").map((line) => line.trim())
  let at = 0
  const missing: Array<string> = []
  for (const raw of block.split("\n")) {
    const line = raw.trim()
    if (line === "" || line.startsWith("//")) continue
    const found = source.indexOf(line, at)
    if (found === -1) missing.push(line)
    else at = found + 1
  }
  return missing
}

/** A command of an sh block: its lines (with `\` continuations) and the output expected of it. */
export interface Command {
  readonly line: number
  readonly text: string
  readonly expected: ReadonlyArray<string>
}

/** The commands of an sh block; `line` is the block's fence line. */
export const commands = (block: string, line: number): ReadonlyArray<Command> => {
  const lines = block.split("\n")
  const found: Array<{ line: number; text: Array<string>; expected: Array<string> }> = []
  let continuing = false
  lines.forEach((raw, i) => {
    const current = found[found.length - 1]
    if (continuing && current !== undefined) {
      current.text.push(raw)
      continuing = raw.endsWith("\\")
      return
    }
    const trimmed = raw.trim()
    if (trimmed === "") return
    if (trimmed.startsWith("#")) {
      // Right after a command, `# text` is its expected output; `## text` is always prose.
      // Before the first command there is nothing to expect it of: prose.
      if (current !== undefined && !trimmed.startsWith("##") && (trimmed === "#" || trimmed.startsWith("# "))) {
        current.expected.push(trimmed === "#" ? "" : trimmed.slice(2))
      }
      return
    }
    found.push({ line: line + 1 + i, text: [raw], expected: [] })
    continuing = raw.endsWith("\\")
  })
  return found.map((c) => ({ line: c.line, text: c.text.join("\n"), expected: c.expected }))
}

/** `text` as one bash single-quoted word. */
const quote = (text: string): string => `'${text.replaceAll("'", `'\\''`)}'`

/** A bash pattern matching `expected`, where `…` stands for any text. */
export const pattern = (expected: string): string =>
  expected
    .split("…")
    .map((part) => (part === "" ? "" : quote(part)))
    .join("*")

/**
 * Bash for `command` of `document`: as written when nothing is expected of it (so `eval` and
 * assignments work), else its output captured, echoed and compared, failing with the document's
 * line on a mismatch.
 */
export const script = (command: Command, document = "README.md"): string => {
  if (command.expected.length === 0) return command.text
  const want = command.expected.join("\n")
  return [
    `__out=$(${command.text}\n)`,
    `printf '%s\\n' "$__out"`,
    `if [[ "$__out" != ${pattern(want)} ]]; then`,
    `  printf '%s line %s: the output is not what the document shows\\nexpected: %s\\nactual:   %s\\n' ${quote(document)} ${command.line} ${quote(want)} "$__out" >&2`,
    "  exit 1",
    "fi",
  ].join("\n")
}
