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
 * strictly and says whether it reproduced without asking the model again.
 */
import { JournalStore, type Model, Price, Providers, Runtime, ScriptedModel, SqliteBackend, Tenant } from "agentplane"
import { Console, Effect, Layer, Option } from "effect"
import * as Dispute from "./Dispute.js"

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

const program = Effect.gen(function* () {
  const { config, provider } = yield* model
  const live = Dispute.layer(config).pipe(
    Layer.provideMerge(Layer.mergeAll(provider, Dispute.paymentsInMemory(tally), SqliteBackend.layerConfig)),
  )
  yield* Effect.gen(function* () {
    const runtime = yield* Runtime.Runtime
    const result = yield* Dispute.start(runtime, input)
    yield* Console.log(`run ${result.run} (${config.model}): ${result.status._tag}`)
    if (result.status._tag === "Succeeded") yield* Console.log(JSON.stringify(result.status.output))
    if (result.status._tag === "Suspended")
      yield* Console.log("waiting for a reviewer: decide its task over the HTTP API")
    const records = yield* Effect.flatMap(JournalStore.JournalStore, (j) => j.read(result.run, 1))
    for (const record of records) {
      if (record.kind.kind === "EffectDone") {
        const started = records.find(
          (r) =>
            r.kind.kind === "EffectStarted" && Option.getOrNull(r.effectKey) === Option.getOrNull(record.effectKey),
        )
        const kind = started?.kind.kind === "EffectStarted" ? (started.kind.descriptor as { kind: string }).kind : "?"
        yield* Console.log(`  ${kind.padEnd(18)} spend ${JSON.stringify(record.kind.spend)}`)
      }
    }
    yield* Console.log(`payment provider: ${tally.calls} refund call(s)`)
    const replay = yield* runtime.replay(result.run)
    yield* Console.log(`strict replay reproduced: ${replay.reproduced}`)
  }).pipe(Effect.provide(live))
})

program
  .pipe(
    Effect.provideService(Tenant.Tenant, Tenant.DEFAULT),
    Effect.tapErrorCause((cause) => Console.error(`agent failed: ${cause}`)),
    Effect.runPromiseExit,
  )
  .then((exit) => {
    process.exitCode = exit._tag === "Success" ? 0 : 1
  })
