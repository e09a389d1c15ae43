/**
 * Random plans keep the runtime's invariants (issue 14, Acceptance): random effect outcomes
 * (answers, rejections, transient and in-doubt failures), failing steps, failing compensations,
 * pivots, parallel groups and every saga role. Completion order inside a group is whatever the
 * run did; the expected unwind is computed from the journal's `StepFinished` order.
 */
import { describe, it } from "@effect/vitest"
import { Context, Effect, Runtime as EffectRuntime, FastCheck, Option, Schema } from "effect"
import { expect } from "vitest"
import type * as Journal from "../../src/domain/Journal.js"
import * as Run from "../../src/domain/Run.js"
import type { Tenant } from "../../src/domain/Tenant.js"
import * as EffectKind from "../../src/runtime/EffectKind.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

type Outcome = "ok" | "reject" | "transient" | "doubtRetry" | "doubtOperator"
interface EffectSpec {
  readonly mutates: boolean
  readonly outcome: Outcome
}
type Role = "Compensatable" | "Pivot" | "Unnecessary" | "Undeclared"
interface StepSpec {
  readonly role: Role
  readonly effects: ReadonlyArray<EffectSpec>
  readonly fails: boolean
  readonly undoFails: boolean
  /** Milliseconds a group member waits first, so siblings finish in an order other than the plan's. */
  readonly delayMs: number
}
type Plan = ReadonlyArray<ReadonlyArray<StepSpec>>

const effectSpec: FastCheck.Arbitrary<EffectSpec> = FastCheck.record({
  mutates: FastCheck.boolean(),
  outcome: FastCheck.constantFrom<Outcome>("ok", "ok", "ok", "reject", "transient", "doubtRetry", "doubtOperator"),
}).map((e) => (e.mutates || e.outcome !== "doubtOperator" ? e : { ...e, outcome: "doubtRetry" as const }))

const stepSpec: FastCheck.Arbitrary<StepSpec> = FastCheck.record({
  role: FastCheck.constantFrom<Role>("Compensatable", "Compensatable", "Pivot", "Unnecessary", "Undeclared"),
  effects: FastCheck.array(effectSpec, { maxLength: 3 }),
  fails: FastCheck.integer({ min: 0, max: 3 }).map((n) => n === 0),
  undoFails: FastCheck.integer({ min: 0, max: 9 }).map((n) => n === 0),
  delayMs: FastCheck.integer({ min: 0, max: 4 }),
})

const plan: FastCheck.Arbitrary<Plan> = FastCheck.array(FastCheck.array(stepSpec, { minLength: 1, maxLength: 3 }), {
  minLength: 1,
  maxLength: 4,
})

const retrying = new Run.RetryPolicy({ maxAttempts: 2, backoffMs: 0 })

/** One kind per (mutates, outcome); attempt 1 fails where the outcome says so, attempt 2 answers. */
const kindOf = (() => {
  const kinds = new Map<string, Support.Kind>()
  return (spec: EffectSpec): Support.Kind => {
    const name = `prop.${spec.mutates ? "m" : "r"}.${spec.outcome}`
    const known = kinds.get(name)
    if (known !== undefined) return known
    const recovery = spec.outcome === "doubtRetry" ? Run.Recovery.Retry() : undefined
    const made = Support.acting(
      name,
      { mutates: spec.mutates, retry: retrying, ...(recovery === undefined ? {} : { recovery }) },
      (n, { attempt }) => {
        switch (spec.outcome) {
          case "reject":
            return Effect.fail(new Support.Rejected({ reason: "declined" }))
          case "transient":
            if (attempt === 1)
              return Effect.fail(new EffectKind.Transient({ message: "busy", disposition: "did_not_happen" }))
            break
          case "doubtRetry":
          case "doubtOperator":
            if (attempt === 1)
              return Effect.fail(new EffectKind.Transient({ message: "timeout", disposition: "in_doubt" }))
            break
        }
        return Effect.succeed({ ok: name, n })
      },
    ) as unknown as Support.Kind
    kinds.set(name, made)
    return made
  }
})()

const undo = Support.acting("prop.undo", { mutates: true }, (n) => Effect.succeed({ ok: "undo", n }))

const definitionOf = (capability: string, p: Plan) => {
  let index = 0
  const step = (spec: StepSpec) => {
    const name = `s${index++}`
    const role: Step.Role<number, never> =
      spec.role === "Compensatable"
        ? Step.compensatable(() =>
            Effect.gen(function* () {
              const cx = yield* StepCtx
              yield* cx.perform(undo, { n: 0 })
              if (spec.undoFails) return yield* Effect.fail("the undo was refused")
            }),
          )
        : { _tag: spec.role }
    return Step.make<unknown, number, unknown>({
      name,
      role,
      body: () =>
        Effect.gen(function* () {
          const cx = yield* StepCtx
          if (spec.delayMs > 0) yield* Effect.sleep(spec.delayMs)
          for (const [i, e] of spec.effects.entries()) yield* cx.perform(kindOf(e), { n: i })
          if (spec.fails) return yield* Effect.fail("the step gave up")
          return spec.effects.length
        }),
    })
  }
  const entries = p.map((group) => (group.length === 1 ? step(group[0] as StepSpec) : group.map(step)))
  return RunDefinition.make({ capability, input: Schema.Struct({}), output: Schema.Unknown, plan: entries })
}

/** What a step's forward pass comes to, from its spec alone. */
const forward = (spec: StepSpec): "ok" | "failed" | "quarantined" => {
  for (const e of spec.effects) {
    if (e.outcome === "reject") return "failed"
    if (e.outcome === "doubtOperator") return "quarantined"
  }
  return spec.fails ? "failed" : "ok"
}

