/**
 * An invoice-dispute agent on `@effect/ai`, run durably. It reads the invoice's case, asks the
 * model to classify the dispute and propose an action (structured output, checked by Schema),
 * asks a reviewer when the proposed refund is over a threshold (four eyes: the agent may not
 * decide), lets the model issue the refund through a tool that carries an idempotency key, and
 * closes the case.
 *
 * - Every model call is effect `model.generate` and every tool call `tool.<name>`: journaled,
 *   replayed on Resume instead of asking the model again, metered into the run's budget.
 * - `issue_refund` mutates and is `Idempotent`: after a crash in doubt it is sent again with the
 *   same key, which the payment provider dedupes. A mutating tool declared without a recovery
 *   would quarantine the run instead (`RequiresOperator`).
 */

import { LanguageModel, Tool, Toolkit } from "@effect/ai"
import {
  Calendar,
  Conversation,
  CorrelationKey,
  Model,
  ModelCall,
  PolicyEngine,
  Run,
  RunDefinition,
  Runtime,
  Step,
  StepCtx,
  Task,
  ToolCall,
} from "agentplane"
import { Context, Effect, Layer, Option, Schema } from "effect"

export const Input = Schema.Struct({
  invoice: Schema.String,
  customer: Schema.String,
  complaint: Schema.String,
  disputedMinor: Schema.Int.pipe(Schema.positive()),
})
export type Input = typeof Input.Type

/** Refunds above this many minor units need a reviewer's approval. */
export const REVIEW_ABOVE_MINOR = 5_000

/** What the model proposes; an answer that does not decode fails the call (`MalformedOutput`). */
export const Proposal = Schema.Struct({
  category: Schema.Literal("duplicate_charge", "service_not_rendered", "pricing_error", "other"),
  action: Schema.Literal("refund", "reject"),
  refundMinor: Schema.Int.pipe(Schema.nonNegative()),
  justification: Schema.String,
})
export type Proposal = typeof Proposal.Type

/** The payment provider the refund tool calls; it dedupes by the idempotency key. */
export class Payments extends Context.Tag("examples/dispute/Payments")<
  Payments,
  {
    readonly refund: (
      invoice: string,
      amountMinor: number,
      idempotencyKey: string,
    ) => Effect.Effect<{ readonly refundId: string }>
  }
>() {}

/** The one tool the model may call. */
export const IssueRefund = Tool.make("issue_refund", {
  description: "Refund part of an invoice to the customer's original payment method.",
  parameters: { invoice: Schema.String, amountMinor: Schema.Int.pipe(Schema.positive()) },
  success: Schema.Struct({ refundId: Schema.String }),
})

export const RefundTools = Toolkit.make(IssueRefund)

/** The tool's handler: the provider call, with the key that stays the same across attempts. */
export const RefundToolsLive = RefundTools.toLayer(
  Effect.gen(function* () {
    const payments = yield* Payments
    return {
      issue_refund: ({ invoice, amountMinor }) =>
        Effect.flatMap(ToolCall.attempt, (attempt) => payments.refund(invoice, amountMinor, attempt.idempotencyKey)),
    }
  }),
)

const CaseNotes = Schema.Struct({ history: Schema.optional(Schema.Array(Schema.String)) })

export const classify = Step.make({
  name: "classify",
  body: (input: Input) =>
    Effect.gen(function* () {
      const cx = yield* StepCtx.StepCtx
      const { state } = yield* cx.caseState
      // The case state is untrusted data: decoded, and anything else read as no history.
      const notes = Option.match(Schema.decodeUnknownOption(CaseNotes)(state), {
        onNone: () => [],
        onSome: (s) => s.history ?? [],
      })
      const response = yield* LanguageModel.generateObject({
        prompt: [
          {
            role: "system",
            content:
              "You triage invoice disputes. Propose one action. Refund at most the disputed amount. Justify briefly.",
          },
          {
            role: "user",
            content: `Invoice ${input.invoice}, customer ${input.customer}, disputed ${input.disputedMinor} minor units.\nComplaint: ${input.complaint}\nEarlier notes: ${notes.join(" | ") || "none"}`,
          },
        ],
        schema: Proposal,
        objectName: "proposal",
      }).pipe(ModelCall.withJournal)
      // The model's word is not the limit: a proposal above the disputed amount is capped here.
      return { ...response.value, refundMinor: Math.min(response.value.refundMinor, input.disputedMinor) }
    }),
})

