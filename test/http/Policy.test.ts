/**
 * The policy: deny by default, allow by action or family, refuse any rule it cannot read exactly,
 * and count each denial by action.
 */
import { randomUUID } from "node:crypto"
import { rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeFileSystem } from "@effect/platform-node"
import { describe, it } from "@effect/vitest"
import { Effect, Either, Layer, Metric } from "effect"
import { TenantId } from "../../src/domain/Tenant.js"
import { type Action, Authorizer, Forbidden } from "../../src/http/Authorizer.js"
import { Caller } from "../../src/http/Caller.js"
import * as Policy from "../../src/http/Policy.js"
import { assert } from "../support/Assert.js"
import { assertError } from "../support/Errors.js"

const caller = (...roles: ReadonlyArray<string>) => new Caller({ tenant: TenantId.make("acme"), actor: "alice", roles })

const policy = (allow: ReadonlyArray<unknown>): Policy.Policy => {
  const decoded = Policy.decode({ allow }, "policy.json")
  if (Either.isLeft(decoded)) return assert.fail(decoded.left.message)
  return decoded.right
}

/** The refusal `file` earns; the test fails if it is accepted. */
const refusal = (file: unknown): string => {
  const decoded = Policy.decode(file, "policy.json")
  if (Either.isRight(decoded)) return assert.fail(`accepted ${JSON.stringify(file)}`)
  assert.strictEqual(decoded.left.source, "policy.json")
  return decoded.left.message
}

/** The refusal the JSON text `json` earns; the test fails if it is accepted. */
const parseRefusal = (json: string): string => {
  const parsed = Policy.parse(json, "policy.json")
  if (Either.isRight(parsed)) return assert.fail(`accepted ${json}`)
  assert.strictEqual(parsed.left.source, "policy.json")
  return parsed.left.message
}

const authorize = (p: Policy.Policy, who: Caller, action: Action) =>
  Effect.flatMap(Authorizer, (a) => a.authorize(who, action)).pipe(Effect.provide(Policy.layer(p)), Effect.either)

const denialCount = (action: Action) =>
  Effect.map(Metric.value(Metric.tagged(Policy.denials, "action", action)), (state) => state.count)

describe("Policy.allows", () => {
  it("an exact rule allows its action for its roles only", () => {
    const p = policy([{ action: "api:admin.halt", roles: ["admin"] }])
    assert.isTrue(Policy.allows(p, caller("viewer", "admin"), "api:admin.halt"))
    assert.isFalse(Policy.allows(p, caller("viewer"), "api:admin.halt"))
    assert.isFalse(Policy.allows(p, caller("admin"), "api:census.read"))
    assert.isFalse(Policy.allows(p, caller(), "api:admin.halt"))
  })

  it("a family rule covers every action of the family and no other", () => {
    const p = policy([{ action: "api:task.*", roles: ["reviewer"] }])
    for (const action of ["api:task.list", "api:task.claim", "api:task.decide", "api:task.takeover"] as const) {
      assert.isTrue(Policy.allows(p, caller("reviewer"), action), action)
    }
    assert.isFalse(Policy.allows(p, caller("reviewer"), "api:case.read"))
  })

  it("rules add up: an action is allowed for the roles of every rule covering it", () => {
    const p = policy([
      { action: "api:case.*", roles: ["reviewer"] },
      { action: "api:case.read", roles: ["agent"] },
    ])
    assert.isTrue(Policy.allows(p, caller("agent"), "api:case.read"))
    assert.isTrue(Policy.allows(p, caller("reviewer"), "api:case.read"))
    assert.isFalse(Policy.allows(p, caller("agent"), "api:case.list"))
  })

  it("roles match exactly: no case folding, no prefixes", () => {
    const p = policy([{ action: "api:admin.halt", roles: ["admin"] }])
    assert.isFalse(Policy.allows(p, caller("Admin"), "api:admin.halt"))
    assert.isFalse(Policy.allows(p, caller("admins"), "api:admin.halt"))
  })
})

