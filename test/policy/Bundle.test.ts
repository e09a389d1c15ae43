/**
 * A bundle's identity: the same files give the same digest however they are listed, and any
 * change to what is evaluated (a policy's character, a declaration, agentplane's schema, a file's
 * name) gives another; a directory is read as `*.cedar` and `*.cedarschema` files.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { NodeFileSystem } from "@effect/platform-node"
import { describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { inject } from "vitest"
import * as Canonical from "../../src/domain/Canonical.js"
import * as Digest from "../../src/domain/Digest.js"
import * as AgentplaneSchema from "../../src/policy/AgentplaneSchema.js"
import * as Bundle from "../../src/policy/Bundle.js"
import { assert } from "../support/Assert.js"
import { REFUNDS, refunds } from "./Support.js"

const scratch = (name: string): string => {
  const dir = join(inject("scratchDir"), `bundle-${name}-${process.pid}-${Date.now()}`)
  mkdirSync(dir, { recursive: true })
  return dir
}

describe("Bundle.digest", () => {
  it("is stable: the same text gives the same digest, whatever order the files are listed in", () => {
    const a = refunds()
    const b = Bundle.make("elsewhere", [...a.policies].reverse(), [
      refunds().schema.slice(AgentplaneSchema.text.length, -1),
    ])
    assert.strictEqual(b.digest, a.digest)
  })

  it("is the documented rule: SHA-256 of the JCS text of bundle, policies by name, and schema", () => {
    const a = refunds()
    const expected = Digest.of(
      Canonical.text({ bundle: 1, policies: a.policies.map((p) => [p.name, p.text]), schema: a.schema }),
    )
    assert.strictEqual(a.digest, expected)
    assert.isTrue(a.schema.startsWith(AgentplaneSchema.text))
  })

  it("changes with one character of a policy", () => {
    const changed = refunds((name, text) => (name === "refunds.cedar" ? text.replace("500.00", "500,00") : text))
    assert.notStrictEqual(changed.digest, refunds().digest)
  })

  it("changes with one character of the declarations: the schema is part of the identity", () => {
    const changed = refunds((name, text) =>
      name === "effects.cedarschema" ? text.replace("deployment", "Deployment") : text,
    )
    assert.notStrictEqual(changed.digest, refunds().digest)
  })

  it("changes when a file is renamed, since unnamed policies are known by their file", () => {
    const a = refunds()
    const renamed = Bundle.make(
      REFUNDS,
      a.policies.map((p) => (p.name === "refunds.cedar" ? { ...p, name: "refund.cedar" } : p)),
      [a.schema.slice(AgentplaneSchema.text.length, -1)],
    )
    assert.notStrictEqual(renamed.digest, a.digest)
  })

  it("does not let text move across a file boundary unnoticed", () => {
    const one = Bundle.make("x", [
      { name: "a.cedar", text: "permit (principal, action, resource);\n" },
      { name: "b.cedar", text: "" },
    ])
    const other = Bundle.make("x", [
      { name: "a.cedar", text: "" },
      { name: "b.cedar", text: "permit (principal, action, resource);\n" },
    ])
    assert.notStrictEqual(one.digest, other.digest)
  })
})

describe("Bundle.read", () => {
  it.effect("reads a directory's *.cedar and *.cedarschema files into the same bundle as make", () =>
    Effect.gen(function* () {
      const read = yield* Bundle.read(REFUNDS)
      assert.strictEqual(read.digest, refunds().digest)
      assert.deepStrictEqual(
        read.policies.map((p) => p.name),
        ["effects.cedar", "refunds.cedar"],
      )
    }).pipe(Effect.provide(NodeFileSystem.layer)),
  )

  it.effect("reads one *.cedar file as a bundle with agentplane's schema alone", () =>
    Effect.gen(function* () {
      const dir = scratch("file")
      const file = join(dir, "api.cedar")
      writeFileSync(file, "permit (principal, action, resource);\n")
      const read = yield* Bundle.read(file)
      assert.deepStrictEqual(read.policies, [{ name: "api.cedar", text: "permit (principal, action, resource);\n" }])
      assert.strictEqual(read.schema, AgentplaneSchema.text)
    }).pipe(Effect.provide(NodeFileSystem.layer)),
  )

  it.effect(
    "refuses a directory with no policy file and a file that is not *.cedar; a missing path is unreadable",
    () =>
      Effect.gen(function* () {
        const empty = scratch("empty")
        const json = join(empty, "policy.json")
        writeFileSync(json, "{}")
        const errors = yield* Effect.forEach([empty, json, join(empty, "absent")], (path) =>
          Effect.flip(Bundle.read(path)),
        )
        assert.deepStrictEqual(
          errors.map((e) => e._tag),
          ["BundleInvalid", "BundleInvalid", "BundleUnreadable"],
        )
        assert.match(errors[0]?.message ?? "", /holds no \*\.cedar policy file/)
        assert.match(errors[1]?.message ?? "", /not a \*\.cedar policy file/)
        assert.match(errors[2]?.message ?? "", /cannot be read/)
      }).pipe(Effect.provide(NodeFileSystem.layer)),
  )
})
