/**
 * The language model a deployment talks to, chosen by configuration: `AGENTPLANE_MODEL_PROVIDER`
 * (`openai` or `anthropic`), `AGENTPLANE_MODEL` (the provider's model id) and the provider's own
 * key variable (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`), read as a redacted secret. The provider
 * packages are loaded only when chosen, so nothing here needs them to run the tests, which use
 * `ScriptedModel`.
 */
import type { LanguageModel } from "@effect/ai"
import { FetchHttpClient } from "@effect/platform"
import { Config, ConfigError, Data, Effect, Either, Layer, Option, Schema } from "effect"
import { Price, type PriceTable } from "./Price.js"

export const PROVIDERS = ["openai", "anthropic"] as const
export type Provider = (typeof PROVIDERS)[number]

/** The configuration names a provider that is not one of `PROVIDERS`. */
export class UnknownProvider extends Data.TaggedError("UnknownProvider")<{ readonly provider: string }> {
  override get message() {
    return `AGENTPLANE_MODEL_PROVIDER is ${JSON.stringify(this.provider)}; it must be one of ${PROVIDERS.join(", ")}`
  }
}

export interface Choice {
  readonly provider: Provider
  readonly model: string
}

/** The provider and model the environment names; a missing or unknown one is a `ConfigError` or `UnknownProvider`. */
export const choice: Effect.Effect<Choice, UnknownProvider | ConfigError.ConfigError> = Effect.gen(function* () {
  const provider = yield* Config.string("AGENTPLANE_MODEL_PROVIDER")
  const model = yield* Config.nonEmptyString("AGENTPLANE_MODEL")
  if (!(PROVIDERS as ReadonlyArray<string>).includes(provider)) return yield* new UnknownProvider({ provider })
  return { provider: provider as Provider, model }
})

/** The chosen provider's `LanguageModel`, over `fetch`; its API key comes from its own variable. */
export const layer = (chosen: Choice): Layer.Layer<LanguageModel.LanguageModel, ConfigError.ConfigError> =>
  Layer.unwrapEffect(
    Effect.promise(async () => {
      if (chosen.provider === "openai") {
        const { OpenAiClient, OpenAiLanguageModel } = await import("@effect/ai-openai")
        return OpenAiLanguageModel.layer({ model: chosen.model }).pipe(
          Layer.provide(OpenAiClient.layerConfig({ apiKey: Config.redacted("OPENAI_API_KEY") })),
        )
      }
      const { AnthropicClient, AnthropicLanguageModel } = await import("@effect/ai-anthropic")
      return AnthropicLanguageModel.layer({ model: chosen.model }).pipe(
        Layer.provide(AnthropicClient.layerConfig({ apiKey: Config.redacted("ANTHROPIC_API_KEY") })),
      )
    }),
  ).pipe(Layer.provide(FetchHttpClient.layer))

/** The GenAI system name of a provider, for `Model.Config.system`. */
export const systemOf = (provider: Provider): string => provider

/**
 * The operator's price table, `AGENTPLANE_MODEL_PRICES`: JSON, model id to
 * `{inputMinorPerMillion, outputMinorPerMillion}`. Unset is an empty table (every model metered
 * in tokens only, which `Model.layer` logs); set but malformed is refused, naming the problem.
 */
export const prices: Effect.Effect<PriceTable, ConfigError.ConfigError> = Effect.flatMap(
  Config.option(Config.string("AGENTPLANE_MODEL_PRICES")),
  Option.match({
    onNone: () => Effect.succeed({}),
    onSome: (text) =>
      Either.match(Schema.decodeUnknownEither(PriceTableJson)(text), {
        onLeft: (e) =>
          Effect.fail(ConfigError.InvalidData(["AGENTPLANE_MODEL_PRICES"], `not a price table: ${e.message}`)),
        onRight: Effect.succeed,
      }),
  }),
)

const PriceTableJson = Schema.parseJson(Schema.Record({ key: Schema.String, value: Price }))
