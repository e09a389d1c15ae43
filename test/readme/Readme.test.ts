/**
 * Every fenced code block of README.md, run as written (issue 17). The convention, also in a
 * comment at the top of README.md:
 *
 * - ```sh and ```ts blocks run; any other language (text, json, http, none) only shows data or
 *   output and is never run.
 * - A marker is an HTML comment on the line before the opening fence (blank lines between are
 *   allowed):
 *   - `<!-- readme: server -->`: an sh block that talks to the demo server. The test starts it
 *     once as the Quickstart does (`npm start`, in a scratch directory, on a fresh
 *     `./agentplane.db`) but on a free port: each `127.0.0.1:8080` in the block becomes the real
 *     address. All server blocks run in README order in one bash process, so a variable one sets
 *     is seen by the next.
 *   - `<!-- readme: excerpt path/to/File.ts -->`: an abridged copy of a file: every non-blank line
 *     that is not a `//` comment occurs in that file (trimmed), in the same order.
 *   - `<!-- readme: skip <reason> -->`: not run; the reason is required.
 * - An sh block without a marker runs alone in a scratch directory of its own, with
 *   `bash -euo pipefail`. The scratch directory links the repository's package.json, dist,
 *   src, examples and node_modules, so `npx agentplane …` and `npm run …` work as in a clone.
 * - A ts block without a marker is a whole module: it is typechecked and linted with the
 *   project's own rules, then run with tsx in a scratch directory where `import … from
 *   "agentplane"` is the built package (its exports); it must print something. A block that
 *   needs PostgreSQL reads `process.env.DATABASE_URL`, set to a fresh database.
 * - In an sh block, a comment right after a command is that command's expected standard output
 *   (`# {"result":"buffered"}`), where `…` matches any text; several lines are several output
 *   lines. A comment before the first command, or one starting with `##`, is prose.
 *
 * Runs the built JavaScript (`npm run build`; `npm test` builds first).
 */
import { randomUUID } from "node:crypto"
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import pg from "pg"
import { beforeAll, describe, inject, it } from "vitest"
import * as Process from "../package/Process.js"
import { assert } from "../support/Assert.js"
import * as Blocks from "./Blocks.js"

const README = readFileSync(join(Process.ROOT, "README.md"), "utf8")
const blocks = Blocks.parse(README)
const runnable = (lang: string) => (block: Blocks.Block) => block.lang === lang && block.marker._tag === "run"
const tsBlocks = blocks.filter(runnable("ts"))
const shBlocks = blocks.filter(runnable("sh"))
const serverBlocks = blocks.filter((block) => block.lang === "sh" && block.marker._tag === "server")

const LINKED = ["package.json", "package-lock.json", "dist", "src", "examples", "node_modules", "biome.json"]
const TSX = join(Process.ROOT, "node_modules", ".bin", "tsx")
/** The project's compiler options, less the paths that point "agentplane" at src in development. */
const TSCONFIG = {
  compilerOptions: {
    ...(JSON.parse(readFileSync(join(Process.ROOT, "tsconfig.json"), "utf8")) as { compilerOptions: object })
      .compilerOptions,
    paths: undefined,
  },
  include: ["readme-*.ts"],
}

/** A scratch directory laid out like a clone: the repository's files linked, nothing else. */
const scratch = (name: string): string => {
  const dir = join(inject("scratchDir"), `readme-${name}-${randomUUID().slice(0, 8)}`)
  mkdirSync(dir)
  for (const entry of LINKED) symlinkSync(join(Process.ROOT, entry), join(dir, entry))
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify(TSCONFIG))
  return dir
}

const tsFile = (block: Blocks.Block) => `readme-${block.line}.ts`

// --norc: node's stdin pipe is a socket, which bash takes for sshd and so reads /etc/bash.bashrc.
const bash = (script: string, cwd: string) =>
  Process.start("bash", ["--norc", "--noprofile", "-euo", "pipefail", "-c", script], { cwd, env: { NO_COLOR: "1" } })

/** A new, empty PostgreSQL database on the tests' server, dropped by `drop`. */
const freshPg = async () => {
  const name = `agentplane_readme_${randomUUID().replaceAll("-", "")}`
  const admin = new pg.Client({ connectionString: inject("pgUrl") })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  const url = new URL(inject("pgUrl"))
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    drop: async () => {
      try {
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      } finally {
        await admin.end()
      }
    },
  }
}

