/**
 * The reference pages state what is true now, held to the code they describe in both directions:
 * docs/cli.md names every verb and flag `agentplane --help` lists and no other; docs/http-api.md's
 * route table lists every operation of the API and no other; docs/policy.md names every route
 * action a policy can decide. A verb, route, flag or action added, renamed or removed in the code
 * fails here until its page says so.
 *
 * The CLI part runs the built command (`npm run build`).
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { OpenApi } from "@effect/platform"
import { beforeAll, describe, it } from "vitest"
import { Api } from "../../src/http/Api.js"
import { Action } from "../../src/http/Authorizer.js"
import * as Process from "../package/Process.js"
import { assert } from "../support/Assert.js"
import { flagsOf, verbsOf } from "./Help.js"

const page = (name: string) => readFileSync(join(Process.ROOT, "docs", name), "utf8")

const MAIN = join(Process.ROOT, "dist", "src", "cli", "Main.js")

const help = async (args: ReadonlyArray<string>): Promise<string> => {
  const run = Process.start("node", [MAIN, ...args], { cwd: Process.ROOT })
  assert.strictEqual(await Process.finish(run), 0, run.stderr())
  return run.stdout()
}

/** Every `--flag` a page names, inside code or out. */
const flagsNamed = (text: string): ReadonlySet<string> =>
  new Set([...text.matchAll(/(?<![\w-])--[a-z][a-z-]*/g)].map((m) => m[0]))

/** The rows of the route table: `METHOD /path`, query strings dropped. */
const routesListed = (text: string): ReadonlyArray<string> =>
  [...text.matchAll(/^\| `(GET|POST|PUT|DELETE|OPTIONS|PATCH) ([^`?]+)(?:\?[^`]*)?` \|/gm)].map(
    (m) => `${m[1]} ${m[2]}`,
  )

describe("docs/cli.md", () => {
  let verbs: ReadonlyArray<string> = []
  const flags = new Map<string, ReadonlyArray<string>>()
  beforeAll(async () => {
    Process.assertBuilt()
    verbs = verbsOf(await help(["--help"]))
    for (const verb of verbs) flags.set(verb, flagsOf(await help([verb, "--help"])))
  }, 120_000)

  it("has a section for every verb of agentplane --help", () => {
    assert.isTrue(verbs.includes("serve") && verbs.includes("log"), `verbs read: ${verbs.join(" ")}`)
    const headings = [...page("cli.md").matchAll(/^## (.*)$/gm)].map((m) => m[1] ?? "")
    const missing = verbs.filter((verb) => !headings.some((h) => h.split(/[ ,]+/).includes(verb)))
    assert.deepStrictEqual(missing, [], "verbs with no section")
  })

  it("with configuration.md names every flag of every verb", () => {
    const named = new Set([...flagsNamed(page("cli.md")), ...flagsNamed(page("configuration.md"))])
    const missing = [...flags].flatMap(([verb, list]) =>
      list.filter((flag) => !named.has(flag)).map((flag) => `${verb} ${flag}`),
    )
    assert.deepStrictEqual(missing, [], "flags no page names")
  })

  it("names no flag that no verb takes", () => {
    const real = new Set(["--help", "--version", "--completions", ...[...flags.values()].flat()])
    const stale = [...flagsNamed(page("cli.md")), ...flagsNamed(page("configuration.md"))].filter((f) => !real.has(f))
    assert.deepStrictEqual(stale, [], "flags named on a page but taken by no verb")
  })
})

describe("docs/http-api.md", () => {
  const operations = Object.entries(OpenApi.fromApi(Api).paths).flatMap(([path, item]) =>
    ["get", "post", "put", "delete", "options", "patch"]
      .filter((method) => (item as Record<string, unknown>)[method] !== undefined)
      .map((method) => `${method.toUpperCase()} ${path}`),
  )

  it("lists every operation of the API in its route table, and no other", () => {
    assert.isTrue(operations.includes("POST /runs"), `operations read: ${operations.join(", ")}`)
    const listed = routesListed(page("http-api.md"))
    assert.deepStrictEqual(
      operations.filter((op) => !listed.includes(op)),
      [],
      "operations the table does not list",
    )
    assert.deepStrictEqual(
      listed.filter((row) => !operations.includes(row)),
      [],
      "rows that are no operation",
    )
  })
})

describe("docs/policy.md", () => {
  it("names every route action a policy decides, and http-api.md gives each its route", () => {
    const policy = page("policy.md")
    const http = page("http-api.md")
    const missing = Action.literals.filter((action) => !policy.includes(`\`${action}\``))
    assert.deepStrictEqual(missing, [], "actions policy.md does not name")
    const unrouted = Action.literals.filter((action) => !http.includes(`| \`${action}\` |`))
    assert.deepStrictEqual(unrouted, [], "actions with no row in http-api.md")
  })
})

describe("the reference test's reading of help", () => {
  it("takes the verbs under Commands and the flags with their aliases", () => {
    const top = ["Usage: x", "", "Commands:", "  serve   serve it", "  erase-case  erase", "", "Run x"].join("\n")
    assert.deepStrictEqual(verbsOf(top), ["serve", "erase-case"])
    const verb = ["Flags:", "  --store, --database-url text", "      SQLite file (--not-a-flag)", "  --no-kek"].join(
      "\n",
    )
    assert.deepStrictEqual(flagsOf(verb), ["--store", "--database-url", "--no-kek"])
  })
})
