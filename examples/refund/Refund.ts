/**
 * A refund, as a durable run. It reads the invoice's case, refuses a refund that would exceed
 * the invoice, sets a five-day deadline on the case, refunds through the payment provider,
 * posts the refund to the ledger and records it in the case state.
 *
 * - `payments.refund` mutates and is `Idempotent`: the provider deduplicates by the key the
 *   runtime hands the act, so after a crash in doubt it is simply sent again with that key.
 * - `ledger.post` mutates and is `Reconcile`: after a crash in doubt the runtime asks the
 *   ledger (the probe) whether the entry landed instead of posting twice.
 * - If the ledger refuses (a closed period), the run fails and unwinds last-finished-first:
 *   the refund is reversed, then the deadline cancelled; the run concludes `compensated`.
 *
 * `ReviewedRefund` is the same refund with two waits before the money moves: a reviewer decides
 * within two days (four eyes: the agent that proposed the refund may not), then the run sleeps
 * until a cooling-off instant. The review is an obligation the run registers and meets when a
 * person decides; an undecided review is breached by the sweeper and denied. A refused refund
 * unwinds the deadline and concludes `compensated`. A finished reviewed refund closes its case
 * when nothing else is outstanding on it. `Serve.ts` hands it to `agentplane serve --runs`, for
 * the README walkthrough.
 */

import {
  Calendar,
  CorrelationKey,
  Deadline,
  EffectKind,
  PolicyEngine,
  Run,
  RunDefinition,
  Runtime,
  Step,
  StepCtx,
  Task,
} from "agentplane"
import { Effect, Layer, Option, Schema } from "effect"
import { Ledger, Payments, PeriodClosed } from "./Providers.js"

export const Input = Schema.Struct({
  invoice: Schema.String,
  amountMinor: Schema.Int.pipe(Schema.positive()),
  invoiceTotalMinor: Schema.Int.pipe(Schema.positive()),
  reason: Schema.String,
})
export type Input = typeof Input.Type

/** What the case remembers of its refunds (the case state is untrusted JSON: decoded, never cast). */
const Refunds = Schema.Array(
  Schema.Struct({ refundId: Schema.String, amountMinor: Schema.Number, entry: Schema.String }),
)
const CaseState = Schema.Struct({ refunds: Refunds })

export class RefundExceedsInvoice extends Schema.TaggedError<RefundExceedsInvoice>()("RefundExceedsInvoice", {
  alreadyMinor: Schema.Number,
  requestedMinor: Schema.Number,
}) {}

// The effect kinds: what the run may do to the world, declared with their recovery.

// The arguments carry the run id: the default idempotency key is the effect key of the first
// attempt, which is derived from step, position, kind and arguments but not the run, so two
// refunds of the same amount by two runs would otherwise share a key and the provider would
// answer the second with the first.
export const refundPayment = EffectKind.make({
  kind: "payments.refund",
  args: Schema.Struct({ invoice: Schema.String, amountMinor: Schema.Number, run: Schema.String }),
  success: Schema.Struct({ refundId: Schema.String }),
  mutates: true,
  recovery: Run.Recovery.Idempotent({ key: Option.none() }),
  act: ({ invoice, amountMinor }, { idempotencyKey }) =>
    Effect.flatMap(Payments, (p) => p.refund(invoice, amountMinor, idempotencyKey)),
})

export const reverseRefund = EffectKind.make({
  kind: "payments.reverse",
  args: Schema.Struct({ refundId: Schema.String }),
  success: Schema.Struct({ refundId: Schema.String }),
  mutates: true,
  recovery: Run.Recovery.Idempotent({ key: Option.none() }),
  act: ({ refundId }, { idempotencyKey }) =>
    Effect.flatMap(Payments, (p) => p.reverse(refundId, idempotencyKey)).pipe(Effect.as({ refundId })),
})