describe("README.md's code blocks", { timeout: 300_000 }, () => {
  beforeAll(() => Process.assertBuilt())

  it("carry only markers the convention knows, and every skip says why", () => {
    const invalid = blocks.flatMap((block) =>
      block.marker._tag === "invalid" ? [`line ${block.line}: <!-- readme: ${block.marker.text} -->`] : [],
    )
    assert.deepStrictEqual(invalid, [], "unknown markers (server, excerpt <path>, skip <reason>)")
    const misplaced = blocks.flatMap((block) =>
      block.marker._tag === "server" && block.lang !== "sh" ? [`line ${block.line}: server on ${block.lang}`] : [],
    )
    assert.deepStrictEqual(misplaced, [], "server marks sh blocks only")
    assert.isTrue(tsBlocks.length + shBlocks.length + serverBlocks.length > 0, "some block runs")
  })

  it("that are excerpts occur in their files, line by line and in order", () => {
    const wrong = blocks.flatMap((block) => {
      if (block.marker._tag !== "excerpt") return []
      const file = readFileSync(join(Process.ROOT, block.marker.path), "utf8")
      return Blocks.missingFromExcerpt(block.text, file).map(
        (line) => `line ${block.line} (${block.marker._tag === "excerpt" ? block.marker.path : ""}): ${line}`,
      )
    })
    assert.deepStrictEqual(wrong, [], "excerpt lines not found in their file, in order")
  })

  it("in TypeScript typecheck and pass the project's lint", async () => {
    if (tsBlocks.length === 0) return
    const dir = scratch("check")
    for (const block of tsBlocks) writeFileSync(join(dir, tsFile(block)), `${block.text}\n`)
    const tsc = Process.start("node", [join(Process.ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", "."], {
      cwd: dir,
    })
    assert.strictEqual(await Process.finish(tsc, 240_000), 0, `${tsc.stdout()}${tsc.stderr()}`)
    const lint = Process.start(
      join(Process.ROOT, "node_modules", ".bin", "biome"),
      ["check", "--vcs-enabled=false", ...tsBlocks.map(tsFile)],
      { cwd: dir },
    )
    assert.strictEqual(await Process.finish(lint), 0, `${lint.stdout()}${lint.stderr()}`)
  })

  for (const block of tsBlocks) {
    it(`in TypeScript at line ${block.line} runs with the built package and prints`, async () => {
      const dir = scratch(`ts-${block.line}`)
      writeFileSync(join(dir, tsFile(block)), `${block.text}\n`)
      const db = await freshPg()
      try {
        const run = Process.start(TSX, [tsFile(block)], { cwd: dir, env: { DATABASE_URL: db.url } })
        const code = await Process.finish(run, 240_000)
        assert.strictEqual(code, 0, `README line ${block.line}:\n${run.stdout()}${run.stderr()}`)
        assert.isTrue(run.stdout().trim() !== "", `README line ${block.line} printed nothing`)
      } finally {
        await db.drop()
      }
    })
  }

  for (const block of shBlocks) {
    it(`in sh at line ${block.line} run as written`, async () => {
      // The scratch directory links the repository's node_modules: an install there would rewrite
      // the repository's own, and `npm test` would run the suite inside itself.
      assert.doesNotMatch(block.text, /\bnpm (ci|install|i|test|t)\b/, `README line ${block.line}: mark it skip`)
      const dir = scratch(`sh-${block.line}`)
      const run = bash(Blocks.commands(block.text, block.line).map(Blocks.script).join("\n"), dir)
      const code = await Process.finish(run, 240_000)
      assert.strictEqual(code, 0, `README line ${block.line}:\n${run.stdout()}${run.stderr()}`)
    })
  }

  if (serverBlocks.length > 0) {
    it("marked server run in order against the server npm start serves", async () => {
      const dir = scratch("server")
      const port = await Process.freePort()
      const server = Process.start("npm", ["start"], { cwd: dir, env: { AGENTPLANE_ADDR: `127.0.0.1:${port}` } })
      try {
        await Process.listening(server)
        const script = serverBlocks
          .flatMap((block) => Blocks.commands(block.text.replaceAll("127.0.0.1:8080", `127.0.0.1:${port}`), block.line))
          .map(Blocks.script)
          .join("\n")
        const run = bash(script, dir)
        const code = await Process.finish(run, 240_000)
        assert.strictEqual(code, 0, `${run.stdout()}${run.stderr()}\nserver: ${server.stderr()}`)
        Process.signal(server, "SIGTERM")
        assert.strictEqual(await Process.finish(server, 30_000), 0, server.stderr())
      } finally {
        Process.killGroup(server, "SIGKILL")
      }
    })
  }
})

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
    const bad = bash(Blocks.script({ line: 7, text: "echo nope", expected: ["yes"] }), ".")
    assert.strictEqual(await Process.finish(bad), 1)
    assert.match(bad.stderr(), /^README line 7: the output is not what the README shows/)
  })
})
