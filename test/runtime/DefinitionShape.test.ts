/**
 * §7.13 a definition's declared version and the digest of its registered shape: the default
 * version, and a digest that is the same for the same shape, differs when a step, the plan or a
 * schema changes (a recursive schema's included), and is absent where the schema's AST does not
 * print as JSON.
 */
import { Effect, Schema } from "effect"
import { describe, expect, it } from "vitest"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Step from "../../src/runtime/Step.js"

interface Tree {
  readonly children: ReadonlyArray<Tree>
}
const Tree: Schema.Schema<Tree> = Schema.Struct({ children: Schema.Array(Schema.suspend(() => Tree)) })

const define = (options: {
  readonly step?: string
  readonly input?: Schema.Schema.AnyNoContext
  readonly version?: string
  readonly second?: boolean
}) => {
  const step = (name: string) => Step.make({ name, role: Step.Unnecessary, body: () => Effect.succeed(1) })
  return RunDefinition.make({
    capability: "shape.test",
    ...(options.version === undefined ? {} : { version: options.version }),
    input: (options.input ?? Schema.Struct({ n: Schema.Number })) as never,
    output: Schema.Number,
    plan: options.second === true ? [step(options.step ?? "one"), step("two")] : [step(options.step ?? "one")],
  })
}

describe("a definition's version and shape digest", () => {
  it("declares version 1 unless it names one, and refuses an empty one", () => {
    expect(define({}).version).toBe("1")
    expect(define({ version: "2026-12" }).version).toBe("2026-12")
    expect(() => define({ version: "" })).toThrow(/an empty version/)
  })

  it("is the same for the same shape, and differs when a step, the plan or a schema changes", () => {
    const base = RunDefinition.shapeDigest(define({}))
    expect(base).toMatch(/^[0-9a-f]{64}$/)
    expect(RunDefinition.shapeDigest(define({}))).toBe(base)
    // The version is not part of the shape: it is recorded beside it.
    expect(RunDefinition.shapeDigest(define({ version: "2" }))).toBe(base)
    const changed = [
      define({ step: "renamed" }),
      define({ second: true }),
      define({ input: Schema.Struct({ n: Schema.String }) }),
    ].map(RunDefinition.shapeDigest)
    expect(new Set([base, ...changed]).size).toBe(4)
  })

  it("is computed for a recursive schema, and absent where an AST does not print as JSON (a bigint annotation)", () => {
    expect(RunDefinition.shapeDigest(define({ input: Tree }))).toMatch(/^[0-9a-f]{64}$/)
    const unprintable = Schema.Struct({ n: Schema.BigIntFromSelf.annotations({ examples: [1n] }) })
    expect(RunDefinition.shapeDigest(define({ input: unprintable }))).toBeUndefined()
  })
})
