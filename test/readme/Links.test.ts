/**
 * Every relative link of README.md and docs/*.md reaches a file of the repository, and a link
 * with an anchor reaches a heading (or an explicit id) of its Markdown file, as GitHub renders
 * it. Links with a scheme (https:, mailto:) leave the repository and are not followed.
 */
import { existsSync, readFileSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { describe, it } from "vitest"
import * as Process from "../package/Process.js"
import { assert } from "../support/Assert.js"
import * as Documents from "./Documents.js"
import * as Links from "./Links.js"

/** The links of `document` (a path from the repository's root) that lead nowhere, each saying where it is. */
const broken = (document: string): ReadonlyArray<string> => {
  const text = readFileSync(join(Process.ROOT, document), "utf8")
  return Links.links(text)
    .filter((link) => Links.isRelative(link.target))
    .flatMap((link) => {
      const { path, anchor } = Links.split(link.target)
      const file = path === "" ? join(Process.ROOT, document) : join(Process.ROOT, dirname(document), path)
      const where = `${document}:${link.line} ${link.target}`
      if (relative(Process.ROOT, file).startsWith("..")) return [`${where}: outside the repository`]
      if (!existsSync(file)) return [`${where}: no such file`]
      if (anchor === undefined) return []
      if (!file.endsWith(".md")) return [`${where}: an anchor into a file that is not Markdown`]
      return Links.anchors(readFileSync(file, "utf8")).has(anchor) ? [] : [`${where}: no heading #${anchor}`]
    })
}

describe("the documents' links", () => {
  it("are found in README.md and in docs/", () => {
    assert.include(Documents.all(), "README.md")
    assert.isTrue(
      Documents.all().some((d) => d.startsWith("docs/")),
      "some document under docs/",
    )
  })

  for (const document of Documents.all()) {
    it(`in ${document} resolve to a file of the repository, and to a heading when they name one`, () => {
      assert.deepStrictEqual(broken(document), [])
    })
  }
})

describe("the link check's reading of Markdown", () => {
  it("makes GitHub's anchors: markup and punctuation dropped, spaces hyphens, repeats numbered", () => {
    assert.strictEqual(Links.slug("1. Start a run"), "1-start-a-run")
    assert.strictEqual(Links.slug("Agents on `@effect/ai`"), "agents-on-effectai")
    assert.strictEqual(Links.slug("Export, verify and restore"), "export-verify-and-restore")
    assert.strictEqual(Links.slug("[The log](x.md) and *keys*"), "the-log-and-keys")
    const found = Links.anchors(
      ["# A", "## Notes", "```sh", "# not a heading", "```", "### Notes", '<a id="kept"></a>'].join("\n"),
    )
    assert.deepStrictEqual([...found].sort(), ["a", "kept", "notes", "notes-1"])
  })

  it("finds links and images outside code, and tells relative ones from addresses", () => {
    const text = [
      "See [a](docs/a.md#x) and ![b](b.png).",
      "`[not](c.md)`",
      "```",
      "[no](d.md)",
      "```",
      "[w](https://e.org)",
    ]
    assert.deepStrictEqual(
      Links.links(text.join("\n")).map((l) => [l.line, l.target]),
      [
        [1, "docs/a.md#x"],
        [1, "b.png"],
        [6, "https://e.org"],
      ],
    )
    assert.isTrue(Links.isRelative("docs/a.md#x"))
    assert.isTrue(Links.isRelative("#here"))
    assert.isFalse(Links.isRelative("https://e.org"))
    assert.isFalse(Links.isRelative("mailto:a@b.c"))
    assert.deepStrictEqual(Links.split("docs/a.md#x"), { path: "docs/a.md", anchor: "x" })
    assert.deepStrictEqual(Links.split("#here"), { path: "", anchor: "here" })
  })
})
