/**
 * The model's tool-call loop inside one step: ask, let the toolkit answer every tool call the
 * model made, give the answers back, until the model answers without calling a tool. Run under
 * `ModelCall.withJournal` with a `Tools.journaled` toolkit, every ask and every tool call is its
 * own journaled effect, in a fixed order, so a crash anywhere in a turn resumes where it was.
 */
import { LanguageModel, Prompt, type Tool, type Toolkit } from "@effect/ai"
import { Data, Effect } from "effect"

/** The model was still calling tools after `maxTurns` asks. */
export class TurnLimit extends Data.TaggedError("TurnLimit")<{ readonly maxTurns: number }> {
  override get message() {
    return `the model was still calling tools after ${this.maxTurns} turns`
  }
}

export interface Options<Tools extends Record<string, Tool.Any>> {
  readonly prompt: Prompt.RawInput
  readonly toolkit: Toolkit.WithHandler<Tools>
  /** Asks at most; required, so a model that never stops cannot spend a run's budget in one step. */
  readonly maxTurns: number
}

export interface Outcome<Tools extends Record<string, Tool.Any>> {
  /** The last answer: the one without tool calls. */
  readonly response: LanguageModel.GenerateTextResponse<Tools>
  /** The whole exchange, the last answer included. */
  readonly prompt: Prompt.Prompt
  readonly turns: number
}

export const converse = <Tools extends Record<string, Tool.Any>>(options: Options<Tools>) =>
  Effect.gen(function* () {
    let prompt = Prompt.make(options.prompt)
    for (let turn = 1; turn <= options.maxTurns; turn++) {
      const response = yield* LanguageModel.generateText({ prompt, toolkit: options.toolkit })
      prompt = Prompt.merge(prompt, Prompt.fromResponseParts(response.content))
      if (response.toolCalls.length === 0) return { response, prompt, turns: turn } satisfies Outcome<Tools>
    }
    return yield* new TurnLimit({ maxTurns: options.maxTurns })
  })
