/**
 * The model behind a run's model calls: a provider's `LanguageModel` (OpenAI, Anthropic, or the
 * scripted one tests use), the model id and the options that shape its answers, and its price.
 * A step never calls it directly: `ModelCall.journaled` does, inside effect `model.generate`, and
 * only when the journal holds no answer for the call.
 */
import { LanguageModel } from "@effect/ai"
import { Context, Effect, Layer, Option } from "effect"
import type { Json } from "../domain/Json.js"
import type { Price, PriceTable } from "./Price.js"

export interface Config {
  /** The provider's model id, e.g. `gpt-4o-mini`; part of every call's canonical arguments. */
  readonly model: string
  /** The GenAI system name for telemetry (`openai`, `anthropic`, `scripted`). */
  readonly system: string
  /**
   * Options that shape the answer (temperature, …), journaled with each call so that changing
   * them is a change of the call, seen on replay. They are recorded, not interpreted: the provider
   * layer is configured with the same values by whoever builds it.
   */
  readonly options?: { readonly [key: string]: Json }
  /**
   * The most output tokens a call may produce. When set, a call is refused before it is made if
   * the run's tokens so far plus this would pass `maxTokens` (§7.3): the answer's size is bounded
   * in advance; its prompt's is not, so a call may still pass the ceiling by its input tokens.
   */
  readonly maxOutputTokens?: number
  readonly prices?: PriceTable
}

export interface Service {
  readonly config: Config
  readonly provider: LanguageModel.Service
  readonly price: Option.Option<Price>
}

/** The provider and model a step's model calls go to when the journal has no answer. */
export class Model extends Context.Tag("agentplane/Model")<Model, Service>() {}

/**
 * The model, over the `LanguageModel` in context (a provider layer). A model without a price is
 * metered in tokens only, and the log says so here, once, rather than on every call.
 */
export const layer = (config: Config): Layer.Layer<Model, never, LanguageModel.LanguageModel> =>
  Layer.effect(
    Model,
    Effect.gen(function* () {
      if (
        config.maxOutputTokens !== undefined &&
        !(Number.isSafeInteger(config.maxOutputTokens) && config.maxOutputTokens > 0)
      ) {
        return yield* Effect.dieMessage(
          `maxOutputTokens must be a positive whole number, got ${config.maxOutputTokens}`,
        )
      }
      const provider = yield* LanguageModel.LanguageModel
      const price = Option.fromNullable(config.prices?.[config.model])
      if (Option.isNone(price)) {
        yield* Effect.logWarning(
          `no price configured for model ${config.model}: its calls are metered in tokens only, so maxMinorUnits does not bound them`,
        )
      }
      return { config, provider, price }
    }),
  )
