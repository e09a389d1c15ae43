/**
 * `serve --policy` with a Cedar bundle: the routes are decided by it (a reviewer may list cases,
 * the agent may not, and a forbid on one case refuses that case with its reason) and `GET
 * /policy` names it by the digest `policy validate` gives; a bundle that
 * does not validate refuses the start with the validator's message, and one naming a role no
 * credential holds refuses it too, both before the store opens. A JSON allow list, as a file or
 * in `AGENTPLANE_POLICY_JSON`, is refused showing its Cedar equivalent, and that text, pasted
 * into a file, serves the routes as the JSON said.
 */
import { randomUUID } from "node:crypto"
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, describe, inject, it } from "vitest"
import { assert } from "../support/Assert.js"
import { cleanUp, cli, refusedServe, scratchFile, serve } from "../support/Cli.js"

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
      // GET /policy names the bundle served: the digest `policy validate` gives the same directory.
      const validated = await cli(["policy", "validate", policy])
      assert.strictEqual(validated.code, 0, validated.stderr)
      const shown = (await (await fetch(`${base}/policy`, { headers: bearer("demo-reviewer-token") })).json()) as {
        digest: string
        files: ReadonlyArray<string>
      }
      assert.strictEqual(shown.digest, (JSON.parse(validated.stdout) as { digest: string }).digest)
      assert.deepStrictEqual(shown.files, ["routes.cedar"])
    } finally {
      server.child.kill("SIGTERM")
      await server.done
    }
  })

  it("refuses to start on a bundle that does not validate, with the validator's message, before the store opens", {
    timeout: 60_000,
  }, async () => {
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
    assert.strictEqual(finished.code, 1)
    assert.strictEqual(
      finished.stderr.trim(),
      `agentplane: policy ${policy}: policy bundle ${policy} is refused: policy routes.cedar#0: for policy \`routes.cedar#0\`, unrecognized action \`Agentplane::Action::"api:case.lst"\` (did you mean \`Agentplane::Action::"api"\`?)`,
    )
    assert.isFalse(existsSync(store))
  })

  it("refuses a bundle naming a role no credential holds, naming the policy and the role", {
    timeout: 60_000,
  }, async () => {
    const policy = bundle(`
permit (principal in Agentplane::Role::"reviewer", action == Agentplane::Action::"api:case.list", resource);
@id("halts")
permit (principal, action == Agentplane::Action::"api:admin.halt", resource) when { principal in Agentplane::Role::"admn" };
`)
    const store = scratchFile("unheld.db")
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
    assert.strictEqual(finished.code, 1)
    assert.strictEqual(
      finished.stderr.trim(),
      `agentplane: policy ${policy}: policy "halts" names role "admn", which no credential holds (held: agent, reviewer, admin)`,
    )
    assert.isFalse(existsSync(store))
  })
})

describe("serve --policy <JSON allow list>", () => {
  const json = { allow: [{ action: "api:case.*", roles: ["reviewer"] }] }

  /** The Cedar a refusal shows: everything from its first policy on. */
  const cedarOf = (stderr: string): string => stderr.slice(stderr.indexOf("@id(")).trim()

  it("is refused, showing the Cedar that decides as it did, which serves as a bundle once pasted", {
    timeout: 180_000,
  }, async () => {
    const file = `${scratchFile("routes")}.json`
    bundles.push(file)
    writeFileSync(file, JSON.stringify(json))
    const store = scratchFile("json.db")
    const refused = await refusedServe([
      "--store",
      store,
      "--addr",
      "127.0.0.1:0",
      "--tokens",
      tokens,
      "--policy",
      file,
    ])
    assert.strictEqual(refused.code, 1)
    assert.match(
      refused.stderr,
      /^agentplane: policy .*\.json: serve takes a Cedar bundle \(.*\), not a JSON allow list; this Cedar decides every route as the JSON did \(save it as routes\.cedar and give --policy routes\.cedar; agentplane policy translate .*\.json prints it too\): @id\("routes for reviewer"\) permit \(/,
    )
    assert.isFalse(existsSync(store))
    // What the operator pastes, as printed: one line.
    const pasted = `${scratchFile("pasted")}.cedar`
    bundles.push(pasted)
    writeFileSync(pasted, cedarOf(refused.stderr))
    const server = serve(["--store", store, "--addr", "127.0.0.1:0", "--tokens", tokens, "--policy", pasted])
    try {
      const base = await server.address
      assert.strictEqual((await fetch(`${base}/cases`, { headers: bearer("demo-reviewer-token") })).status, 200)
      assert.strictEqual((await fetch(`${base}/tasks`, { headers: bearer("demo-reviewer-token") })).status, 403)
      assert.strictEqual((await fetch(`${base}/cases`, { headers: bearer("demo-admin-token") })).status, 403)
    } finally {
      server.child.kill("SIGTERM")
      await server.done
    }
  })

  it("in AGENTPLANE_POLICY_JSON is refused the same way, even beside a bundle", { timeout: 60_000 }, async () => {
    const store = scratchFile("json-env.db")
    const demo = join("examples", "demo-policy")
    const [alone, beside] = await Promise.all([
      refusedServe(["--store", store, "--addr", "127.0.0.1:0", "--tokens", tokens], {
        AGENTPLANE_POLICY_JSON: JSON.stringify(json),
      }),
      refusedServe(["--store", store, "--addr", "127.0.0.1:0", "--tokens", tokens, "--policy", demo], {
        AGENTPLANE_POLICY_JSON: JSON.stringify(json),
      }),
    ])
    for (const refused of [alone, beside]) {
      assert.strictEqual(refused.code, 1)
      assert.match(
        refused.stderr,
        /^agentplane: policy AGENTPLANE_POLICY_JSON: serve takes a Cedar bundle .*not a JSON allow list; .*\(save it as routes\.cedar and give --policy routes\.cedar\): @id\("routes for reviewer"\)/,
      )
      assert.isTrue(cedarOf(refused.stderr).includes('Agentplane::Action::"api:case.read"'), refused.stderr)
    }
    assert.isFalse(existsSync(store))
  })

  it("that does not even read as one is refused, saying why and that serve takes a bundle", {
    timeout: 60_000,
  }, async () => {
    const store = scratchFile("json-bad.db")
    const refused = await refusedServe(["--store", store, "--addr", "127.0.0.1:0", "--tokens", tokens], {
      AGENTPLANE_POLICY_JSON: JSON.stringify({ allow: [{ action: "api:case.lst", roles: ["reviewer"] }] }),
    })
    assert.strictEqual(refused.code, 1)
    assert.match(
      refused.stderr,
      /^agentplane: policy AGENTPLANE_POLICY_JSON: rule 0: "api:case\.lst" is neither an action .*; besides, serve takes a Cedar bundle/,
    )
    assert.isFalse(existsSync(store))
  })
})
