/**
 * The §10 counters, read back through `Metric.value` after runs: acts performed and replayed by
 * kind, runs by outcome, quarantines, undecidable effects and Strict replays that did not reproduce. The registry is process-wide, so
 * kinds are unique to this file and shared dimensions are read as deltas.
 */
import { randomUUID } from "node:crypto"
import { describe, it } from "@effect/vitest"
import { Effect, Metric, MetricLabel, Schema, TestClock } from "effect"
import { expect } from "vitest"
import * as Run from "../../src/domain/Run.js"
import * as EffectKind from "../../src/runtime/EffectKind.js"
import * as Observability from "../../src/runtime/Observability.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import * as TestRuntime from "../../src/testing/TestRuntime.js"
import * as Backend from "../support/Backend.js"

const count = (counter: Metric.Metric.Counter<number>, labels: ReadonlyArray<readonly [string, string]> = []) =>
  Metric.value(
    Metric.taggedWithLabels(
      counter,
      labels.map(([k, v]) => MetricLabel.make(k, v)),
    ),
  ).pipe(Effect.map((state) => state.count))

const tag = randomUUID().slice(0, 8)

const definitionOf = (recovery: Run.Recovery, name: string) => {
  const kind = EffectKind.make<number, { readonly n: number }>({
    kind: `obs.${tag}.${name}`,
    args: Schema.Struct({ n: Schema.Number }),
    success: Schema.Number,
    mutates: true,
    recovery,
    act: ({ n }) => Effect.succeed(n),
  })
  const definition = RunDefinition.make({
    capability: `obs.counters.${name}`,
    input: Schema.Struct({ n: Schema.Number }),
    output: Schema.Number,
    plan: [
      Step.make({
        name: "twice",
        body: (input: { readonly n: number }) =>
          Effect.gen(function* () {
            const cx = yield* StepCtx
            const a = yield* cx.perform(kind, { n: input.n })
            const b = yield* cx.perform(kind, { n: a + 1 })
            return a + b
          }),
      }),
    ],
  })
  return { kind: kind.kind, definition }
}

