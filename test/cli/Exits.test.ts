/**
 * Issue 49 item 3 for the CLI: each verb's errors, each with one exit code (`Exits.ts`). The
 * tables are checked against the commands' error types when the project compiles; this pins what
 * they list, verb by verb, so a verb that gains a way to fail is a visible change here, and holds
 * the exit code to them: a declared failure exits with its code, anything else is a defect.
 */
import { HelpDoc, ValidationError } from "@effect/cli"
import { Cause, Effect, Exit } from "effect"
import { describe, it, vi } from "vitest"
import * as Exits from "../../src/cli/Exits.js"
import * as Report from "../../src/cli/Report.js"
import { assert } from "../support/Assert.js"
import * as Cli from "../support/Cli.js"

const STORE = ["Backend", "StoreInvalid"]
const SEALING = ["KekInvalid", "SealedUnderOtherKek", "SealedWithoutKek"]

/** Verb by verb, the errors it can fail with; every one exits `FAILED`. */
const DECLARED: Record<string, ReadonlyArray<string>> = {
  serve: [
    ...STORE,
    ...SEALING,
    "AddressUnavailable",
    "CredentialsInvalid",
    "LogKeyInvalid",
    "RunsInvalid",
    "StartRefused",
  ],
  sweep: [
    ...STORE,
    ...SEALING,
    "BundleInvalid",
    "BundleUnreadable",
    "CheckpointMalformed",
    "Corrupt",
    "CredentialsInvalid",
    "LogKeyInvalid",
    "NoteMalformed",
    "NoteUnverified",
    "RunsInvalid",
    "SignatureInvalid",
    "TenantError",
    "TenantUnknown",
  ],
  export: [...STORE, "BadArgument", "Corrupt", "SystemError", "TenantError"],
  restore: [...STORE, "BadArgument", "Corrupt", "SystemError", "TenantError"],
  drill: [...STORE, "Corrupt", "KekInvalid", "TenantError"],
  "erase-case": [...STORE, ...SEALING, "Corrupt", "InvalidId", "NotFound", "TenantError"],
  "forget-admissions": [...STORE, "TenantError"],
  migrate: STORE,
  "token-digest": ["TokenRefused"],
  "seed-demo": [...STORE, ...SEALING, "Corrupt", "NotFound", "ObligationsOutstanding", "TenantInvalid"],
  replay: [
    "StoreInvalid",
    "KekInvalid",
    "RunsRequired",
    "RunsInvalid",
    "SinceInvalid",
    "StoreSchemaBehind",
    "TenantError",
    "BadArgument",
    "SystemError",
    "Backend",
    "Corrupt",
    "Crashed",
  ],
  policy: [
    "BundleInvalid",
    "BundleUnreadable",
    "MissingArgument",
    "PolicyInvalid",
    "PolicyUnavailable",
    "RequestMalformed",
  ],
  log: [
    ...STORE,
    "Corrupt",
    "LogKeyInvalid",
    "LogRequestIncomplete",
    "RunNotIntegrated",
    "RunNotLogged",
    "RunOutsideSize",
    "SizeBeyondLog",
    "SizesUnordered",
    "TenantError",
  ],
}

const failing = (tag: string) => Exit.fail({ _tag: tag, message: `${tag} happened` })

describe("CLI exit codes", () => {
  it("every verb lists the errors the table declares, each at FAILED", () => {
    assert.deepStrictEqual(Object.keys(Exits.verbs).sort(), Object.keys(DECLARED).sort())
    for (const [verb, table] of Object.entries(Exits.verbs)) {
      assert.deepStrictEqual(Object.keys(table).sort(), [...(DECLARED[verb] ?? [])].sort(), verb)
      for (const [tag, code] of Object.entries(table)) assert.strictEqual(code, Exits.FAILED, `${verb} ${tag}`)
    }
  })

  it("a declared failure exits with its code; a tag the verb does not declare, or a defect, is DEFECT", () => {
    for (const [verb, tags] of Object.entries(DECLARED)) {
      for (const tag of tags) assert.strictEqual(Exits.codeOf(verb, failing(tag)), Exits.FAILED, `${verb} ${tag}`)
      assert.strictEqual(Exits.codeOf(verb, failing("SomethingElse")), Exits.DEFECT, verb)
      assert.strictEqual(Exits.codeOf(verb, Exit.die(new Error("a bug"))), Exits.DEFECT, verb)
    }
    // Another verb's error is not this one's: `migrate` never meets a sealing key.
    assert.strictEqual(Exits.codeOf("migrate", failing("KekInvalid")), Exits.DEFECT)
  })

  it("success and interruption exit 0; a usage error is FAILED on any verb; a verb with no table fails FAILED", () => {
    assert.strictEqual(Exits.codeOf("serve", Exit.void), 0)
    assert.strictEqual(Exits.codeOf("serve", Exit.failCause(Cause.interrupt(0 as never))), 0)
    const usage = ValidationError.missingValue(HelpDoc.p("--store is required"))
    for (const verb of ["serve", "migrate", undefined]) assert.strictEqual(Exits.codeOf(verb, Exit.fail(usage)), 1)
    assert.strictEqual(Exits.codeOf("verify", failing("Anything")), Exits.FAILED)
    assert.strictEqual(Exits.codeOf(undefined, failing("Anything")), Exits.FAILED)
    assert.notStrictEqual(Exits.DEFECT, Exits.FAILED)
  })

  it("an undeclared failure is reported as a defect, with its cause, not as a refusal's one line", () => {
    assert.isTrue(Exits.isDeclared("token-digest", { _tag: "TokenRefused" }))
    assert.isFalse(Exits.isDeclared("token-digest", { _tag: "Backend" }))
    assert.isFalse(Exits.isDeclared("token-digest", "not tagged"))
    assert.isTrue(Exits.isDeclared("verify", { _tag: "Whatever" }))
    const written = (error: unknown) => {
      const lines: Array<string> = []
      const spy = vi.spyOn(console, "error").mockImplementation((line: unknown) => void lines.push(String(line)))
      try {
        Effect.runSync(Report.report(Cause.fail(error), (e) => Exits.isDeclared("token-digest", e)))
      } finally {
        spy.mockRestore()
      }
      return lines.join("\n")
    }
    assert.strictEqual(written({ _tag: "TokenRefused", message: "no token" }), "agentplane: no token")
    const defect = written({ _tag: "Backend", message: "the store failed" })
    assert.match(defect, /^agentplane: unexpected failure\n/)
    assert.match(defect, /Backend/)
  })

  it("a real declared refusal exits FAILED with its one line", async () => {
    const refused = Cli.start(["token-digest"])
    refused.child.stdin.end("two words\n")
    const done = await refused.done
    assert.strictEqual(done.code, Exits.FAILED, done.stderr)
    assert.strictEqual(done.stderr.trim(), "agentplane: the token contains whitespace")
  })
})
