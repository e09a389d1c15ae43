/**
 * Every fenced code block of README.md and of docs/*.md, run as written (issues 17 and 49). The
 * convention, also in a comment at the top of README.md:
 *
 * - ```sh and ```ts blocks run; a ```json block must parse; any other language (text, http,
 *   none) only shows data or output and is never run.
 * - A marker is an HTML comment on the line before the opening fence (blank lines between are
 *   allowed):
 *   - `<!-- readme: server -->`: an sh block that talks to the demo server. The test starts it
 *     once per document as the README's set-up does (`npm start`, in a scratch directory, on a
 *     fresh `./agentplane.db`) but on a free port: each `127.0.0.1:8080` in the block becomes the
 *     real address. All server blocks of a document run in its order in one bash process, so a
 *     variable one sets is seen by the next.
 *   - `<!-- readme: excerpt path/to/File.ts -->`: an abridged copy of a file: every non-blank line
 *     that is not a `//` comment occurs in that file (trimmed), in the same order.
 *   - `<!-- readme: skip <reason> -->`: not run; the reason is required.
 * - An sh block without a marker runs alone in a scratch directory of its own, with
 *   `bash -euo pipefail`. The scratch directory links the repository's package.json, dist,
 *   src, examples and node_modules, so `npx agentplane …` and `npm run …` work as in a clone.
 * - A ts block without a marker is a whole module: it is typechecked and linted with the
 *   project's own rules, then compiled by TypeScript twice, to an ES module and to CommonJS, and
 *   each is run with plain node in a scratch directory where `import … from "agentplane"` is the
 *   built package (its exports); each must print something. So a block has no top-level `await`
 *   (CommonJS has none), and the package loads from `require` (node's require of an ES module).
 *   A block that needs PostgreSQL reads `process.env.DATABASE_URL`, set to a fresh database.
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
import ts from "typescript"
import { beforeAll, describe, inject, it } from "vitest"
import * as Process from "../package/Process.js"
import { assert } from "../support/Assert.js"
import * as Blocks from "./Blocks.js"
import * as Documents from "./Documents.js"

interface Document {
  readonly path: string
  readonly text: string
  readonly blocks: ReadonlyArray<Blocks.Block>
}

const documents: ReadonlyArray<Document> = Documents.all().map((path) => {
  const text = readFileSync(join(Process.ROOT, path), "utf8")
  return { path, text, blocks: Blocks.parse(text) }
})
const runnable = (lang: string) => (block: Blocks.Block) => block.lang === lang && block.marker._tag === "run"
const each = (pick: (block: Blocks.Block) => boolean) =>
  documents.flatMap((document) => document.blocks.filter(pick).map((block) => ({ document, block })))
const tsBlocks = each(runnable("ts"))
const shBlocks = each(runnable("sh"))
const serverBlocks = (document: Document) =>
  document.blocks.filter((block) => block.lang === "sh" && block.marker._tag === "server")

const LINKED = ["package.json", "package-lock.json", "dist", "src", "examples", "node_modules", "biome.json"]
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

/** The file a block is written to: named by its document and line, so a failure names both. */
const fileOf = (document: Document, block: Blocks.Block, ext: string) =>
  `readme-${document.path.replace(/\.md$/, "").replace(/[^A-Za-z0-9]+/g, "-")}-${block.line}.${ext}`

/** The two module systems a block runs under, as TypeScript compiles it for each. */
const MODULES = [
  { name: "an ES module", ext: "mjs", module: ts.ModuleKind.ESNext },
  { name: "CommonJS", ext: "cjs", module: ts.ModuleKind.CommonJS },
] as const

