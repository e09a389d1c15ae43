/**
 * `npm run agent`: the invoice-dispute agent on the embedded default, a SQLite file
 * (`./agentplane.db`, or `AGENTPLANE_STORE`). Without configuration the model is the scripted
 * one shipped with agentplane (no network, no key); with `AGENTPLANE_MODEL_PROVIDER` (`openai` or
 * `anthropic`), `AGENTPLANE_MODEL` and the provider's key variable it asks a real model.
 *
 *   npm run agent
 *   AGENTPLANE_MODEL_PROVIDER=openai AGENTPLANE_MODEL=gpt-4o-mini OPENAI_API_KEY=… npm run agent
 *
 * `AGENTPLANE_MODEL_PRICES` (JSON, model id to minor units per million input and output tokens)
 * prices a real model's calls; without it they are metered in tokens only.
 *
 * Prints the run's status, the kinds of its effects and what they spent, then replays the run
 * strictly and says whether it reproduced without asking the model again (`Session.ts`); a run
 * the provider failed ends with the provider's error instead, exit 1.
 */
import { type Model, Price, Providers, ScriptedModel, Tenant } from "agentplane"
import { Cause, Console, Effect, Option } from "effect"
import type * as Dispute from "./Dispute.js"
import { AgentFailed, session } from "./Session.js"

const invoice = `INV-2026-${Math.floor(Math.random() * 9000 + 1000)}`
const input: Dispute.Input = {
  invoice,
  customer: "ACME GmbH",
  complaint: "We were charged twice for order 7731; please refund the duplicate.",
  disputedMinor: 3_000,
}

/** What the scripted model answers for this dispute: a proposal, a tool call, a confirmation. */
const script: ReadonlyArray<ScriptedModel.Reply> = [
  ScriptedModel.object(
    {
      category: "duplicate_charge",
      action: "refund",
      refundMinor: 3_000,
      justification: "The card was captured twice for order 7731; refund the second capture.",
    },
    { inputTokens: 180, outputTokens: 45 },
  ),
  {
    toolCalls: [{ name: "issue_refund", params: { invoice, amountMinor: 3_000 } }],
    usage: { inputTokens: 210, outputTokens: 20 },
  },
  { text: `Refunded 30.00 on ${invoice}.`, usage: { inputTokens: 260, outputTokens: 12 } },
]

const tally = { calls: 0, refunds: new Map<string, string>() }

const model = Effect.gen(function* () {
  if (process.env.AGENTPLANE_MODEL_PROVIDER === undefined) {
    return {
      // A made-up price, so the scripted calls show money as well as tokens.
      config: {
        model: "scripted",
        system: "scripted",
        prices: { scripted: new Price.Price({ inputMinorPerMillion: 1_500, outputMinorPerMillion: 6_000 }) },
      } satisfies Model.Config,
      provider: ScriptedModel.layer(script),
    }
  }
  const chosen = yield* Providers.choice
  return {
    config: {
      model: chosen.model,
      system: Providers.systemOf(chosen.provider),
      prices: yield* Providers.prices,
    } satisfies Model.Config,
    provider: Providers.layer(chosen),
  }
})

const program = Effect.flatMap(model, ({ config, provider }) => session(config, provider, tally, input))

program
  .pipe(
    Effect.provideService(Tenant.Tenant, Tenant.DEFAULT),
    // A failed run ends on its error alone: the provider's words are the message, not a stack.
    Effect.tapErrorCause((cause) =>
      Console.error(
        Option.match(Cause.failureOption(cause), {
          onSome: (e) =>
            e instanceof AgentFailed ? `agent failed: run ${e.run}: ${e.message}` : `agent failed: ${cause}`,
          onNone: () => `agent failed: ${cause}`,
        }),
      ),
    ),
    Effect.runPromiseExit,
  )
  .then((exit) => {
    process.exitCode = exit._tag === "Success" ? 0 : 1
  })
