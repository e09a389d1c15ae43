/** The README test's reading of blocks and its bash for one command, on small inputs. */
import { describe, it } from "vitest"
import * as Process from "../package/Process.js"
import { assert } from "../support/Assert.js"
import * as Blocks from "./Blocks.js"

// --norc: node's stdin pipe is a socket, which bash takes for sshd and so reads /etc/bash.bashrc.
const bash = (script: string, cwd: string) =>
  Process.start("bash", ["--norc", "--noprofile", "-euo", "pipefail", "-c", script], { cwd, env: { NO_COLOR: "1" } })

describe("the README test's reading of blocks", () => {
  it("takes a comment right after a command as its output, … as any text, ## as prose", () => {
    const block = ["# prose before", "curl -s a \\", "  -d b", "# {…}", "## prose", "echo x", "# x"].join("\n")
    assert.deepStrictEqual(Blocks.commands(block, 10), [
      { line: 12, text: "curl -s a \\\n  -d b", expected: ["{…}"] },
      { line: 16, text: "echo x", expected: ["x"] },
    ])
    assert.strictEqual(Blocks.pattern(`{"id":"task_…",…}`), `'{"id":"task_'*'",'*'}'`)
  })

  it("reads the marker on the line before a fence, blank lines between", () => {
    const parsed = Blocks.parse(
      ["<!-- readme: skip needs a key -->", "", "```sh", "x", "```", "```ts", "y", "```"].join("\n"),
    )
    assert.deepStrictEqual(
      parsed.map((b) => b.marker),
      [{ _tag: "skip", reason: "needs a key" }, { _tag: "run" }],
    )
  })

  it("finds an excerpt's lines in order and names those it does not", () => {
    const file = "a\n  b\nc\nd"
    assert.deepStrictEqual(Blocks.missingFromExcerpt("a\n// note\nc", file), [])
    assert.deepStrictEqual(Blocks.missingFromExcerpt("c\nb", file), ["b"])
  })

  it("runs a command's check in bash: a match passes, a mismatch fails naming the line", async () => {
    const ok = bash(Blocks.script({ line: 3, text: 'echo \'{"a":1,"b":2}\'', expected: ['{"a":…,"b":2}'] }), ".")
    assert.strictEqual(await Process.finish(ok), 0, ok.stderr())
    const bad = bash(Blocks.script({ line: 7, text: "echo nope", expected: ["yes"] }, "docs/cli.md"), ".")
    assert.strictEqual(await Process.finish(bad), 1)
    assert.match(bad.stderr(), /^docs\/cli\.md line 7: the output is not what the document shows/)
  })
})
