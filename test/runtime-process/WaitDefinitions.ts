/**
 * What the wait-kill test's child and the test share: a run that waits for `order.paid` on its
 * order's key, then performs one `Retry` act that appends a line to a file outside the journal,
 * so the count of acts survives `kill -9`; and the event that answers it.
 */
import { appendFileSync } from "node:fs"
import { Effect, Schema } from "effect"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Deadline from "../../src/domain/Deadline.js"
import { InboundEvent } from "../../src/domain/Event.js"
import * as Run from "../../src/domain/Run.js"
import * as EffectKind from "../../src/runtime/EffectKind.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import type { Target } from "./Definitions.js"

/** Where the child dies: right after the subscription is durable, or right after a wake-up's first commit. */
export type Boundary = "subscribed" | "answered"

export interface WaitChildArgs {
  readonly target: Target
  readonly tenant: string
  readonly acts: string
  readonly order: string
  readonly boundary: Boundary
}

export const CASE_KIND = "wait-kill"
export const EVENT_KIND = "order.paid"
export const keyOf = (order: string) => CorrelationKey.make("order", order)

export const paid = (order: string) =>
  new InboundEvent({
    source: "psp",
    id: `paid-${order}`,
    kind: EVENT_KIND,
    correlation: [keyOf(order)],
    payload: { n: 40 },
  })

export const definition = (acts: string) => {
  const ship = EffectKind.make<{ readonly shipped: number }, { readonly n: number }>({
    kind: "waitkill.ship",
    args: Schema.Struct({ n: Schema.Number }),
    success: Schema.Struct({ shipped: Schema.Number }),
    mutates: true,
    recovery: Run.Recovery.Retry(),
    act: ({ n }) =>
      Effect.sync(() => {
        appendFileSync(acts, "ship\n")
        return { shipped: n }
      }),
  })
  return RunDefinition.make({
    capability: "waitkill.order",
    input: Schema.Struct({ order: Schema.String }),
    output: Schema.Number,
    plan: [
      Step.make({
        name: "wait-then-ship",
        body: (input: { readonly order: string }) =>
          Effect.gen(function* () {
            const cx = yield* StepCtx
            yield* cx.deadline("payment", Deadline.days(3))
            const got = yield* cx.awaitEvent({
              kind: EVENT_KIND,
              correlation: [keyOf(input.order)],
              deadline: "payment",
            })
            return (yield* cx.perform(ship, { n: (got.payload as { readonly n: number }).n })).shipped
          }),
      }),
    ],
  })
}
