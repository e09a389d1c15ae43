/**
 * The runs module the console's `serve` is given (`--runs`): the README's refund, whose review
 * task the reviewer decides, and `drifts`, a run whose code is not deterministic, so that an
 * operator has a quarantined run to find. `drifts` performs an effect whose arguments count the
 * executions in this process, then waits for an event: when the event resumes it, the replay
 * offers different arguments than the journal holds, and the runtime quarantines it, naming both.
 */
import { Effect, Schema } from "effect"
import * as Providers from "../../examples/refund/Providers.js"
import { Refund, ReviewedRefund } from "../../examples/refund/Refund.js"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Deadline from "../../src/domain/Deadline.js"
import * as EffectKind from "../../src/runtime/EffectKind.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"

let executions = 0

const lookUp = EffectKind.make({
  kind: "console-test.look_up",
  args: Schema.Struct({ execution: Schema.Number }),
  success: Schema.Struct({ found: Schema.Boolean }),
  mutates: false,
  act: () => Effect.succeed({ found: true }),
})

const Input = Schema.Struct({ ticket: Schema.String })

export const Drifts = RunDefinition.make({
  capability: "console-test.drifts",
  input: Input,
  output: Schema.Unknown,
  plan: [
    Step.make({
      name: "drift",
      body: (input: typeof Input.Type) =>
        Effect.gen(function* () {
          const cx = yield* StepCtx
          executions += 1
          yield* cx.perform(lookUp, { execution: executions })
          yield* cx.deadline("answer", Deadline.days(1))
          const got = yield* cx.awaitEvent({
            kind: "console-test.go",
            correlation: [CorrelationKey.make("ticket", input.ticket)],
            deadline: "answer",
          })
          return got.payload
        }),
    }),
  ],
})

export default {
  definitions: [ReviewedRefund, Refund, Drifts],
  layer: Providers.layerInMemory(),
}
