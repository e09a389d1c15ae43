/**
 * A deterministic language model for tests and the example: it answers each request with the
 * next reply of a script, counts the requests it was asked, and never touches a network. A
 * request past the end of the script fails, so a test that expected replay to answer instead of
 * the model sees it.
 */
import { AiError, LanguageModel, type Response } from "@effect/ai"
import { Context, Effect, Layer, Ref } from "effect"
import type { Json } from "../domain/Json.js"

export interface Usage {
  readonly inputTokens: number
  readonly outputTokens: number
}

export interface Reply {
  readonly text?: string
  readonly toolCalls?: ReadonlyArray<{ readonly name: string; readonly params: Json }>
  readonly usage: Usage
}

/** What the script has been asked. */
export interface Service {
  /** Requests answered so far. */
  readonly calls: Effect.Effect<number>
}

export class Script extends Context.Tag("agentplane/ScriptedModel/Script")<Script, Service>() {}

/** A reply whose text is `value` as JSON: the answer to a `generateObject`. */
export const object = (value: Json, usage: Usage): Reply => ({ text: JSON.stringify(value), usage })

/** The model, answering the `replies` in order. */
export const layer = (replies: ReadonlyArray<Reply>): Layer.Layer<LanguageModel.LanguageModel | Script> =>
  Layer.effectContext(make(replies))

/** The model as a context, for tests that share one script between two runtimes ("two processes"). */
export const make = (
  replies: ReadonlyArray<Reply>,
): Effect.Effect<Context.Context<LanguageModel.LanguageModel | Script>> =>
  Effect.gen(function* () {
    const asked = yield* Ref.make(0)
    const model = yield* LanguageModel.make({
      generateText: () =>
        Effect.flatMap(
          Ref.getAndUpdate(asked, (n) => n + 1),
          (n): Effect.Effect<Array<Response.PartEncoded>, AiError.AiError> => {
            const reply = replies[n]
            if (reply === undefined) {
              return Effect.fail(
                new AiError.UnknownError({
                  module: "ScriptedModel",
                  method: "generateText",
                  description: `the script has ${replies.length} replies and was asked for reply ${n + 1}`,
                }),
              )
            }
            return Effect.succeed(partsOf(reply, n))
          },
        ),
      streamText: () => Effect.dieMessage("the scripted model does not stream") as never,
    })
    return Context.make(LanguageModel.LanguageModel, model).pipe(Context.add(Script, { calls: Ref.get(asked) }))
  })

const partsOf = (reply: Reply, n: number): Array<Response.PartEncoded> => {
  const parts: Array<Response.PartEncoded> = []
  if (reply.text !== undefined) parts.push({ type: "text", text: reply.text })
  for (const [i, call] of (reply.toolCalls ?? []).entries()) {
    parts.push({ type: "tool-call", id: `call_${n + 1}_${i + 1}`, name: call.name, params: call.params })
  }
  parts.push({
    type: "finish",
    reason: (reply.toolCalls?.length ?? 0) > 0 ? "tool-calls" : "stop",
    usage: {
      inputTokens: reply.usage.inputTokens,
      outputTokens: reply.usage.outputTokens,
      totalTokens: reply.usage.inputTokens + reply.usage.outputTokens,
    },
  })
  return parts
}