export const postToLedger = EffectKind.make({
  kind: "ledger.post",
  args: Schema.Struct({ reference: Schema.String, amountMinor: Schema.Number }),
  success: Schema.Struct({ entry: Schema.String }),
  error: PeriodClosed,
  mutates: true,
  recovery: Run.Recovery.Reconcile(),
  act: ({ reference, amountMinor }) => Effect.flatMap(Ledger, (l) => l.post(reference, amountMinor)),
  probe: ({ reference }) =>
    Effect.flatMap(Ledger, (l) => l.find(reference)).pipe(
      Effect.map(
        Option.match({
          onNone: () => EffectKind.Verdict.DidNotHappen(),
          onSome: (output) => EffectKind.Verdict.Landed({ output }),
        }),
      ),
    ),
})

// The steps, each with its saga role.

export const assess = Step.make({
  name: "assess",
  role: Step.compensatable((done: { readonly deadline: string }) =>
    Effect.flatMap(StepCtx.StepCtx, (cx) => cx.cancelDeadline(done.deadline)).pipe(Effect.ignore),
  ),
  body: (input: Input) =>
    Effect.gen(function* () {
      const cx = yield* StepCtx.StepCtx
      const { state, version } = yield* cx.caseState
      const refunds = Option.match(Schema.decodeUnknownOption(CaseState)(state), {
        onNone: () => [],
        onSome: (s) => s.refunds,
      })
      const alreadyMinor = refunds.reduce((sum, r) => sum + r.amountMinor, 0)
      if (alreadyMinor + input.amountMinor > input.invoiceTotalMinor) {
        return yield* new RefundExceedsInvoice({ alreadyMinor, requestedMinor: input.amountMinor })
      }
      const deadline = `refund ${cx.run}`
      yield* cx.deadline(deadline, Deadline.days(5))
      return { version, refunds, deadline }
    }),
})

export const refund = Step.make({
  name: "refund",
  role: Step.compensatable((done: { readonly refundId: string }) =>
    Effect.flatMap(StepCtx.StepCtx, (cx) => cx.perform(reverseRefund, { refundId: done.refundId })),
  ),
  body: (input: Input) =>
    Effect.flatMap(StepCtx.StepCtx, (cx) =>
      cx.perform(refundPayment, { invoice: input.invoice, amountMinor: input.amountMinor, run: cx.run }),
    ),
})

export const record = Step.make({
  name: "record",
  role: Step.Pivot,
  body: (input: Input, prior) =>
    Effect.gen(function* () {
      const cx = yield* StepCtx.StepCtx
      const { version, refunds, deadline } = prior.of(assess)
      const { refundId } = prior.of(refund)
      const { entry } = yield* cx.perform(postToLedger, { reference: refundId, amountMinor: input.amountMinor })
      yield* cx.putCaseState(version, { refunds: [...refunds, { refundId, amountMinor: input.amountMinor, entry }] })
      yield* cx.meetDeadline(deadline)
      return { refundId, entry }
    }),
})

export const Refund = RunDefinition.make({
  capability: "refund",
  input: Input,
  output: Schema.Struct({ refundId: Schema.String, entry: Schema.String }),
  plan: [assess, refund, record],
})

// The reviewed refund: a person decides, then a cooling-off period, then the money moves.

export const ReviewedInput = Schema.Struct({
  ...Input.fields,
  /** The agent that proposed the refund: excluded from deciding it (four eyes). */
  agent: Schema.String.pipe(Schema.minLength(1)),
  /** Seconds between the approval and the refund, during which the run sleeps. */
  coolingOffSecs: Schema.Int.pipe(Schema.nonNegative()),
})
export type ReviewedInput = typeof ReviewedInput.Type

export class RefundDeclined extends Schema.TaggedError<RefundDeclined>()("RefundDeclined", {
  actor: Schema.String,
  reason: Schema.String,
}) {}

