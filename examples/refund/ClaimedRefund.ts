/**
 * A refund whose amount an event names: the operator opens it for an invoice, and the agent's
 * `refund.claimed` event (correlated by the invoice) says how much. Everything the refund step
 * receives from the claim is as untrusted as that event's payload, so the refund's outbound label
 * is `untrusted`, and the demo policy (examples/demo-policy/refund.cedar) decides it accordingly:
 * a reviewer approves it first (a four-eyes task the runtime opens, due with the claim's
 * obligation), and one above 500.00 is refused outright, with no one asked.
 *
 * A refusal is the step's to handle: it cancels the claim's obligation and concludes with the
 * refusal's reason as its output, so the run succeeds having moved no money, and the refusal is
 * on its journal as `PolicyDenied`. The README walkthrough runs one of each.
 */
import { CorrelationKey, Deadline, RunDefinition, Step, StepCtx } from "agentplane"
import { Effect, Schema } from "effect"
import { refundPayment } from "./Refund.js"

export const ClaimedInput = Schema.Struct({ invoice: Schema.String })
export type ClaimedInput = typeof ClaimedInput.Type

/** The payload of a `refund.claimed` event (decoded: an event's payload is untrusted JSON). */
const Claim = Schema.Struct({ amountMinor: Schema.Int.pipe(Schema.positive()) })

/** Registers the claim's five days on the case and waits, within them, for the agent's event. */
export const claim = Step.make({
  name: "claim",
  body: (input: ClaimedInput) =>
    Effect.gen(function* () {
      const cx = yield* StepCtx.StepCtx
      const deadline = `claim ${cx.run}`
      yield* cx.deadline(deadline, Deadline.days(5))
      const received = yield* cx.awaitEvent({
        kind: "refund.claimed",
        correlation: [CorrelationKey.make("invoice", input.invoice)],
        deadline,
      })
      const { amountMinor } = yield* Schema.decodeUnknown(Claim)(received.payload)
      return { amountMinor, deadline }
    }),
})

/** Refunds the claimed amount, as the policy decides; a refusal ends the claim without a refund. */
export const refundClaimed = Step.make({
  name: "refund",
  body: (input: ClaimedInput, prior) =>
    Effect.gen(function* () {
      const cx = yield* StepCtx.StepCtx
      const { amountMinor, deadline } = prior.of(claim)
      return yield* cx.perform(refundPayment, { invoice: input.invoice, amountMinor, run: cx.run }).pipe(
        Effect.map(({ refundId }) => ({ refundId, refused: null })),
        Effect.catchTag("PolicyDenied", (denied) =>
          Effect.as(cx.cancelDeadline(deadline).pipe(Effect.ignore), { refundId: null, refused: denied.reason }),
        ),
        Effect.tap(({ refundId }) => (refundId === null ? Effect.void : Effect.ignore(cx.meetDeadline(deadline)))),
      )
    }),
})

export const ClaimedRefund = RunDefinition.make({
  capability: "refund.claimed",
  input: ClaimedInput,
  output: Schema.Struct({ refundId: Schema.NullOr(Schema.String), refused: Schema.NullOr(Schema.String) }),
  plan: [claim, refundClaimed],
})
