/**
 * `agentplane policy` as a real process: `validate` exits 0 with the bundle's digest, 2 listing
 * each problem of a bundle that does not validate, 1 when there is nothing to read; `check`
 * prints the decision and the policies that took it for a request given inline or in a file, and
 * exits 1 for a malformed request; `schema` prints the shipped schema; `translate` prints a JSON
 * route policy as Cedar text that validates as a bundle of its own.
 */
import { randomUUID } from "node:crypto"
import { cpSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, describe, inject, it } from "vitest"
import * as AgentplaneSchema from "../../src/policy/AgentplaneSchema.js"
import { REFUNDS, refunds } from "../policy/Support.js"
import { assert } from "../support/Assert.js"
import { cleanUp, cli, scratchFile } from "../support/Cli.js"

const bundles: Array<string> = []
afterAll(() => {
  cleanUp()
  for (const dir of bundles.splice(0)) rmSync(dir, { recursive: true, force: true })
})

const request = (label: "trusted" | "untrusted", amount: number) => ({
  principal: { capability: "refund-agent", governedBy: "payments-team", tenant: "acme", admittedBy: "alice" },
  action: "refund.issue",
  resource: { _tag: "Case", id: "case_01JDEMO" },
  context: { mutates: true, phase: "forward", args: { amount, currency: "EUR" }, label, provenances: [] },
})

/** A copy of the refund bundle with `edit` applied to `file`. */
const edited = (file: string, edit: (text: string) => string): string => {
  const dir = join(inject("scratchDir"), `bundle-${randomUUID()}`)
  bundles.push(dir)
  cpSync(REFUNDS, dir, { recursive: true })
  writeFileSync(join(dir, file), edit(readFileSync(join(dir, file), "utf8")))
  return dir
}