describe("counters", () => {
  it.live("acts count by kind when performed and when replayed; a sealed run counts by outcome", () => {
    const { kind, definition } = definitionOf(Run.Recovery.Retry(), "retry")
    return Effect.gen(function* () {
      const rt = yield* Runtime.Runtime
      const succeeded = yield* count(Observability.runs, [["outcome", "succeeded"]])
      const result = yield* rt.run(definition, Run.labeled({ n: 1 }, "test"))
      expect(result.status._tag).toBe("Succeeded")
      expect(yield* count(Observability.effects, [["kind", kind]])).toBe(2)
      expect(yield* count(Observability.effectsReplayed, [["kind", kind]])).toBe(0)
      expect((yield* count(Observability.runs, [["outcome", "succeeded"]])) - succeeded).toBe(1)

      const report = yield* rt.replay(result.run)
      expect(report.reproduced).toBe(true)
      expect(yield* count(Observability.effects, [["kind", kind]])).toBe(2)
      expect(yield* count(Observability.effectsReplayed, [["kind", kind]])).toBe(2)
    }).pipe(Effect.provide(TestRuntime.layer([definition])), Backend.asFreshTenant)
  })

  it.live("a Strict replay concludes no run: agentplane.runs counts the run once, when it sealed", () => {
    const { definition } = definitionOf(Run.Recovery.Retry(), "strict")
    return Effect.gen(function* () {
      const rt = yield* Runtime.Runtime
      const result = yield* rt.run(definition, Run.labeled({ n: 1 }, "test"))
      const sealed = yield* count(Observability.runs, [["outcome", "succeeded"]])
      expect((yield* rt.replay(result.run)).reproduced).toBe(true)
      expect((yield* rt.replay(result.run)).reproduced).toBe(true)
      expect(yield* count(Observability.runs, [["outcome", "succeeded"]])).toBe(sealed)
    }).pipe(Effect.provide(TestRuntime.layer([definition])), Backend.asFreshTenant)
  })

  it.live("a Strict replay that does not reproduce the journaled outcome counts one unreproducible run", () => {
    const { kind, definition } = definitionOf(Run.Recovery.Retry(), "unreproducible")
    // The same capability with its code changed: it performs one act where the journal has two.
    const changed = RunDefinition.make({
      capability: definition.capability,
      input: Schema.Struct({ n: Schema.Number }),
      output: Schema.Number,
      plan: [
        Step.make({
          name: "twice",
          body: (input: { readonly n: number }) =>
            Effect.flatMap(StepCtx, (cx) =>
              cx.perform(
                EffectKind.make<number, { readonly n: number }>({
                  kind,
                  args: Schema.Struct({ n: Schema.Number }),
                  success: Schema.Number,
                  mutates: true,
                  recovery: Run.Recovery.Retry(),
                  act: ({ n }) => Effect.succeed(n),
                }),
                { n: input.n + 100 },
              ),
            ),
        }),
      ],
    })
    const backend = Backend.memory()
    return Effect.gen(function* () {
      const result = yield* Effect.flatMap(Runtime.Runtime, (rt) =>
        rt.run(definition, Run.labeled({ n: 1 }, "test")),
      ).pipe(Effect.provide(TestRuntime.layer([definition], { stores: backend.layer })))
      const before = yield* count(Observability.unreproducible)
      const same = yield* Effect.flatMap(Runtime.Runtime, (rt) => rt.replay(result.run)).pipe(
        Effect.provide(TestRuntime.layer([definition], { stores: backend.layer })),
      )
      expect(same.reproduced).toBe(true)
      expect(yield* count(Observability.unreproducible)).toBe(before)
      const other = yield* Effect.flatMap(Runtime.Runtime, (rt) => rt.replay(result.run)).pipe(
        Effect.provide(TestRuntime.layer([changed], { stores: backend.layer })),
      )
      expect(other.reproduced).toBe(false)
      expect((yield* count(Observability.unreproducible)) - before).toBe(1)
    }).pipe(Backend.asFreshTenant)
  })

  it.effect(
    "a RequiresOperator act in doubt counts one undecidable effect, one quarantine and one quarantined run",
    () => {
      const { kind, definition } = definitionOf(Run.Recovery.RequiresOperator(), "operator")
      const backend = Backend.memory()
      const crashing = TestRuntime.layer([definition], {
        stores: backend.layer,
        crash: TestRuntime.crashAt("after_announce", kind),
        leaseTtlSecs: 5,
      })
      const fresh = TestRuntime.layer([definition], { stores: backend.layer })
      return Effect.gen(function* () {
        const before = {
          undecidable: yield* count(Observability.undecidables),
          quarantines: yield* count(Observability.quarantines),
          quarantined: yield* count(Observability.runs, [["outcome", "quarantined"]]),
        }
        const crashed = yield* Effect.flip(
          Effect.flatMap(Runtime.Runtime, (rt) => rt.run(definition, Run.labeled({ n: 1 }, "test"))).pipe(
            Effect.provide(crashing),
          ),
        )
        expect(crashed._tag).toBe("Crashed")
        const run = (crashed as Runtime.Crashed).run
        expect(yield* count(Observability.effects, [["kind", kind]])).toBe(0)
        // The dead owner's lease lapses on the test clock; then a fresh runtime may take the run.
        yield* TestClock.adjust("6 seconds")
        const resumed = yield* Effect.flatMap(Runtime.Runtime, (rt) => rt.resume(run)).pipe(Effect.provide(fresh))
        expect(resumed.status._tag).toBe("Quarantined")
        expect(yield* count(Observability.effects, [["kind", kind]])).toBe(0)
        expect((yield* count(Observability.undecidables)) - before.undecidable).toBe(1)
        expect((yield* count(Observability.quarantines)) - before.quarantines).toBe(1)
        expect((yield* count(Observability.runs, [["outcome", "quarantined"]])) - before.quarantined).toBe(1)
      }).pipe(Backend.asFreshTenant)
    },
  )
})
