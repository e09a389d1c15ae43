/**
 * A policy request as an operator writes it in JSON: a well-formed one decodes, a malformed one
 * is `RequestMalformed` naming each field at fault, and an unknown field is refused.
 */
import { describe, it } from "@effect/vitest"
import { Either } from "effect"
import * as PolicyRequest from "../../src/domain/PolicyRequest.js"
import { assert } from "../support/Assert.js"

const written = {
  principal: { capability: "refund-agent", governedBy: "payments-team", tenant: "acme", admittedBy: "alice" },
  action: "refund.issue",
  resource: { _tag: "Case", id: "case_01JDEMO" },
  context: { mutates: true, phase: "forward", args: { amount: 1200 }, label: "untrusted", provenances: ["event:mail"] },
}

/** The `RequestMalformed` detail `u` earns; the test fails if it decodes. */
const refusal = (u: unknown): string =>
  Either.match(PolicyRequest.decode(u), {
    onLeft: (e) => {
      assert.strictEqual(e._tag, "RequestMalformed")
      return e.detail
    },
    onRight: () => assert.fail(`decoded ${JSON.stringify(u)}`),
  })

describe("PolicyRequest.decode", () => {
  it("decodes a request as written, a run's principal having no roles", () => {
    const decoded = Either.getOrElse(PolicyRequest.decode(written), (e) => assert.fail(e.message))
    assert.strictEqual(decoded.action, "refund.issue")
    assert.deepStrictEqual(decoded.principal.roles, [])
    assert.strictEqual(decoded.context.label, "untrusted")
  })

  it("refuses a label that is neither trusted nor untrusted, naming the field", () => {
    assert.match(refusal({ ...written, context: { ...written.context, label: "maybe" } }), /context\.label/)
  })

  it("refuses a missing field, naming it", () => {
    const { action: _, ...noAction } = written
    assert.match(refusal(noAction), /^action: /)
  })

  it("refuses an unknown field rather than ignoring it", () => {
    assert.match(refusal({ ...written, context: { ...written.context, lable: "trusted" } }), /context\.lable/)
  })

  it("refuses a tenant that is not one", () => {
    assert.match(refusal({ ...written, principal: { ...written.principal, tenant: 7 } }), /principal\.tenant/)
  })
})