describe("agentplane policy", () => {
  it("validate exits 0 with the digest, 2 with each problem, 1 for a path it cannot read", {
    timeout: 180_000,
  }, async () => {
    const broken = edited("effects.cedar", (text) => text.replace("context.mutates", "context.mutating"))
    const [valid, invalid, missing, bare] = await Promise.all([
      cli(["policy", "validate", REFUNDS]),
      cli(["policy", "validate", broken]),
      cli(["policy", "validate", scratchFile("absent")]),
      cli(["policy", "validate"]),
    ])
    assert.strictEqual(valid.code, 0, valid.stderr)
    const report = JSON.parse(valid.stdout) as { valid: boolean; digest: string; policies: ReadonlyArray<string> }
    assert.strictEqual(report.valid, true)
    assert.strictEqual(report.digest, refunds().digest)
    assert.include(report.policies, "refund-untrusted-reviewed")
    assert.strictEqual(valid.stderr, "")

    assert.strictEqual(invalid.code, 2, invalid.stderr)
    const refusal = JSON.parse(invalid.stdout) as { valid: boolean; problems: ReadonlyArray<string> }
    assert.strictEqual(refusal.valid, false)
    assert.isTrue(refusal.problems.length > 0)
    for (const problem of refusal.problems) assert.match(problem, /^policy no-untrusted-mutations: .*`mutating`/)
    assert.isTrue(invalid.stderr.startsWith("agentplane: "), invalid.stderr)

    assert.strictEqual(missing.code, 1, missing.stderr)
    assert.match(missing.stderr, /^agentplane: policy bundle .* cannot be read/)
    assert.strictEqual(bare.code, 1, bare.stderr)
    assert.match(bare.stderr, /needs a bundle/)
  })

  it("check prints the decision and the deciding policies, for a request inline or in a file", {
    timeout: 180_000,
  }, async () => {
    const file = scratchFile("request.json")
    writeFileSync(file, JSON.stringify(request("trusted", 90000)))
    const malformed = { ...request("trusted", 1), context: { ...request("trusted", 1).context, label: "maybe" } }
    const [approval, denied, allowed, bad, notJson] = await Promise.all([
      cli(["policy", "check", REFUNDS, "--request", JSON.stringify(request("untrusted", 1200))]),
      cli(["policy", "check", REFUNDS, "--request", file]),
      cli(["policy", "check", REFUNDS, "--request", JSON.stringify(request("trusted", 1200))]),
      cli(["policy", "check", REFUNDS, "--request", JSON.stringify(malformed)]),
      cli(["policy", "check", REFUNDS, "--request", "{nope"]),
    ])
    assert.strictEqual(approval.code, 0, approval.stderr)
    assert.deepStrictEqual(JSON.parse(approval.stdout), {
      decision: "RequireApproval",
      roles: ["reviewer"],
      reason: "the refund's amount came from untrusted input: a reviewer approves it first",
      policies: [
        {
          id: "refund-untrusted-reviewed",
          effect: "permit",
          annotations: {
            id: "refund-untrusted-reviewed",
            approval: "reviewer",
            reason: "the refund's amount came from untrusted input: a reviewer approves it first",
          },
        },
      ],
      bundle: refunds().digest,
    })
    assert.strictEqual(denied.code, 0, denied.stderr)
    const deny = JSON.parse(denied.stdout) as {
      decision: string
      reason: string
      policies: ReadonlyArray<{ id: string }>
    }
    assert.deepStrictEqual(
      { decision: deny.decision, reason: deny.reason, ids: deny.policies.map((p) => p.id) },
      { decision: "Deny", reason: "an agent never refunds more than 500.00", ids: ["refund-ceiling"] },
    )
    assert.strictEqual(allowed.code, 0, allowed.stderr)
    const allow = JSON.parse(allowed.stdout) as { decision: string; policies: ReadonlyArray<{ id: string }> }
    assert.deepStrictEqual(
      { decision: allow.decision, ids: allow.policies.map((p) => p.id) },
      { decision: "Allow", ids: ["refund-trusted"] },
    )
    assert.strictEqual(bad.code, 1, bad.stderr)
    assert.match(bad.stderr, /^agentplane: policy request is malformed: context\.label/)
    assert.strictEqual(bad.stdout, "")
    assert.strictEqual(notJson.code, 1, notJson.stderr)
    assert.match(notJson.stderr, /malformed: not JSON/)
  })

  it("translate prints a JSON route policy as Cedar that serves as a bundle of its own; a bad file exits 1", {
    timeout: 180_000,
  }, async () => {
    const json = `${scratchFile("routes")}.json`
    bundles.push(json)
    writeFileSync(
      json,
      JSON.stringify({
        allow: [
          { action: "api:task.*", roles: ["reviewer"] },
          { action: "api:event.deliver", roles: ["agent"] },
        ],
      }),
    )
    const printed = await cli(["policy", "translate", json])
    assert.strictEqual(printed.code, 0, printed.stderr)
    assert.match(printed.stdout, /permit \(\n {2}principal in Agentplane::Role::"reviewer"/)
    const file = `${scratchFile("translated")}.cedar`
    bundles.push(file)
    writeFileSync(file, printed.stdout)
    const valid = await cli(["policy", "validate", file])
    assert.strictEqual(valid.code, 0, valid.stderr)
    const missing = await cli(["policy", "translate", scratchFile("absent.json")])
    assert.strictEqual(missing.code, 1)
    assert.match(missing.stderr, /cannot be read/)
  })

  it("the demo bundle validates, and decides the refund run's refund by where its amount came from and how large it is", {
    timeout: 180_000,
  }, async () => {
    const demo = join("examples", "demo-policy")
    const refund = (label: "trusted" | "untrusted", provenances: ReadonlyArray<string>, amountMinor = 4000) =>
      JSON.stringify({
        principal: { capability: "refund.reviewed", governedBy: "ops", tenant: "default", admittedBy: "ops" },
        action: "payments.refund",
        resource: { _tag: "Case", id: "case_01JDEMO" },
        context: {
          mutates: true,
          phase: "forward",
          args: { invoice: "INV-2026-0042", amountMinor, run: "run_01JDEMO" },
          label,
          provenances,
        },
      })
    const [valid, operator, event, large, largeOperator] = await Promise.all([
      cli(["policy", "validate", demo]),
      cli(["policy", "check", demo, "--request", refund("trusted", [])]),
      cli(["policy", "check", demo, "--request", refund("untrusted", ["event:payment.captured"])]),
      cli(["policy", "check", demo, "--request", refund("untrusted", ["event:refund.claimed"], 50_001)]),
      cli(["policy", "check", demo, "--request", refund("trusted", [], 50_001)]),
    ])
    assert.strictEqual(valid.code, 0, valid.stderr)
    assert.deepStrictEqual((JSON.parse(valid.stdout) as { policies: ReadonlyArray<string> }).policies, [
      "refund the operator asked for",
      "refund steered by an event",
      "no large refund steered by an event",
      "reversals and ledger entries",
      "agent delivers events",
      "reviewer works cases, tasks and runs",
      "admin operates the tenant",
    ])
    assert.strictEqual(operator.code, 0, operator.stderr)
    const allow = JSON.parse(operator.stdout) as { decision: string; policies: ReadonlyArray<{ id: string }> }
    assert.deepStrictEqual(
      { decision: allow.decision, ids: allow.policies.map((p) => p.id) },
      { decision: "Allow", ids: ["refund the operator asked for"] },
    )
    assert.strictEqual(event.code, 0, event.stderr)
    const approval = JSON.parse(event.stdout) as { decision: string; roles: ReadonlyArray<string> }
    assert.deepStrictEqual(
      { decision: approval.decision, roles: approval.roles },
      { decision: "RequireApproval", roles: ["reviewer"] },
    )
    // Above 500.00 an event may not steer it at all; the operator still may.
    assert.strictEqual(large.code, 0, large.stderr)
    const refused = JSON.parse(large.stdout) as { decision: string; reason: string }
    assert.deepStrictEqual(
      { decision: refused.decision, reason: refused.reason },
      { decision: "Deny", reason: "an event's payload may not steer a refund above 500.00" },
    )
    assert.strictEqual((JSON.parse(largeOperator.stdout) as { decision: string }).decision, "Allow")
  })

  it("schema prints agentplane's Cedar schema", { timeout: 180_000 }, async () => {
    const printed = await cli(["policy", "schema"])
    assert.strictEqual(printed.code, 0, printed.stderr)
    assert.strictEqual(printed.stdout, `${AgentplaneSchema.text}\n`)
  })
})