const compile = (text: string, module: ts.ModuleKind): string =>
  ts.transpileModule(text, {
    compilerOptions: { module, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
    reportDiagnostics: false,
  }).outputText

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

describe("README.md", () => {
  const readme = documents.find((d) => d.path === "README.md")
  if (readme === undefined) throw new Error("no README.md")

  it("is a door: at most 300 lines, contents first, set-up before the tour, links last", () => {
    const lines = readme.text.split("\n")
    assert.isTrue(lines.length <= 300, `${lines.length} lines`)
    const headings = lines.filter((line) => /^## /.test(line))
    assert.deepStrictEqual(headings.slice(0, 3), ["## Contents", "## Set up", "## A ten-minute tour"])
    assert.strictEqual(headings[headings.length - 1], "## Where to read on")
    // The two set-up commands are its first code block: the server on embedded SQLite, the tests.
    const first = readme.blocks[0]?.text.split("\n") ?? []
    assert.deepStrictEqual(first, ["npm ci && npm start", "npm test"])
  })
})

describe("the documents' code blocks", { timeout: 300_000 }, () => {
  beforeAll(() => Process.assertBuilt())

  it("carry only markers the convention knows, and every skip says why", () => {
    const invalid = each((block) => block.marker._tag === "invalid").map(
      ({ document, block }) =>
        `${document.path}:${block.line}: <!-- readme: ${block.marker._tag === "invalid" ? block.marker.text : ""} -->`,
    )
    assert.deepStrictEqual(invalid, [], "unknown markers (server, excerpt <path>, skip <reason>)")
    const misplaced = each((block) => block.marker._tag === "server" && block.lang !== "sh").map(
      ({ document, block }) => `${document.path}:${block.line}: server on ${block.lang}`,
    )
    assert.deepStrictEqual(misplaced, [], "server marks sh blocks only")
    assert.isTrue(tsBlocks.length > 0 && shBlocks.length > 0, "some ts and some sh block runs")
  })

  it("that are excerpts occur in their files, line by line and in order", () => {
    const wrong = each((block) => block.marker._tag === "excerpt").flatMap(({ document, block }) => {
      const path = block.marker._tag === "excerpt" ? block.marker.path : ""
      const file = readFileSync(join(Process.ROOT, path), "utf8")
      return Blocks.missingFromExcerpt(block.text, file).map(
        (line) => `${document.path}:${block.line} (${path}): ${line}`,
      )
    })
    assert.deepStrictEqual(wrong, [], "excerpt lines not found in their file, in order")
  })

  it("in JSON parse", () => {
    const wrong = each((block) => block.lang === "json").flatMap(({ document, block }) => {
      try {
        JSON.parse(block.text)
        return []
      } catch (e) {
        return [`${document.path}:${block.line}: ${String(e)}`]
      }
    })
    assert.deepStrictEqual(wrong, [], "json blocks that do not parse")
  })

  it("in TypeScript typecheck and pass the project's lint", async () => {
    const dir = scratch("check")
    for (const { document, block } of tsBlocks)
      writeFileSync(join(dir, fileOf(document, block, "ts")), `${block.text}\n`)
    const tsc = Process.start("node", [join(Process.ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", "."], {
      cwd: dir,
    })
    assert.strictEqual(await Process.finish(tsc, 240_000), 0, `${tsc.stdout()}${tsc.stderr()}`)
    const lint = Process.start(
      join(Process.ROOT, "node_modules", ".bin", "biome"),
      ["check", "--vcs-enabled=false", ...tsBlocks.map(({ document, block }) => fileOf(document, block, "ts"))],
      { cwd: dir },
    )
    assert.strictEqual(await Process.finish(lint), 0, `${lint.stdout()}${lint.stderr()}`)
  })

  for (const { document, block } of tsBlocks) {
    for (const module of MODULES) {
      it(`in TypeScript at ${document.path}:${block.line} runs as ${module.name} with the built package and prints`, async () => {
        const dir = scratch(`ts-${block.line}`)
        const file = fileOf(document, block, module.ext)
        writeFileSync(join(dir, file), compile(block.text, module.module))
        const db = await freshPg()
        try {
          const run = Process.start("node", [file], { cwd: dir, env: { DATABASE_URL: db.url } })
          const code = await Process.finish(run, 240_000)
          assert.strictEqual(
            code,
            0,
            `${document.path}:${block.line} as ${module.name}:\n${run.stdout()}${run.stderr()}`,
          )
          assert.isTrue(run.stdout().trim() !== "", `${document.path}:${block.line} printed nothing`)
        } finally {
          await db.drop()
        }
      })
    }
  }

  for (const { document, block } of shBlocks) {
    it(`in sh at ${document.path}:${block.line} run as written`, async () => {
      // The scratch directory links the repository's node_modules: an install there would rewrite
      // the repository's own, and `npm test` would run the suite inside itself.
      assert.doesNotMatch(block.text, /\bnpm (ci|install|i|test|t)\b/, `${document.path}:${block.line}: mark it skip`)
      const dir = scratch(`sh-${block.line}`)
      const script = Blocks.commands(block.text, block.line).map((c) => Blocks.script(c, document.path))
      const run = bash(script.join("\n"), dir)
      const code = await Process.finish(run, 240_000)
      assert.strictEqual(code, 0, `${document.path}:${block.line}:\n${run.stdout()}${run.stderr()}`)
    })
  }

  for (const document of documents.filter((d) => serverBlocks(d).length > 0)) {
    it(`of ${document.path} marked server run in order against the server npm start serves`, async () => {
      const dir = scratch("server")
      const port = await Process.freePort()
      const server = Process.start("npm", ["start"], { cwd: dir, env: { AGENTPLANE_ADDR: `127.0.0.1:${port}` } })
      try {
        await Process.listening(server)
        const script = serverBlocks(document)
          .flatMap((block) => Blocks.commands(block.text.replaceAll("127.0.0.1:8080", `127.0.0.1:${port}`), block.line))
          .map((command) => Blocks.script(command, document.path))
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