interface Expected {
  readonly outcome: Journal.RunOutcome
  readonly compensations: ReadonlyArray<readonly [string, string]>
}

/** The §7.2/§7.3 verdict: the plan decides forward; the journal's completion order decides the unwind. */
const expected = (p: Plan, records: ReadonlyArray<Journal.Record>): Expected => {
  const specs = p.flat()
  const first = p.map((group) => group.map(forward)).find((g) => g.includes("quarantined") || g.includes("failed"))
  if (first === undefined) return { outcome: "succeeded", compensations: [] }
  if (first.includes("quarantined")) return { outcome: "quarantined", compensations: [] }
  const finished = Support.recordsOfKind(records, "StepFinished")
    .filter((r) => r.phase === "forward" && r.kind.outcome === "succeeded")
    .map((r) => r.step as number)
  const mutated = new Set(
    Support.recordsOfKind(records, "EffectStarted")
      .filter((r) => r.phase === "forward" && r.kind.mutates)
      .map((r) => r.step as number),
  )
  const compensations: Array<readonly [string, string]> = []
  for (const index of [...finished].reverse()) {
    const spec = specs[index] as StepSpec
    if (spec.role === "Pivot") break
    if (spec.role === "Unnecessary") continue
    if (spec.role === "Undeclared") {
      if (mutated.has(index)) return { outcome: "quarantined", compensations }
      continue
    }
    compensations.push([`s${index}`, spec.undoFails ? "failed" : "compensated"])
    if (spec.undoFails) return { outcome: "quarantined", compensations }
  }
  return { outcome: compensations.length > 0 ? "compensated" : "failed", compensations }
}

const STATUS: Readonly<Record<string, string>> = {
  succeeded: "Succeeded",
  failed: "Failed",
  compensated: "Failed",
  quarantined: "Quarantined",
}

const check = (p: Plan, capability: string) =>
  Effect.gen(function* () {
    const def = definitionOf(capability, p)
    yield* Effect.flatMap(RunDefinition.Registry, (r) => r.add({ definition: def, context: Context.empty() }))
    const rt = yield* Runtime.Runtime
    const journal = yield* JournalStore
    const result = yield* rt.run(def, Run.labeled({}, "test"))
    const records = yield* journal.read(result.run, 1)
    // Every chain verifies.
    expect((yield* journal.verify(result.run)).seq).toBe(records.length)
    // One announcement per key, and at most one outcome, except that an in-doubt failure may be
    // followed by the EffectReconciled that settles it.
    const byKey = new Map<string, Array<Journal.Record>>()
    for (const r of records) {
      if (Option.isNone(r.effectKey)) continue
      const list = byKey.get(r.effectKey.value) ?? []
      list.push(r)
      byKey.set(r.effectKey.value, list)
    }
    for (const list of byKey.values()) {
      expect(list.filter((r) => r.kind.kind === "EffectStarted").length).toBe(1)
      const outcomes = list.filter((r) => r.kind.kind !== "EffectStarted")
      if (outcomes.length === 2) {
        expect(outcomes[0]?.kind).toMatchObject({ kind: "EffectFailed", disposition: "in_doubt" })
        expect(outcomes[1]?.kind.kind).toBe("EffectReconciled")
      } else expect(outcomes.length).toBeLessThanOrEqual(1)
    }
    // Compensation in reverse completion order, stopped by a pivot, a mutating Undeclared step or a failure.
    const want = expected(p, records)
    const got = Support.recordsOfKind(records, "StepCompensated").map(
      (r) => [(r.kind.compensation as { readonly name: string }).name, r.kind.outcome] as const,
    )
    expect(got).toEqual(want.compensations)
    // No compensation passes a pivot: each undone step finished after every finished pivot.
    const specs = p.flat()
    const finishedAt = new Map(
      Support.recordsOfKind(records, "StepFinished")
        .filter((r) => r.phase === "forward" && r.kind.outcome === "succeeded")
        .map((r) => [r.step as number, r.seq]),
    )
    const lastPivot = Math.max(0, ...[...finishedAt].filter(([s]) => specs[s]?.role === "Pivot").map(([, seq]) => seq))
    for (const [name] of got) expect(finishedAt.get(Number(name.slice(1))) ?? 0).toBeGreaterThan(lastPivot)
    // Compensating effects run only in the unwind, in phase compensating.
    for (const r of Support.recordsOfKind(records, "EffectStarted")) {
      const kind = (r.kind.descriptor as { readonly kind: string }).kind
      expect(r.phase).toBe(kind === "prop.undo" ? "compensating" : "forward")
    }
    // The conclusion is what §7.2 ranks.
    const sealed = Support.recordsOfKind(records, "RunSealed").map((r) => r.kind.outcome)
    expect(sealed).toEqual([want.outcome])
    expect(result.status._tag).toBe(STATUS[want.outcome])
  })

const RUNS = Number(process.env.AGENTPLANE_PROP_RUNS ?? 50)

export const suite = (backend: Backend.Backend) =>
  describe("property", () => {
    it.live("random plans keep the invariants: chains verify, one outcome per key, the unwind, the conclusion", () =>
      Effect.gen(function* () {
        const runtime = yield* Effect.runtime<Support.Services | Tenant>()
        let n = 0
        yield* Effect.promise(() =>
          FastCheck.assert(
            FastCheck.asyncProperty(plan, (p) => EffectRuntime.runPromise(runtime)(check(p, `prop.${n++}`))),
            { numRuns: RUNS, interruptAfterTimeLimit: 40_000, markInterruptAsFailure: true },
          ),
        )
      }).pipe(Support.on(Support.runtime(backend, [])), Backend.asFreshTenant),
    )
  })
