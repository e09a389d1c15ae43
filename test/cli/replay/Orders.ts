/**
 * The definition the `agentplane replay` tests record runs with, in the build that recorded them
 * (`Recorded.ts`) and in a later build that changed the second effect's arguments (`Changed.ts`).
 */
import { Effect, Schema } from "effect"
import * as Run from "../../../src/domain/Run.js"
import * as EffectKind from "../../../src/runtime/EffectKind.js"
import * as RunDefinition from "../../../src/runtime/RunDefinition.js"
import * as Step from "../../../src/runtime/Step.js"
import { StepCtx } from "../../../src/runtime/StepCtx.js"

/** A mutating effect kind answering ten times its `n`; the replay tests' effects. */
export const kind = (name: string) =>
  EffectKind.make<number, { readonly n: number }>({
    kind: name,
    args: Schema.Struct({ n: Schema.Number }),
    success: Schema.Number,
    mutates: true,
    recovery: Run.Recovery.Retry(),
    act: ({ n }) => Effect.succeed(n * 10),
  })

const [reserve, charge] = [kind("orders.reserve"), kind("orders.charge")]

/** Reserve, then charge; `changed` charges one more than the recorded build did. */
export const orders = (changed: boolean) =>
  RunDefinition.make({
    capability: "orders.place",
    input: Schema.Struct({ n: Schema.Number }),
    output: Schema.Number,
    plan: [
      Step.make({
        name: "reserve",
        body: (input: { readonly n: number }) => Effect.flatMap(StepCtx, (cx) => cx.perform(reserve, { n: input.n })),
      }),
      Step.make({
        name: "charge",
        body: (input: { readonly n: number }) =>
          Effect.flatMap(StepCtx, (cx) => cx.perform(charge, { n: changed ? input.n + 1 : input.n })),
      }),
    ],
  })