describe("Policy.decode refuses", () => {
  it("an unknown action, naming the rule", () => {
    assert.match(
      refusal({
        allow: [
          { action: "api:task.list", roles: ["r"] },
          { action: "api:task.approve", roles: ["r"] },
        ],
      }),
      /^policy policy\.json: rule 1: "api:task\.approve" is neither an action nor a "<prefix>\.\*" family/,
    )
  })

  it("a rule for api:metrics.read, which no route consults, naming the scrape credential instead", () => {
    assert.match(
      refusal({ allow: [{ action: "api:metrics.read", roles: ["admin"] }] }),
      /rule 0: "api:metrics\.read": \/metrics takes only the operator's scrape credential \(--metrics-token-digest\)/,
    )
  })

  it("a pattern covering no action, or not of the <prefix>.* form", () => {
    for (const action of ["api:tasks.*", "*", "api:*", "api:task*", "api:*.list", ".*", "api:task.list.*"]) {
      assert.match(refusal({ allow: [{ action, roles: ["r"] }] }), /rule 0: /, action)
    }
  })

  it("an empty or blank role list", () => {
    assert.match(refusal({ allow: [{ action: "api:task.list", roles: [] }] }), /rule 0: roles: /)
    assert.match(refusal({ allow: [{ action: "api:task.list", roles: [" "] }] }), /rule 0: roles\.0: /)
  })

  it("unknown fields, in a rule or at the top", () => {
    assert.match(refusal({ allow: [{ action: "api:task.list", roles: ["r"], deny: true }] }), /rule 0: deny: /)
    assert.match(refusal({ allow: [{ action: "api:task.list", roles: ["r"] }], deny: [] }), /deny: is unexpected/)
  })

  it("an empty allow list, under which every request would be refused", () => {
    assert.strictEqual(
      refusal({ allow: [] }),
      'policy policy.json: "allow" is empty: every request would be refused (403); list the rules',
    )
  })

  it("a file without an allow list", () => {
    assert.match(refusal({}), /allow: is missing/)
    assert.match(refusal([]), /must be \{"allow"/)
  })

  it("text that is not JSON", () => {
    assert.match(parseRefusal("{allow"), /^policy policy\.json: is not valid JSON: expected a member name/)
  })

  it("a key given twice, at the top or in a rule, naming where (JSON.parse kept the last)", () => {
    const agent = '{"action": "api:event.deliver", "roles": ["agent"]}'
    const admin = '{"action": "api:admin.*", "roles": ["agent"]}'
    assert.match(
      parseRefusal(`{"allow": [${agent}], "allow": [${admin}]}`),
      /^policy policy\.json: is not valid JSON: duplicate member name at \$\.allow /,
    )
    assert.match(
      parseRefusal('{"allow": [{"action": "api:event.deliver", "roles": ["agent"], "roles": ["admin"]}]}'),
      /duplicate member name at \$\.allow\[0\]\.roles /,
    )
    assert.match(
      parseRefusal('{"allow": [{"action": "api:event.deliver", "action": "api:admin.*", "roles": ["agent"]}]}'),
      /duplicate member name at \$\.allow\[0\]\.action /,
    )
  })
})

describe("Policy.checkRoles", () => {
  it("keeps a policy whose every role some credential holds", () => {
    const p = policy([
      { action: "api:task.*", roles: ["reviewer"] },
      { action: "api:admin.*", roles: ["admin", "reviewer"] },
    ])
    assert.deepStrictEqual(Policy.checkRoles(p, ["agent", "reviewer", "admin"]), Either.right(p))
  })

  it("refuses the first rule naming a role no credential holds, naming the rule, role and the roles held", () => {
    const p = policy([
      { action: "api:task.*", roles: ["reviewer"] },
      { action: "api:admin.*", roles: ["admin", "admn"] },
      { action: "api:case.*", roles: ["nobody"] },
    ])
    const checked = Policy.checkRoles(p, ["reviewer", "admin"])
    if (Either.isRight(checked)) return assert.fail("accepted a rule for a role nobody holds")
    assert.strictEqual(checked.left.source, "policy.json")
    assert.strictEqual(
      checked.left.message,
      'policy policy.json: rule 1 ("api:admin.*") names role "admn", which no credential holds (held: reviewer, admin)',
    )
  })

  it("matches roles exactly", () => {
    const p = policy([{ action: "api:task.*", roles: ["Reviewer"] }])
    assert.isTrue(Either.isLeft(Policy.checkRoles(p, ["reviewer"])))
  })
})

describe("Policy.layer", () => {
  it.effect("allows what a rule allows", () =>
    Effect.map(
      authorize(policy([{ action: "api:task.*", roles: ["reviewer"] }]), caller("reviewer"), "api:task.claim"),
      (result) => assert.deepStrictEqual(result, Either.right(undefined)),
    ),
  )

  it.effect("denies everything else with Forbidden naming the action, counted by action", () =>
    Effect.gen(function* () {
      const p = policy([{ action: "api:task.*", roles: ["reviewer"] }])
      const haltsBefore = yield* denialCount("api:admin.halt")
      const claimsBefore = yield* denialCount("api:task.claim")
      const result = yield* authorize(p, caller("reviewer"), "api:admin.halt")
      if (Either.isRight(result)) return assert.fail("halt was allowed")
      assertError(
        result.left,
        new Forbidden({ action: "api:admin.halt", message: "no policy rule allows api:admin.halt for this caller" }),
      )
      yield* authorize(p, caller("agent"), "api:task.claim")
      yield* authorize(p, caller("agent"), "api:task.claim")
      yield* authorize(p, caller("reviewer"), "api:task.claim")
      assert.strictEqual((yield* denialCount("api:admin.halt")) - haltsBefore, 1)
      assert.strictEqual((yield* denialCount("api:task.claim")) - claimsBefore, 2)
    }),
  )

  it.effect("layerFile reads the policy; a missing file refuses to start", () =>
    Effect.gen(function* () {
      const path = join(tmpdir(), `agentplane-policy-${randomUUID()}.json`)
      const build = Layer.build(Policy.layerFile(path).pipe(Layer.provide(NodeFileSystem.layer)))
      const missing = yield* Effect.either(Effect.scoped(build))
      assert.isTrue(Either.isLeft(missing) && missing.left.message.startsWith(`policy ${path}: cannot be read`))
      writeFileSync(path, JSON.stringify({ allow: [{ action: "api:admin.halt", roles: ["admin"] }] }))
      try {
        const allowed = yield* Effect.flatMap(Authorizer, (a) => a.authorize(caller("admin"), "api:admin.halt")).pipe(
          Effect.provide(Policy.layerFile(path).pipe(Layer.provide(NodeFileSystem.layer))),
          Effect.either,
        )
        assert.deepStrictEqual(allowed, Either.right(undefined))
      } finally {
        rmSync(path, { force: true })
      }
    }),
  )
})
