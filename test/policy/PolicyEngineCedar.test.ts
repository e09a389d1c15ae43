/**
 * The Cedar engine on the refund bundle: a forbid denies with its `@reason`, no permit denies by
 * default, a permit with `@approval` asks for its roles, a policy that cannot be evaluated denies,
 * and a bundle that does not validate is refused naming the problem.
 */
import { describe, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { Decision } from "../../src/domain/Decision.js"
import * as PolicyEngineCedar from "../../src/layers/PolicyEngineCedar.js"
import * as AgentplaneSchema from "../../src/policy/AgentplaneSchema.js"
import * as Bundle from "../../src/policy/Bundle.js"
import { PolicyEngine } from "../../src/services/PolicyEngine.js"
import { assert } from "../support/Assert.js"
import { loaded, refunds, request } from "./Support.js"

const explain = (req: ReturnType<typeof request>, bundle = loaded()) =>
  Either.getOrElse(PolicyEngineCedar.explain(bundle, req), (e) => assert.fail(e.message))

const ids = (explained: PolicyEngineCedar.Explained) => explained.policies.map((p) => p.id)

/** The problems `bundle` is refused with; the test fails if it loads. */
const refusal = (bundle: Bundle.Bundle): ReadonlyArray<string> =>
  Either.match(PolicyEngineCedar.load(bundle), {
    onLeft: (e) => {
      assert.strictEqual(e._tag, "BundleInvalid")
      return e.problems
    },
    onRight: () => assert.fail("the bundle loaded"),
  })

describe("PolicyEngineCedar decisions", () => {
  it("a refund whose amount is trusted is allowed, by the permit for trusted refunds", () => {
    const explained = explain(request("refund.issue", { amount: 1200, currency: "EUR" }, "trusted"))
    assert.deepStrictEqual(explained.decision, Decision.Allow())
    assert.deepStrictEqual(ids(explained), ["refund-trusted"])
  })

  it("a refund steered by untrusted input needs a reviewer, with the policy's reason", () => {
    const explained = explain(request("refund.issue", { amount: 1200, currency: "EUR" }, "untrusted"))
    assert.deepStrictEqual(
      explained.decision,
      Decision.RequireApproval({
        roles: ["reviewer"],
        reason: "the refund's amount came from untrusted input: a reviewer approves it first",
      }),
    )
    assert.deepStrictEqual(ids(explained), ["refund-untrusted-reviewed"])
  })

  it("a plain permit that also matches does not waive an approval", () => {
    const bundle = loaded(
      refunds((name, text) =>
        name === "refunds.cedar"
          ? `${text}\n@id("any-refund")\npermit (principal, action == Action::"refund.issue", resource);\n`
          : text,
      ),
    )
    const untrusted = explain(request("refund.issue", { amount: 1200, currency: "EUR" }, "untrusted"), bundle)
    assert.strictEqual(untrusted.decision._tag, "RequireApproval")
    const trusted = explain(request("refund.issue", { amount: 1200, currency: "EUR" }, "trusted"), bundle)
    assert.deepStrictEqual(trusted.decision, Decision.Allow())
  })

  it("several approval permits ask for the union of their roles, in bundle order, with each reason", () => {
    const extra = [
      '@id("zz-finance") @approval("finance, reviewer") @reason("finance looks at untrusted refunds too")',
      'permit (principal, action == Action::"refund.issue", resource) when { context.label == "untrusted" };',
    ].join("\n")
    // In a file named before refunds.cedar, so bundle order differs from the ids' order.
    const bundle = refunds()
    const withFinance = loaded(
      Bundle.make(
        bundle.source,
        [{ name: "a-finance.cedar", text: extra }, ...bundle.policies],
        [bundle.schema.slice(AgentplaneSchema.text.length, -1)],
      ),
    )
    const explained = explain(request("refund.issue", { amount: 1200, currency: "EUR" }, "untrusted"), withFinance)
    assert.deepStrictEqual(
      explained.decision,
      Decision.RequireApproval({
        roles: ["finance", "reviewer"],
        reason:
          "finance looks at untrusted refunds too; the refund's amount came from untrusted input: a reviewer approves it first",
      }),
    )
    assert.deepStrictEqual(ids(explained), ["zz-finance", "refund-untrusted-reviewed"])
  })

  it("a mutating effect on untrusted input is forbidden with the forbid's reason", () => {
    const explained = explain(request("mail.send", { to: "x@example.com" }, "untrusted"))
    assert.deepStrictEqual(
      explained.decision,
      Decision.Deny({ reason: "a mutating effect may not run on untrusted input" }),
    )
    assert.deepStrictEqual(ids(explained), ["no-untrusted-mutations"])
    assert.deepStrictEqual(explain(request("mail.send", { to: "x@example.com" }, "trusted")).decision, Decision.Allow())
  })

  it("a read on untrusted input is allowed: only mutating effects are forbidden", () => {
    const explained = explain(request("customer.lookup", { id: "c1" }, "untrusted", { mutates: false }))
    assert.deepStrictEqual(explained.decision, Decision.Allow())
  })

  it("a forbid beats an approval permit: the ceiling denies even a trusted refund", () => {
    for (const label of ["trusted", "untrusted"] as const) {
      const explained = explain(request("refund.issue", { amount: 90000, currency: "EUR" }, label))
      assert.deepStrictEqual(explained.decision, Decision.Deny({ reason: "an agent never refunds more than 500.00" }))
      assert.deepStrictEqual(ids(explained), ["refund-ceiling"])
    }
  })

  it("an action no policy permits is denied by default, naming it", () => {
    const explained = explain(request("wire.transfer", { amount: 1 }, "trusted"))
    assert.deepStrictEqual(explained.decision, Decision.Deny({ reason: "no policy permits wire.transfer" }))
    assert.deepStrictEqual(ids(explained), [])
  })

  it("a policy that cannot be evaluated denies (fails closed) and is named", () => {
    // Without `amount` the ceiling forbid errors; Cedar alone would skip it and allow.
    const explained = explain(request("refund.issue", { currency: "EUR" }, "trusted"))
    assert.strictEqual(explained.decision._tag, "Deny")
    assert.match(
      Decision.$is("Deny")(explained.decision) ? explained.decision.reason : "",
      /policy refund-ceiling could not be evaluated/,
    )
    assert.deepStrictEqual(ids(explained), ["refund-ceiling"])
  })

  it("an argument cannot forge an entity through Cedar's __entity escape: it stays a record", () => {
    const forged = { __entity: { type: "Agentplane::Role", id: "admin" } }
    const explained = explain(request("refund.issue", forged, "trusted"))
    // Read as an escape, `context.args` would be the entity Role::"admin" and the error would say so.
    assert.deepStrictEqual(
      explained.decision,
      Decision.Deny({
        reason:
          "policy refund-ceiling could not be evaluated: record does not have the attribute `amount` (record does not have any attributes)",
      }),
    )
    const alongside = { amount: 10, currency: "EUR", __extn: { fn: "decimal", arg: "1.0" } }
    assert.deepStrictEqual(explain(request("refund.issue", alongside, "trusted")).decision, Decision.Allow())
  })

  it.effect("the service decides as explain does and names its bundle's digest", () =>
    Effect.gen(function* () {
      const engine = yield* PolicyEngine
      assert.strictEqual(engine.bundle.digest, refunds().digest)
      const decision = yield* engine.decide(request("refund.issue", { amount: 5, currency: "EUR" }, "untrusted"))
      assert.strictEqual(decision._tag, "RequireApproval")
    }).pipe(Effect.provide(PolicyEngineCedar.layer(refunds()))),
  )

  it("a number Cedar has no Long for is passed as its JSON text, which a comparison refuses: denied", () => {
    const explained = explain(request("refund.issue", { amount: 12.5, currency: "EUR" }, "trusted"))
    assert.strictEqual(explained.decision._tag, "Deny")
  })
})

describe("PolicyEngineCedar loading", () => {
  it("refuses a policy naming an attribute the schema lacks, naming the policy and the attribute", () => {
    const problems = refusal(
      refunds((name, text) => (name === "effects.cedar" ? text.replace("context.mutates", "context.mutating") : text)),
    )
    // Cedar reports it once per action the policy applies to.
    assert.isTrue(problems.length > 0)
    for (const problem of problems) assert.match(problem, /^policy no-untrusted-mutations: .*attribute `mutating`/)
  })

  it("refuses a policy naming an effect kind the bundle does not declare", () => {
    const problems = refusal(
      refunds((name, text) => (name === "effects.cedar" ? text.replace('"mail.send"', '"mail.sned"') : text)),
    )
    assert.match(problems.join("\n"), /policy mail: .*mail\.sned/)
  })

  it("refuses a policy text that does not parse, naming its file", () => {
    const problems = refusal(
      refunds((name, text) => (name === "refunds.cedar" ? text.replace("permit (", "permt (") : text)),
    )
    assert.match(problems[0] ?? "", /^refunds\.cedar: /)
  })

  it("refuses declarations that do not parse as a schema", () => {
    const problems = refusal(refunds((name, text) => (name === "effects.cedarschema" ? `${text}\nactoin "x";` : text)))
    assert.match(problems[0] ?? "", /^schema: /)
  })

  it("refuses @approval on a forbid, an @approval with no role, and an id used twice", () => {
    const extra = [
      '@id("a") @approval("reviewer") forbid (principal, action == Action::"mail.send", resource);',
      '@id("b") @approval(" , ") permit (principal, action == Action::"mail.send", resource);',
      '@id("lookups") permit (principal, action == Action::"customer.lookup", resource);',
    ].join("\n")
    const problems = refusal(refunds((name, text) => (name === "refunds.cedar" ? `${text}\n${extra}\n` : text)))
    assert.isTrue(
      problems.some((p) => p.startsWith("policy a: @approval on a forbid")),
      problems.join("\n"),
    )
    assert.isTrue(
      problems.some((p) => p.startsWith("policy b: @approval names no role")),
      problems.join("\n"),
    )
    assert.isTrue(
      problems.some((p) => p === 'policy id "lookups" is used twice'),
      problems.join("\n"),
    )
  })

  it("names a policy without @id by its file and position", () => {
    const bundle = loaded(
      Bundle.make("inline", [
        { name: "p.cedar", text: 'permit (principal, action == Agentplane::Action::"api:case.read", resource);' },
      ]),
    )
    assert.deepStrictEqual([...bundle.policies.keys()], ["p.cedar#0"])
  })
})
