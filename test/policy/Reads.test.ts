/**
 * What a bundle's policies read of a request (`policy/Reads.ts`), and the Cedar engine's decision
 * memo keyed by it: a part no policy reads is not in the key, a part one reads is, and a
 * remembered decision is always the one Cedar takes when asked afresh.
 */
import { describe, it } from "@effect/vitest"
import { Either, FastCheck } from "effect"
import type { Json } from "../../src/domain/Json.js"
import { Context, PolicyRequest, Principal } from "../../src/domain/PolicyRequest.js"
import { TenantId } from "../../src/domain/Tenant.js"
import * as PolicyEngineCedar from "../../src/layers/PolicyEngineCedar.js"
import * as Bundle from "../../src/policy/Bundle.js"
import * as Reads from "../../src/policy/Reads.js"
import { assert } from "../support/Assert.js"
import { loaded, refunds, request } from "./Support.js"

const SCHEMA = `action "t.send" in [Agentplane::Action::"effect"] appliesTo {
  principal: Agentplane::Agent,
  resource: [Agentplane::Case, Agentplane::Run],
  context: Agentplane::EffectContext,
};`

const reads = (policies: string) =>
  loaded(Bundle.make("reads-test", [{ name: "p.cedar", text: policies }], [SCHEMA])).reads

const ask = (
  fields: {
    readonly action?: string
    readonly capability?: string
    readonly roles?: ReadonlyArray<string>
    readonly run?: string
    readonly args?: Json
    readonly label?: "trusted" | "untrusted"
    readonly mutates?: boolean
  } = {},
) =>
  new PolicyRequest({
    principal: new Principal({
      capability: fields.capability ?? "agent",
      governedBy: "team",
      tenant: TenantId.make("acme"),
      admittedBy: "alice",
      roles: [...(fields.roles ?? [])],
    }),
    action: fields.action ?? "t.send",
    resource: { _tag: "Run", id: fields.run ?? "run-1" },
    context: new Context({
      mutates: fields.mutates ?? true,
      phase: "forward",
      args: fields.args ?? { n: 1 },
      label: fields.label ?? "trusted",
      provenances: [],
    }),
  })

describe("Reads", () => {
  it("a permit for everything reads nothing: the key is the action alone", () => {
    const r = reads(`permit (principal, action, resource);`)
    assert.deepStrictEqual(r, { principal: false, resource: false, context: new Set<string>() })
    assert.strictEqual(
      Reads.key(r, ask({ run: "a", args: { n: 1 }, capability: "x" })),
      Reads.key(r, ask({ run: "b", args: { n: 2 }, capability: "y", label: "untrusted" })),
    )
    assert.notStrictEqual(Reads.key(r, ask()), Reads.key(r, ask({ action: "agentplane.release" })))
  })

  it("context.<attr> and context has <attr> read that attribute only", () => {
    const r = reads(
      `permit (principal, action == Action::"t.send", resource) when { context.label == "trusted" && context has argsJson };`,
    )
    assert.deepStrictEqual(r, { principal: false, resource: false, context: new Set(["label", "argsJson"]) })
    assert.notStrictEqual(Reads.key(r, ask({ label: "trusted" })), Reads.key(r, ask({ label: "untrusted" })))
    // argsJson is the canonical arguments: another argument is another key.
    assert.notStrictEqual(Reads.key(r, ask({ args: { n: 1 } })), Reads.key(r, ask({ args: { n: 2 } })))
    assert.strictEqual(Reads.key(r, ask({ mutates: true })), Reads.key(r, ask({ mutates: false })))
  })

  it("the context as a whole value reads all of it", () => {
    const r = reads(`permit (principal, action == Action::"t.send", resource) when { context == context };`)
    assert.strictEqual(r.context, "all")
    assert.notStrictEqual(Reads.key(r, ask({ mutates: true })), Reads.key(r, ask({ mutates: false })))
  })

  it("a scope on the principal, or principal in a condition, reads the principal and its roles", () => {
    const scoped = reads(`permit (principal in Agentplane::Role::"reviewer", action, resource);`)
    assert.deepStrictEqual([scoped.principal, scoped.resource], [true, false])
    assert.notStrictEqual(Reads.key(scoped, ask({ roles: ["reviewer"] })), Reads.key(scoped, ask({ roles: [] })))
    const named = reads(`permit (principal, action, resource) when { principal.admittedBy == "alice" };`)
    assert.deepStrictEqual([named.principal, named.resource], [true, false])
  })

  it("resource in a scope or a condition reads the resource", () => {
    assert.isTrue(reads(`permit (principal, action, resource is Agentplane::Run);`).resource)
    assert.isTrue(reads(`permit (principal, action, resource) when { resource is Agentplane::Run };`).resource)
  })

  it("an entity literal of a type built from the request reads principal and resource; a role's does not", () => {
    const literal = reads(`permit (principal, action, resource) when { Agentplane::Run::"run-1".tenant == "acme" };`)
    assert.deepStrictEqual([literal.principal, literal.resource], [true, true])
    assert.notStrictEqual(Reads.key(literal, ask({ run: "run-1" })), Reads.key(literal, ask({ run: "run-2" })))
    const role = reads(`permit (principal, action, resource) when { Agentplane::Role::"x" == Agentplane::Role::"x" };`)
    assert.deepStrictEqual([role.principal, role.resource], [false, false])
  })
})

