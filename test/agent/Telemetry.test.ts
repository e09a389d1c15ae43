/**
 * A model call's telemetry: `@effect/ai`'s own span of the call, exported through
 * `@effect/opentelemetry` to an in-memory exporter, carries the OpenTelemetry GenAI attributes
 * (system, request model, input and output tokens), live and replayed alike; the §10 counters
 * count model effects by kind.
 */
import { NodeSdk } from "@effect/opentelemetry"
import { describe, it } from "@effect/vitest"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect, Metric, MetricLabel } from "effect"
import { expect } from "vitest"
import * as ModelCall from "../../src/agent/ModelCall.js"
import * as ScriptedModel from "../../src/agent/ScriptedModel.js"
import * as Run from "../../src/domain/Run.js"
import * as Observability from "../../src/runtime/Observability.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Support from "../runtime/Support.js"
import * as Backend from "../support/Backend.js"
import { agentRuntime, asker, newTally, usage } from "./Agents.js"

const counted = (counter: Metric.Metric.Counter<number>) =>
  Metric.value(Metric.taggedWithLabels(counter, [MetricLabel.make("kind", ModelCall.KIND)])).pipe(
    Effect.map((s) => s.count),
  )

describe("model call telemetry", () => {
  const backend = Backend.memory()

  it.live(
    "the model call's span carries the GenAI attributes, live and replayed; model effects are counted by kind",
    () => {
      const exporter = new InMemorySpanExporter()
      const tracing = NodeSdk.layer(() => ({
        resource: { serviceName: "agentplane-test" },
        spanProcessor: new SimpleSpanProcessor(exporter),
      }))
      return Effect.gen(function* () {
        const script = yield* ScriptedModel.make([{ text: "traced", usage }])
        const def = asker("agent.telemetry", "trace me")
        const layer = agentRuntime(backend, [def], script, newTally())
        const performed = yield* counted(Observability.effects)
        const replayed = yield* counted(Observability.effectsReplayed)
        const result = yield* Effect.flatMap(Runtime.Runtime, (rt) => rt.run(def, Run.labeled({ n: 0 }, "test"))).pipe(
          Support.on(layer),
        )
        expect(result.status._tag).toBe("Succeeded")
        yield* Effect.flatMap(Runtime.Runtime, (rt) => rt.replay(result.run)).pipe(Support.on(layer))
        const spans = exporter.getFinishedSpans()
        const provider = new Set(
          spans.filter((s) => s.name === "agentplane.model.provider").map((s) => s.spanContext().spanId),
        )
        // The provider's own span of its request sits under agentplane.model.provider; the step's
        // call (live, then replayed) are the others, and only the live one reached the provider.
        expect(provider.size).toBe(1)
        const calls = spans.filter(
          (s) => s.name === "LanguageModel.generateText" && !provider.has(s.parentSpanContext?.spanId ?? ""),
        )
        expect(calls).toHaveLength(2)
        for (const span of calls) {
          expect(span.attributes).toMatchObject({
            "gen_ai.system": "scripted",
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "scripted-1",
            "gen_ai.usage.input_tokens": 40,
            "gen_ai.usage.output_tokens": 60,
          })
        }
        expect((yield* counted(Observability.effects)) - performed).toBe(1)
        expect((yield* counted(Observability.effectsReplayed)) - replayed).toBe(1)
      }).pipe(Effect.provide(tracing), Backend.asFreshTenant)
    },
  )
})
