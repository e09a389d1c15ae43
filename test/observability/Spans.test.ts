/**
 * Item 8 of issue 14: the runtime's spans, exported through `@effect/opentelemetry` with the Node
 * SDK to an in-memory exporter. One `agentplane.run` per execution, under the caller's span; one
 * `agentplane.step` per step under the run; one `agentplane.effect` per act under its step, with
 * attributes from fixed enums. A Strict replay opens a run span and performs (so spans) no act.
 */
import { NodeSdk } from "@effect/opentelemetry"
import { describe, it } from "@effect/vitest"
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect, Schema } from "effect"
import { expect } from "vitest"
import * as Run from "../../src/domain/Run.js"
import type { Tenant } from "../../src/domain/Tenant.js"
import * as EffectKind from "../../src/runtime/EffectKind.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import * as TestRuntime from "../../src/testing/TestRuntime.js"
import * as Backend from "../support/Backend.js"

const kind = (name: string) =>
  EffectKind.make<number, { readonly n: number }>({
    kind: name,
    args: Schema.Struct({ n: Schema.Number }),
    success: Schema.Number,
    mutates: true,
    recovery: Run.Recovery.Retry(),
    act: ({ n }) => Effect.succeed(n + 1),
  })
const fetchCase = kind("obs.fetch")
const charge = kind("obs.charge")
const notify = kind("obs.notify")

const definition = RunDefinition.make({
  capability: "obs.spans",
  input: Schema.Struct({ n: Schema.Number }),
  output: Schema.Number,
  plan: [
    Step.make({
      name: "read",
      body: (input: { readonly n: number }) => Effect.flatMap(StepCtx, (cx) => cx.perform(fetchCase, { n: input.n })),
    }),
    Step.make({
      name: "act",
      body: (_input: { readonly n: number }, prior) =>
        Effect.gen(function* () {
          const cx = yield* StepCtx
          const n = prior.of(first)
          const [a, b] = yield* cx.all([EffectKind.call(charge, { n }), EffectKind.call(notify, { n })])
          return a + b
        }),
    }),
  ],
})
const first = definition.steps[0] as Step.Step<{ readonly n: number }, number, never, never>

const byName = (spans: ReadonlyArray<ReadableSpan>, name: string) => spans.filter((s) => s.name === name)
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId

const traced = <A, E>(body: (exporter: InMemorySpanExporter) => Effect.Effect<A, E, Runtime.Runtime | Tenant>) => {
  const exporter = new InMemorySpanExporter()
  const tracing = NodeSdk.layer(() => ({
    resource: { serviceName: "agentplane-test" },
    spanProcessor: new SimpleSpanProcessor(exporter),
  }))
  return body(exporter).pipe(
    Effect.provide(TestRuntime.layer([definition])),
    Effect.provide(tracing),
    Backend.asFreshTenant,
  )
}

/** The spans of one run of `definition` under a span named `caller`, sorted steps first by id. */
const runOnce = (exporter: InMemorySpanExporter) =>
  Effect.gen(function* () {
    const rt = yield* Runtime.Runtime
    const result = yield* rt.run(definition, Run.labeled({ n: 1 }, "test")).pipe(Effect.withSpan("caller"))
    expect(result.status).toEqual(Run.RunStatus.Succeeded({ output: 6 }))
    const spans = exporter.getFinishedSpans()
    const steps = [...byName(spans, "agentplane.step")].sort(
      (x, y) => Number(x.attributes.step) - Number(y.attributes.step),
    )
    return { result, spans, steps, effects: byName(spans, "agentplane.effect") }
  })

describe("spans", () => {
  it.live("a run exports one run span under the caller's, one span per step under it and one per act", () =>
    traced((exporter) =>
      Effect.gen(function* () {
        const { result, spans, steps, effects } = yield* runOnce(exporter)
        const [caller] = byName(spans, "caller")
        const runs = byName(spans, "agentplane.run")
        expect(runs).toHaveLength(1)
        const run = runs[0] as ReadableSpan
        expect(parentOf(run)).toBe(caller?.spanContext().spanId)
        expect(run.attributes.mode).toBe("live")
        expect(steps).toHaveLength(2)
        for (const s of steps) {
          expect(parentOf(s)).toBe(run.spanContext().spanId)
          expect(s.attributes.phase).toBe("forward")
        }
        expect(Number(steps[1]?.attributes.step)).toBeGreaterThan(Number(steps[0]?.attributes.step))
        expect(effects.map((e) => e.attributes.kind).sort()).toEqual(["obs.charge", "obs.fetch", "obs.notify"])
        for (const e of effects) expect(e.attributes.attempt).toBe(1)
        expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(1)

        exporter.reset()
        const rt = yield* Runtime.Runtime
        const report = yield* rt.replay(result.run)
        expect(report.reproduced).toBe(true)
        const replayed = exporter.getFinishedSpans()
        expect(byName(replayed, "agentplane.run").map((s) => s.attributes.mode)).toEqual(["strict"])
        expect(byName(replayed, "agentplane.step")).toHaveLength(2)
        expect(byName(replayed, "agentplane.effect")).toHaveLength(0)
      }),
    ),
  )

  it.live("each act's span is a child of the span of the step that performed it", () =>
    traced((exporter) =>
      Effect.gen(function* () {
        const { steps, effects } = yield* runOnce(exporter)
        const [read, act] = steps
        expect(effects).toHaveLength(3)
        for (const e of effects) {
          const home = e.attributes.kind === "obs.fetch" ? read : act
          expect({ kind: e.attributes.kind, parent: parentOf(e) }).toEqual({
            kind: e.attributes.kind,
            parent: home?.spanContext().spanId,
          })
        }
      }),
    ),
  )
})