describe("PolicyEngineCedar decision memo", () => {
  it("requests that differ only in what no policy reads are decided once", () => {
    const bundle = loaded(
      Bundle.make("memo", [{ name: "p.cedar", text: `permit (principal, action, resource);` }], [SCHEMA]),
    )
    for (const n of [1, 2, 3]) {
      const answer = PolicyEngineCedar.explain(bundle, ask({ run: `run-${n}`, args: { n } }))
      assert.strictEqual(Either.getOrThrow(answer).decision._tag, "Allow")
    }
    assert.strictEqual(bundle.memo.size, 1)
  })

  it("holds at most MEMO_SIZE decisions", () => {
    const bundle = loaded(
      Bundle.make(
        "memo-bound",
        [
          {
            name: "p.cedar",
            text: `permit (principal, action == Action::"t.send", resource) when { context.argsJson != "" };`,
          },
        ],
        [SCHEMA],
      ),
    )
    for (let n = 0; n < PolicyEngineCedar.MEMO_SIZE + 10; n++) PolicyEngineCedar.explain(bundle, ask({ args: { n } }))
    assert.strictEqual(bundle.memo.size, PolicyEngineCedar.MEMO_SIZE)
  })

  it("a request whose key is longer than MEMO_KEY_CHARS is decided but not remembered", () => {
    const bundle = loaded(
      Bundle.make(
        "memo-long",
        [
          {
            name: "p.cedar",
            text: `permit (principal, action == Action::"t.send", resource) when { context.argsJson != "" };`,
          },
        ],
        [SCHEMA],
      ),
    )
    const long = ask({ args: { body: "x".repeat(PolicyEngineCedar.MEMO_KEY_CHARS) } })
    assert.strictEqual(Either.getOrThrow(PolicyEngineCedar.explain(bundle, long)).decision._tag, "Allow")
    assert.strictEqual(bundle.memo.size, 0)
    PolicyEngineCedar.explain(bundle, ask({ args: { body: "short" } }))
    assert.strictEqual(bundle.memo.size, 1)
  })

  it("a remembered decision is the one Cedar takes afresh (refund bundle, random requests)", () => {
    const remembering = loaded()
    const fresh = loaded(refunds())
    const requests = FastCheck.record({
      action: FastCheck.constantFrom("refund.issue", "mail.send", "customer.lookup"),
      amount: FastCheck.constantFrom(100, 50000, 50001, 90000),
      label: FastCheck.constantFrom("trusted" as const, "untrusted" as const),
      mutates: FastCheck.boolean(),
    })
    FastCheck.assert(
      FastCheck.property(FastCheck.array(requests, { minLength: 1, maxLength: 20 }), (batch) => {
        for (const r of batch) {
          const req = request(r.action, { amount: r.amount, currency: "EUR" }, r.label, { mutates: r.mutates })
          fresh.memo.clear()
          assert.deepStrictEqual(
            Either.getOrThrow(PolicyEngineCedar.explain(remembering, req)),
            Either.getOrThrow(PolicyEngineCedar.explain(fresh, req)),
          )
        }
      }),
      { numRuns: 50 },
    )
    // The refund bundle reads the label, the mutation flag and the arguments, never the principal or the case.
    assert.deepStrictEqual(remembering.reads, {
      principal: false,
      resource: false,
      context: new Set(["mutates", "label", "args"]),
    })
  })
})
