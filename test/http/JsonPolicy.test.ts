/**
 * The JSON allow list of the older form, read only to be translated to Cedar: deny by default,
 * allow by action or family, and refuse any rule it cannot read exactly.
 */
import { randomUUID } from "node:crypto"
import { rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeFileSystem } from "@effect/platform-node"
import { describe, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { TenantId } from "../../src/domain/Tenant.js"
import { Caller } from "../../src/http/Caller.js"
import * as JsonPolicy from "../../src/http/JsonPolicy.js"
import { assert } from "../support/Assert.js"

const caller = (...roles: ReadonlyArray<string>) => new Caller({ tenant: TenantId.make("acme"), actor: "alice", roles })

const policy = (allow: ReadonlyArray<unknown>): JsonPolicy.Policy => {
  const decoded = JsonPolicy.decode({ allow }, "policy.json")
  if (Either.isLeft(decoded)) return assert.fail(decoded.left.message)
  return decoded.right
}

/** The refusal `file` earns; the test fails if it is accepted. */
const refusal = (file: unknown): string => {
  const decoded = JsonPolicy.decode(file, "policy.json")
  if (Either.isRight(decoded)) return assert.fail(`accepted ${JSON.stringify(file)}`)
  assert.strictEqual(decoded.left.source, "policy.json")
  return decoded.left.message
}

/** The refusal the JSON text `json` earns; the test fails if it is accepted. */
const parseRefusal = (json: string): string => {
  const parsed = JsonPolicy.parse(json, "policy.json")
  if (Either.isRight(parsed)) return assert.fail(`accepted ${json}`)
  assert.strictEqual(parsed.left.source, "policy.json")
  return parsed.left.message
}

describe("JsonPolicy.allows", () => {
  it("an exact rule allows its action for its roles only", () => {
    const p = policy([{ action: "api:admin.halt", roles: ["admin"] }])
    assert.isTrue(JsonPolicy.allows(p, caller("viewer", "admin"), "api:admin.halt"))
    assert.isFalse(JsonPolicy.allows(p, caller("viewer"), "api:admin.halt"))
    assert.isFalse(JsonPolicy.allows(p, caller("admin"), "api:census.read"))
    assert.isFalse(JsonPolicy.allows(p, caller(), "api:admin.halt"))
  })

  it("a family rule covers every action of the family and no other", () => {
    const p = policy([{ action: "api:task.*", roles: ["reviewer"] }])
    for (const action of ["api:task.list", "api:task.claim", "api:task.decide", "api:task.takeover"] as const) {
      assert.isTrue(JsonPolicy.allows(p, caller("reviewer"), action), action)
    }
    assert.isFalse(JsonPolicy.allows(p, caller("reviewer"), "api:case.read"))
  })

  it("rules add up: an action is allowed for the roles of every rule covering it", () => {
    const p = policy([
      { action: "api:case.*", roles: ["reviewer"] },
      { action: "api:case.read", roles: ["agent"] },
    ])
    assert.isTrue(JsonPolicy.allows(p, caller("agent"), "api:case.read"))
    assert.isTrue(JsonPolicy.allows(p, caller("reviewer"), "api:case.read"))
    assert.isFalse(JsonPolicy.allows(p, caller("agent"), "api:case.list"))
  })

  it("roles match exactly: no case folding, no prefixes", () => {
    const p = policy([{ action: "api:admin.halt", roles: ["admin"] }])
    assert.isFalse(JsonPolicy.allows(p, caller("Admin"), "api:admin.halt"))
    assert.isFalse(JsonPolicy.allows(p, caller("admins"), "api:admin.halt"))
  })
})

describe("JsonPolicy.decode refuses", () => {
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

describe("JsonPolicy.fromFile", () => {
  it.effect("reads the file; a missing file is refused, naming it", () =>
    Effect.gen(function* () {
      const path = join(tmpdir(), `agentplane-policy-${randomUUID()}.json`)
      const missing = yield* Effect.either(JsonPolicy.fromFile(path))
      assert.isTrue(Either.isLeft(missing) && missing.left.message.startsWith(`policy ${path}: cannot be read`))
      writeFileSync(path, JSON.stringify({ allow: [{ action: "api:admin.halt", roles: ["admin"] }] }))
      try {
        const read = yield* JsonPolicy.fromFile(path)
        assert.isTrue(JsonPolicy.allows(read, caller("admin"), "api:admin.halt"))
        assert.isFalse(JsonPolicy.allows(read, caller("admin"), "api:census.read"))
      } finally {
        rmSync(path, { force: true })
      }
    }).pipe(Effect.provide(NodeFileSystem.layer)),
  )
})
