/**
 * The design documents hold every section the code cites (issue 49): each `§` citation in
 * `src/`, `test/`, `console/src` and `bench/` names a numbered heading of `docs/design`, each
 * numbered heading carries its stable anchor and is defined once, and `docs/design/README.md`
 * links every document. A failure names the file and line of each citation that resolves to
 * nothing, so a renamed or removed section cannot leave comments pointing nowhere.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { join, relative } from "node:path"
import { describe, it } from "vitest"
import { assert } from "../support/Assert.js"
import * as Citations from "./Citations.js"

const ROOT = process.cwd()
const DESIGN = join(ROOT, "docs", "design")
const SCANNED = ["src", "test", "console/src", "bench"]
const SKIPPED = new Set(["node_modules", "dist", ".git"])
// The sign from its code point, so the examples below hold no citation of their own.
const S = "\u00a7"

/** Every file under `dir`, depth first, in name order. */
const walk = (dir: string): ReadonlyArray<string> =>
  readdirSync(dir)
    .sort()
    .flatMap((name) => {
      if (SKIPPED.has(name)) return []
      const path = join(dir, name)
      return statSync(path).isDirectory() ? walk(path) : [path]
    })

/** A text file's content; none for a binary one (a NUL in it), which cites nothing. */
const text = (path: string): string | undefined => {
  const bytes = readFileSync(path)
  return bytes.includes(0) ? undefined : bytes.toString("utf8")
}

const documents = (): ReadonlyArray<string> =>
  readdirSync(DESIGN)
    .filter((name) => name.endsWith(".md"))
    .sort()

const defined = (): ReadonlyMap<string, ReadonlyArray<string>> => {
  const where = new Map<string, Array<string>>()
  for (const name of documents()) {
    for (const s of Citations.sections(readFileSync(join(DESIGN, name), "utf8"))) {
      where.set(s.section, [...(where.get(s.section) ?? []), `docs/design/${name}:${s.line}`])
    }
  }
  return where
}

describe("reading citations", () => {
  it("reads a list, a range and a bare dotted continuation, each number once per mention", () => {
    const found = Citations.citations(`a (${S}7.6, ${S}7.8) b\nc ${S}7.2–${S}7.3 and ${S}6.3.5, 6.5–6.7: d`)
    assert.deepStrictEqual(
      found.map((c) => [c.line, c.section]),
      [
        [1, "7.6"],
        [1, "7.8"],
        [2, "7.2"],
        [2, "7.3"],
        [2, "6.3.5"],
        [2, "6.5"],
        [2, "6.7"],
      ],
    )
  })

  it("leaves out another document's sections and keeps the design's on the same line", () => {
    const found = Citations.citations(
      `RFC 9162 ${S}2.1.3.1, ${S}2.1.4.1; binding ${S}3.1.1; HTTP Webhook ${S}4\nRFC 3339 UTC (${S}3), ${S}4, 2 more`,
    )
    assert.deepStrictEqual(
      found.map((c) => [c.line, c.section]),
      [
        [2, "3"],
        [2, "4"],
      ],
    )
  })

  it("reads a numbered heading with the anchor on the line before it, and one without", () => {
    const found = Citations.sections(
      `# T\n\n<a id="s7.1"></a>\n## ${S}7.1 Effects\n\n## ${S}7.2 Replay\n### not ${S}9\n`,
    )
    assert.deepStrictEqual(found, [
      { section: "7.1", line: 4, anchor: "7.1" },
      { section: "7.2", line: 6, anchor: undefined },
    ])
  })
})

describe("docs/design", () => {
  it("defines every section cited in src, test, console/src and bench", () => {
    const sections = defined()
    const dangling: Array<string> = []
    let seen = 0
    for (const top of SCANNED) {
      const dir = join(ROOT, top)
      if (!existsSync(dir)) continue
      for (const path of walk(dir)) {
        const content = text(path)
        if (content === undefined) continue
        for (const c of Citations.citations(content)) {
          seen++
          if (!sections.has(c.section))
            dangling.push(`${relative(ROOT, path)}:${c.line} ${S}${c.section} (in "${c.text}")`)
        }
      }
    }
    // The scan itself must have found the code's citations, or an empty pass would prove nothing.
    assert.isTrue(seen > 200, `only ${seen} citations found: is the scan reading the tree?`)
    assert.deepStrictEqual(dangling, [], `citations of sections docs/design does not define:\n${dangling.join("\n")}`)
  })

  it("gives each numbered section its stable anchor and defines it once", () => {
    const problems: Array<string> = []
    for (const name of documents()) {
      for (const s of Citations.sections(readFileSync(join(DESIGN, name), "utf8"))) {
        if (s.anchor !== s.section) {
          problems.push(
            `docs/design/${name}:${s.line} ${S}${s.section} needs <a id="s${s.section}"></a> on the line before`,
          )
        }
      }
    }
    for (const [section, where] of defined()) {
      if (where.length > 1) problems.push(`${S}${section} is defined ${where.length} times: ${where.join(", ")}`)
    }
    assert.deepStrictEqual(problems, [])
  })

  it("links every document from its README, and every link between them lands on a file and anchor", () => {
    const readme = Citations.links(readFileSync(join(DESIGN, "README.md"), "utf8")).map((l) => l.file)
    const unlinked = documents().filter((name) => name !== "README.md" && !readme.includes(name))
    assert.deepStrictEqual(unlinked, [], `docs/design/README.md does not link: ${unlinked.join(", ")}`)

    const broken: Array<string> = []
    for (const name of documents()) {
      for (const link of Citations.links(readFileSync(join(DESIGN, name), "utf8"))) {
        const target = join(DESIGN, link.file)
        if (!existsSync(target)) broken.push(`${name} → ${link.file}`)
        else if (link.anchor !== undefined && !Citations.anchors(readFileSync(target, "utf8")).has(link.anchor)) {
          broken.push(`${name} → ${link.file}#${link.anchor}`)
        }
      }
    }
    assert.deepStrictEqual(broken, [])
  })
})