export const review = Step.make({
  name: "review",
  body: (input: Input, prior) =>
    Effect.gen(function* () {
      const proposal = prior.of(classify)
      if (proposal.action !== "refund" || proposal.refundMinor <= REVIEW_ABOVE_MINOR) {
        return { approved: proposal.action === "refund", refundMinor: proposal.refundMinor, by: "agent" }
      }
      const cx = yield* StepCtx.StepCtx
      const decision = yield* cx.task(
        new Task.TaskSpec({
          kind: "dispute.refund.approve",
          justification: new Task.Justification({
            summary: `refund ${proposal.refundMinor} on ${input.invoice} (${proposal.category})`,
            proposedAction: { refundMinor: proposal.refundMinor },
            confidence: Option.none(),
            cost: Option.some(`${proposal.refundMinor} minor units`),
            evidence: [proposal.justification],
          }),
          candidateRoles: ["reviewer"],
          priority: "normal",
          deadline: Option.none(),
          onExpiry: "deny",
          escalateTo: [],
          excludedActors: ["invoice-bot"],
          allowUnattended: false,
        }),
      )
      return { approved: decision.approved, refundMinor: proposal.refundMinor, by: decision.actor }
    }),
})

export const refund = Step.make({
  name: "refund",
  body: (input: Input, prior) =>
    Effect.gen(function* () {
      const verdict = prior.of(review)
      if (!verdict.approved) return { refundId: Option.none<string>() }
      const toolkit = yield* ToolCall.journaled(yield* RefundTools, {
        issue_refund: { mutates: true, recovery: Run.Recovery.Idempotent({ key: Option.none() }) },
      })
      const outcome = yield* Conversation.converse({
        prompt: `Issue a refund of ${verdict.refundMinor} minor units on invoice ${input.invoice}, then confirm in one sentence.`,
        toolkit,
        maxTurns: 3,
      }).pipe(ModelCall.withJournal)
      const issued = outcome.prompt.content
        .flatMap((message) => (message.role === "tool" ? message.content : []))
        .flatMap((part) =>
          part.type === "tool-result" && !part.isFailure ? [part.result as { refundId: string }] : [],
        )
      return { refundId: Option.fromNullable(issued[0]?.refundId) }
    }),
})

export const close = Step.make({
  name: "close",
  role: Step.Pivot,
  body: (_input: Input, prior) =>
    Effect.gen(function* () {
      const cx = yield* StepCtx.StepCtx
      const proposal = prior.of(classify)
      const verdict = prior.of(review)
      const { refundId } = prior.of(refund)
      const { version } = yield* cx.caseState
      const resolution = Option.match(refundId, {
        onNone: () => `rejected (${proposal.category})`,
        onSome: (id) => `refunded ${verdict.refundMinor} as ${id}, approved by ${verdict.by}`,
      })
      yield* cx.putCaseState(version, { history: [resolution] })
      yield* cx.setCaseStatus("closed")
      return { resolution, refundId: Option.getOrNull(refundId) }
    }),
})

export const Dispute = RunDefinition.make({
  capability: "invoice-dispute-agent",
  input: Input,
  output: Schema.Struct({ resolution: Schema.String, refundId: Schema.NullOr(Schema.String) }),
  plan: [classify, review, refund, close],
  budget: Run.budget({ maxTokens: 20_000 }),
})

/** Starts the agent on the invoice's case (opened if the invoice has none), for the `Tenant` in context. */
export const start = (runtime: Runtime.Runtime["Type"], input: Input) =>
  runtime.runCorrelated(Dispute, Run.labeled(input, "operator"), "invoice-dispute", [
    CorrelationKey.make("invoice", input.invoice),
  ])

/** What the agent's steps need besides the runtime: the model and the refund tool's handler. */
export const layerNeeds = (model: Model.Config) => Layer.merge(Model.layer(model), RefundToolsLive)

/** The dispute agent registered, over a provider `LanguageModel` and `Payments` in context. */
export const register = (model: Model.Config) => RunDefinition.register(Dispute).pipe(Layer.provide(layerNeeds(model)))

/**
 * The runtime with the agent registered; give it the stores, a provider `LanguageModel` and
 * `Payments`. Its runs are decided by `policy` (default `PolicyEngine.allowAll`, the example's
 * explicit choice).
 */
export const layer = (
  model: Model.Config,
  options: Runtime.Options & { readonly policy?: Layer.Layer<PolicyEngine.PolicyEngine> } = {},
) =>
  Layer.merge(Runtime.layer(options), register(model)).pipe(
    Layer.provide(options.policy ?? PolicyEngine.allowAll),
    Layer.provideMerge(Layer.merge(RunDefinition.layerRegistry, Calendar.layerWallClock)),
  )

/** A payment provider in memory that dedupes by key, counting every call that reaches it. */
export const paymentsInMemory = (tally: { calls: number; readonly refunds: Map<string, string> }) =>
  Layer.succeed(Payments, {
    refund: (invoice, amountMinor, idempotencyKey) =>
      Effect.sync(() => {
        tally.calls += 1
        const known = tally.refunds.get(idempotencyKey)
        if (known !== undefined) return { refundId: known }
        const refundId = `re_${invoice}_${amountMinor}_${tally.refunds.size + 1}`
        tally.refunds.set(idempotencyKey, refundId)
        return { refundId }
      }),
  })
