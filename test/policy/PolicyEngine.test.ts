/**
 * The engines that need no bundle: with none configured every request is denied, saying that no
 * policy is configured; `allowAll` allows everything; each has its own fixed digest; and the
 * shipped schema declares exactly the routes' actions.
 */
import { describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Decision } from "../../src/domain/Decision.js"
import * as Digest from "../../src/domain/Digest.js"
import { Action } from "../../src/http/Authorizer.js"
import * as AgentplaneSchema from "../../src/policy/AgentplaneSchema.js"
import * as Policy from "../../src/services/PolicyEngine.js"
import { PolicyEngine } from "../../src/services/PolicyEngine.js"
import { assert } from "../support/Assert.js"
import { refunds, request } from "./Support.js"

const requests = [
  request("refund.issue", { amount: 90000, currency: "EUR" }, "untrusted"),
  request("customer.lookup", {}, "trusted", { mutates: false }),
  request("api:admin.halt", null, "trusted"),
]

describe("PolicyEngine.denyAll", () => {
  it.effect("denies every request, saying no policy is configured", () =>
    Effect.gen(function* () {
      const engine = yield* PolicyEngine
      for (const r of requests) {
        const decision = yield* engine.decide(r)
        assert.deepStrictEqual(decision, Decision.Deny({ reason: Policy.NO_POLICY_REASON }))
      }
      assert.match(Policy.NO_POLICY_REASON, /^no policy is configured/)
      assert.strictEqual(engine.bundle.digest, Digest.of(Policy.DENY_ALL_MARKER))
    }).pipe(Effect.provide(Policy.denyAll)),
  )
})

describe("PolicyEngine.allowAll", () => {
  it.effect("allows every request, under a digest of its own", () =>
    Effect.gen(function* () {
      const engine = yield* PolicyEngine
      for (const r of requests) assert.deepStrictEqual(yield* engine.decide(r), Decision.Allow())
      assert.strictEqual(engine.bundle.digest, Digest.of(Policy.ALLOW_ALL_MARKER))
      assert.notStrictEqual(engine.bundle.digest, Policy.denyAllEngine.bundle.digest)
      assert.notStrictEqual(engine.bundle.digest, refunds().digest)
    }).pipe(Effect.provide(Policy.allowAll)),
  )
})

describe("AgentplaneSchema", () => {
  it("declares every route action and no other", () => {
    assert.deepStrictEqual([...AgentplaneSchema.API_ACTIONS].sort(), [...Action.literals].sort())
  })
})
