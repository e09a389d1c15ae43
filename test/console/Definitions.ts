/**
 * The runs module the console's `serve` is given (`--runs`): the README tour's refund, whose review
 * task the reviewer decides; `decided`, whose sends the fixture's policy refuses or holds for a
 * reviewer (§7.12); and `drifts`, a run whose code is not deterministic, so that an
 * operator has a quarantined run to find. `drifts` performs an effect whose arguments count the
 * executions in this process, then waits for an event: when the event resumes it, the replay
 * offers different arguments than the journal holds, and the runtime quarantines it, naming both.
 */
import { Effect, Schema } from "effect"
import * as Providers from "../../examples/refund/Providers.js"
import { Refund, ReviewedRefund } from "../../examples/refund/Refund.js"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Deadline from "../../src/domain/Deadline.js"
import type { PolicyDenied } from "../../src/errors/PolicyError.js"
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

const send = EffectKind.make({
  kind: "console-test.send",
  args: Schema.Struct({ to: Schema.String }),
  success: Schema.String,
  mutates: true,
  act: ({ to }) => Effect.succeed(`sent to ${to}`),
})

/** A send the policy refuses (handled), a release of the input, then a send a reviewer must approve (`Fixture`'s bundle). */
export const Decided = RunDefinition.make({
  capability: "console-test.decided",
  input: Input,
  output: Schema.String,
  plan: [
    Step.make<typeof Input.Type, string, PolicyDenied>({
      name: "send",
      body: (input) =>
        Effect.gen(function* () {
          const cx = yield* StepCtx
          yield* cx
            .perform(send, { to: "blocked" })
            .pipe(Effect.catchTag("PolicyDenied", (d) => Effect.succeed(`handled: ${d.reason}`)))
          yield* cx.release(input, "the operator typed the ticket")
          return yield* cx.perform(send, { to: "ann" })
        }),
    }),
  ],
})

export default {
  definitions: [ReviewedRefund, Refund, Drifts, Decided],
  layer: Providers.layerInMemory(),
}
