/**
 * One session of the invoice-dispute agent, as `npm run agent` prints it (`Main.ts` chooses the
 * model): the run's status, the kinds of its effects and what they spent, then a strict replay.
 * Answers whether the replay reproduced the run; a run the provider failed fails the session
 * with `AgentFailed`, naming the provider's error, instead of going on to a replay.
 */
import type { LanguageModel } from "@effect/ai"
import { JournalStore, type Model, Runtime, SqliteBackend } from "agentplane"
import { Console, Data, Effect, Layer, Option } from "effect"
import * as Dispute from "./Dispute.js"

/** The run concluded failed or quarantined; `message` is the runtime's, naming the provider's error. */
export class AgentFailed extends Data.TaggedError("AgentFailed")<{ readonly run: string; readonly message: string }> {}

export const session = <E>(
  config: Model.Config,
  provider: Layer.Layer<LanguageModel.LanguageModel, E>,
  payments: { calls: number; readonly refunds: Map<string, string> },
  input: Dispute.Input,
) =>
  Effect.gen(function* () {
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
    yield* Console.log(`payment provider: ${payments.calls} refund call(s)`)
    // A failed run's story is its error: strict replay checks that a run reproduces, and what
    // the user of a failing provider needs to read is why it failed.
    if (result.status._tag === "Failed" || result.status._tag === "Quarantined") {
      return yield* new AgentFailed({ run: result.run, message: result.status.message })
    }
    const replay = yield* runtime.replay(result.run)
    yield* Console.log(`strict replay reproduced: ${replay.reproduced}`)
    return replay.reproduced
  }).pipe(
    Effect.provide(
      Dispute.layer(config).pipe(
        Layer.provideMerge(Layer.mergeAll(provider, Dispute.paymentsInMemory(payments), SqliteBackend.layerConfig)),
      ),
    ),
  )
