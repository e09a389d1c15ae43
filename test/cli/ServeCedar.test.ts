/**
 * `serve --policy` with a Cedar bundle: the routes are decided by it (a reviewer may list cases,
 * the agent may not, and a forbid on one case refuses that case with its reason), and a bundle
 * that does not validate refuses the start, naming the problem, before the store opens.
 */
import { randomUUID } from "node:crypto"
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, describe, inject, it } from "vitest"
import { assert } from "../support/Assert.js"
import { cleanUp, refusedServe, scratchFile, serve } from "../support/Cli.js"

const bundles: Array<string> = []
afterAll(() => {
  cleanUp()
  for (const dir of bundles.splice(0)) rmSync(dir, { recursive: true, force: true })
})

const tokens = join("examples", "demo-tokens.json")
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

const bundle = (text: string): string => {
  const dir = join(inject("scratchDir"), `bundle-${randomUUID()}`)
  bundles.push(dir)
  mkdirSync(dir)
  writeFileSync(join(dir, "routes.cedar"), text)
  return dir
}

describe("serve --policy <Cedar bundle>", () => {
  it("decides every route by the bundle", { timeout: 120_000 }, async () => {
    const policy = bundle(`
permit (principal in Agentplane::Role::"reviewer", action in Agentplane::Action::"api", resource);
@reason("case under legal hold")
forbid (principal, action == Agentplane::Action::"api:case.read", resource == Agentplane::Case::"case_01JHEKD0000000000000000000");
`)
    const server = serve([
      "--store",
      scratchFile("cedar.db"),
      "--addr",
      "127.0.0.1:0",
      "--tokens",
      tokens,
      "--policy",
      policy,
    ])
    try {
      const base = await server.address
      const reviewer = await fetch(`${base}/cases`, { headers: bearer("demo-reviewer-token") })
      assert.strictEqual(reviewer.status, 200)
      const agent = await fetch(`${base}/cases`, { headers: bearer("demo-agent-token") })
      assert.strictEqual(agent.status, 403)
      const held = await fetch(`${base}/cases/case_01JHEKD0000000000000000000`, {
        headers: bearer("demo-reviewer-token"),
      })
      assert.strictEqual(held.status, 403)
      assert.isTrue((await held.text()).includes("legal hold"))
      // Another case is not held: the reviewer reaches the route (and learns it does not exist).
      const other = await fetch(`${base}/cases/case_01JQTHER000000000000000000`, {
        headers: bearer("demo-reviewer-token"),
      })
      assert.strictEqual(other.status, 404)
    } finally {
      server.child.kill("SIGTERM")
      await server.done
    }
  })

  it("refuses to start on a bundle that does not validate, before the store opens", { timeout: 60_000 }, async () => {
    const policy = bundle(
      `permit (principal in Agentplane::Role::"reviewer", action == Agentplane::Action::"api:case.lst", resource);`,
    )
    const store = scratchFile("refused.db")
    const finished = await refusedServe([
      "--store",
      store,
      "--addr",
      "127.0.0.1:0",
      "--tokens",
      tokens,
      "--policy",
      policy,
    ])
    assert.notStrictEqual(finished.code, 0)
    assert.isTrue(finished.stderr.includes("api:case.lst"), finished.stderr)
    assert.isFalse(existsSync(store))
  })
})