/** The task a reviewer sees: the agent's justification, deciders by role, the agent excluded, due with the obligation `deadline`. */
export const reviewTask = (input: ReviewedInput, deadline: string) =>
  new Task.TaskSpec({
    kind: "refund.approve",
    justification: new Task.Justification({
      summary: `refund ${input.amountMinor} minor units on ${input.invoice}: ${input.reason}`,
      proposedAction: { refund: { invoice: input.invoice, amountMinor: input.amountMinor } },
      confidence: Option.none(),
      cost: Option.some(`${input.amountMinor} minor units`),
      evidence: [],
    }),
    candidateRoles: ["reviewer"],
    priority: "normal",
    // Due when the review obligation is; unanswered by then, the refund is denied (and the run unwinds).
    deadline: Option.some(deadline),
    onExpiry: "deny",
    escalateTo: [],
    excludedActors: [input.agent],
    allowUnattended: false,
  })

export const review = Step.make({
  name: "review",
  body: (input: ReviewedInput) =>
    Effect.gen(function* () {
      const cx = yield* StepCtx.StepCtx
      // The run owns its obligations: it registers the review's two days, and meets them when a
      // person decides. An expiry's decision comes after the sweeper breached it, which stands.
      const deadline = `review ${cx.run}`
      yield* cx.deadline(deadline, Deadline.days(2))
      const decision = yield* cx.task(reviewTask(input, deadline))
      if (decision.actor !== Task.EXPIRY_ACTOR) yield* cx.meetDeadline(deadline)
      if (!decision.approved) return yield* new RefundDeclined({ actor: decision.actor, reason: decision.reason })
      return { approvedBy: decision.actor }
    }),
})

export const coolOff = Step.make({
  name: "cool-off",
  body: (input: ReviewedInput) =>
    Effect.gen(function* () {
      const cx = yield* StepCtx.StepCtx
      // From the journaled clock, so a replay sleeps until the same instant.
      const until = (yield* cx.now) + input.coolingOffSecs
      yield* cx.sleepUntil(until)
      return { until }
    }),
})

/**
 * Closes the invoice's case once the refund is recorded. Another run's obligation still open on
 * the case (a second refund under way) keeps it open: that run closes it when it finishes.
 */
export const close = Step.make({
  name: "close",
  body: (_input: ReviewedInput, prior) =>
    Effect.gen(function* () {
      const cx = yield* StepCtx.StepCtx
      yield* cx
        .setCaseStatus("closed")
        .pipe(
          Effect.catchTag("ObligationsOutstanding", (e) =>
            cx.note(`case left open: ${e.outstanding} obligation(s) of other work outstanding`),
          ),
        )
      return prior.of(record)
    }),
})

export const ReviewedRefund = RunDefinition.make({
  capability: "refund.reviewed",
  input: ReviewedInput,
  output: Schema.Struct({ refundId: Schema.String, entry: Schema.String }),
  plan: [assess, review, coolOff, refund, record, close],
})

/** Starts a refund on the invoice's case (opened if the invoice has none), for the `Tenant` in context. */
export const start = (runtime: Runtime.Runtime["Type"], input: Input) =>
  runtime.runCorrelated(Refund, Run.labeled(input, "operator"), "invoice-dispute", [
    CorrelationKey.make("invoice", input.invoice),
  ])

/** Starts a reviewed refund on the invoice's case; it suspends at the review. */
export const startReviewed = (runtime: Runtime.Runtime["Type"], input: ReviewedInput) =>
  runtime.runCorrelated(ReviewedRefund, Run.labeled(input, "operator"), "invoice-dispute", [
    CorrelationKey.make("invoice", input.invoice),
  ])

/**
 * The runtime with both refunds registered; give it the stores and the two providers. Its runs
 * are decided by `policy` (default `PolicyEngine.allowAll`, the example's explicit choice).
 */
export const layer = (options: Runtime.Options & { readonly policy?: Layer.Layer<PolicyEngine.PolicyEngine> } = {}) =>
  Layer.mergeAll(Runtime.layer(options), RunDefinition.register(Refund), RunDefinition.register(ReviewedRefund)).pipe(
    Layer.provide(options.policy ?? PolicyEngine.allowAll),
    Layer.provideMerge(Layer.merge(RunDefinition.layerRegistry, Calendar.layerWallClock)),
  )
