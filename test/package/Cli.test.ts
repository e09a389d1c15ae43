/**
 * The built `agentplane` command's help and usage errors, read through a pipe as a script, a
 * pager or a ticket gets them: usage names `agentplane <verb>` and the required flags, every flag
 * says its default or that it is required, and no ANSI escape reaches the pipe. Runs the built
 * JavaScript (`npm run build`; `npm test` builds first).
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { type Console, Effect, Option } from "effect"
import { beforeAll, describe, it } from "vitest"
import * as Help from "../../src/cli/Help.js"
import * as Report from "../../src/cli/Report.js"
import { assert } from "../support/Assert.js"
import * as Process from "./Process.js"

const MAIN = join(Process.ROOT, "dist", "src", "cli", "Main.js")
const ESC = String.fromCharCode(27)

const agentplane = async (...args: ReadonlyArray<string>) => {
  const run = Process.start("node", [MAIN, ...args], { cwd: Process.ROOT })
  const code = await Process.finish(run)
  return { code, stdout: run.stdout(), stderr: run.stderr() }
}

/** The verbs `agentplane --help` lists, from its "Commands:" block. */
const verbsOf = (page: string): ReadonlyArray<string> => {
  const block = page.split("Commands:\n")[1]?.split("\n\n")[0] ?? ""
  return block.split("\n").flatMap((line) => /^ {2}([a-z-]+) /.exec(line)?.[1] ?? [])
}

/** A verb page's flags: each `  --flag value` line with the description line under it. */
const flagsOf = (page: string): ReadonlyArray<{ readonly usage: string; readonly description: string }> => {
  const lines = (page.split("Flags:\n")[1]?.split("\n\n")[0] ?? "").split("\n")
  const flags: Array<{ usage: string; description: string }> = []
  for (let i = 0; i + 1 < lines.length; i += 2) {
    flags.push({ usage: (lines[i] ?? "").trim(), description: (lines[i + 1] ?? "").trim() })
  }
  return flags
}

describe("agentplane help", { timeout: 180_000 }, () => {
  beforeAll(() => Process.assertBuilt())

  it("lists every verb in plain text, with the package's version", async () => {
    const { version } = JSON.parse(readFileSync(join(Process.ROOT, "package.json"), "utf8")) as { version: string }
    const help = await agentplane("--help")
    assert.strictEqual(help.code, 0, help.stderr)
    assert.isFalse(help.stdout.includes(ESC), "no ANSI escape in a pipe")
    assert.isTrue(help.stdout.startsWith(`agentplane ${version}: `), help.stdout)
    assert.isTrue(help.stdout.includes("Usage: agentplane <command> [flags]"), help.stdout)
    for (const verb of ["serve", "sweep", "migrate", "token-digest", "seed-demo"])
      assert.include(verbsOf(help.stdout), verb)
    const bare = await agentplane()
    assert.strictEqual(bare.stdout, help.stdout, "no argument at all shows the same page")
    const printed = await agentplane("--version")
    assert.strictEqual(printed.stdout.trim(), version)
  })

  it("serve's usage reads agentplane serve with its required flags, and shows the defaults", async () => {
    const help = await agentplane("serve", "--help")
    assert.strictEqual(help.code, 0, help.stderr)
    assert.isFalse(help.stdout.includes(ESC), "no ANSI escape in a pipe")
    assert.isTrue(help.stdout.startsWith("Usage: agentplane serve --tokens text --policy text [flags]\n"), help.stdout)
    assert.isFalse(help.stdout.includes("$ "), "usage is not `$ serve`")
    assert.isFalse(help.stdout.includes("optional"), "no flag is called optional")
    const flags = new Map(flagsOf(help.stdout).map((flag) => [flag.usage, flag.description]))
    assert.match(flags.get("--addr text") ?? "", /default 127\.0\.0\.1:8080$/)
    assert.match(flags.get("--store, --database-url text") ?? "", /default \.\/agentplane\.db$/)
    assert.match(flags.get("--tokens text") ?? "", /^required: /)
    assert.match(flags.get("--policy text") ?? "", /^required: /)
    assert.match(flags.get("--metric-tenant") ?? "", /off unless given$/)
  })

  it("every flag of every verb says its default, that it is required, or is a switch", async () => {
    const verbs = verbsOf((await agentplane("--help")).stdout)
    const pages = await Promise.all(verbs.map((verb) => agentplane(verb, "--help")))
    const silent = verbs.flatMap((verb, i) => {
      const page = pages[i]?.stdout ?? ""
      assert.isTrue(page.startsWith(`Usage: agentplane ${verb}`), page)
      return flagsOf(page)
        .filter((flag) => !/\b(default|required|absent)\b|off unless given/i.test(flag.description))
        .map((flag) => `${verb} ${flag.usage}: ${flag.description}`)
    })
    assert.deepStrictEqual(silent, [], "these flags do not say what happens without them")
  })

  it("a usage error reaches a pipe without ANSI escapes, and exits 1", async () => {
    const refused = await agentplane("serve", "--no-such-flag")
    assert.strictEqual(refused.code, 1, refused.stderr)
    assert.isTrue(refused.stderr.includes("--no-such-flag"), refused.stderr)
    assert.isFalse(refused.stderr.includes(ESC), `no ANSI escape in a pipe: ${JSON.stringify(refused.stderr)}`)
  })
})

describe("Help.requested", () => {
  const verbs = ["serve", "sweep"]
  it("is the whole command's page for --help, -h, no argument or an unknown verb", () => {
    for (const args of [[], ["--help"], ["-h"], ["nonsense", "--help"]]) {
      assert.deepStrictEqual(Help.requested(args, verbs), Option.some(Option.none()), JSON.stringify(args))
    }
  })

  it("is a verb's page for --help anywhere after it, and nothing after --", () => {
    assert.deepStrictEqual(Help.requested(["serve", "--help"], verbs), Option.some(Option.some("serve")))
    assert.deepStrictEqual(Help.requested(["sweep", "--tenant", "a", "-h"], verbs), Option.some(Option.some("sweep")))
    assert.deepStrictEqual(Help.requested(["serve"], verbs), Option.none())
    assert.deepStrictEqual(Help.requested(["serve", "--", "--help"], verbs), Option.none())
  })
})

describe("Report.plainConsole", () => {
  const recording = () => {
    const seen: Array<unknown> = []
    const record = (...args: ReadonlyArray<unknown>) =>
      Effect.sync(() => {
        seen.push(...args)
      })
    return { seen, console: { ...Effect.runSync(Effect.console), log: record, error: record } as Console.Console }
  }
  const bold = `${ESC}[0;1mUSAGE${ESC}[0m`

  it("takes ANSI escapes out of what goes to a stream that is not a terminal", () => {
    const { seen, console } = recording()
    const plain = Report.plainConsole(console, { stdout: false, stderr: false })
    Effect.runSync(Effect.zipRight(plain.log(bold, 1), plain.error(bold)))
    assert.deepStrictEqual(seen, ["USAGE", 1, "USAGE"])
  })

  it("leaves them for a terminal, stream by stream", () => {
    const { seen, console } = recording()
    const plain = Report.plainConsole(console, { stdout: true, stderr: false })
    Effect.runSync(Effect.zipRight(plain.log(bold), plain.error(bold)))
    assert.deepStrictEqual(seen, [bold, "USAGE"])
  })
})
