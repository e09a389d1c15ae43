/**
 * Choosing a real provider by configuration, without a network: the choice and its refusals, the
 * operator's price table, and a provider layer that builds from its key variable.
 */
import { LanguageModel } from "@effect/ai"
import { describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Either, Layer } from "effect"
import { expect } from "vitest"
import * as Providers from "../../src/agent/Providers.js"

const withEnv = (env: Record<string, string>) =>
  Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

describe("providers by configuration", () => {
  it.effect("openai or anthropic with a model id is a choice; anything else is refused, naming the value", () =>
    Effect.gen(function* () {
      expect(
        yield* Providers.choice.pipe(withEnv({ AGENTPLANE_MODEL_PROVIDER: "openai", AGENTPLANE_MODEL: "gpt-4o-mini" })),
      ).toEqual({ provider: "openai", model: "gpt-4o-mini" })
      const unknown = yield* Effect.either(
        Providers.choice.pipe(withEnv({ AGENTPLANE_MODEL_PROVIDER: "openia", AGENTPLANE_MODEL: "x" })),
      )
      expect(Either.isLeft(unknown) && unknown.left.message).toContain('"openia"')
      const noModel = yield* Effect.either(Providers.choice.pipe(withEnv({ AGENTPLANE_MODEL_PROVIDER: "anthropic" })))
      expect(Either.isLeft(noModel) && String(noModel.left)).toContain("AGENTPLANE_MODEL")
    }),
  )

  it.effect("the price table is read strictly: unset is empty, malformed is refused", () =>
    Effect.gen(function* () {
      expect(yield* Providers.prices.pipe(withEnv({}))).toEqual({})
      const table = yield* Providers.prices.pipe(
        withEnv({ AGENTPLANE_MODEL_PRICES: '{"gpt-4o-mini":{"inputMinorPerMillion":15,"outputMinorPerMillion":60}}' }),
      )
      expect(table["gpt-4o-mini"]?.outputMinorPerMillion).toBe(60)
      for (const bad of ['{"m":{"inputMinorPerMillion":-1,"outputMinorPerMillion":1}}', '{"m":{}}', "not json"]) {
        const refused = yield* Effect.either(Providers.prices.pipe(withEnv({ AGENTPLANE_MODEL_PRICES: bad })))
        expect(Either.isLeft(refused) && String(refused.left)).toContain("AGENTPLANE_MODEL_PRICES")
      }
    }),
  )

  it.effect(
    "a provider layer builds from its key variable, and without the key it says which variable is missing",
    () =>
      Effect.gen(function* () {
        for (const [provider, key] of [
          ["openai", "OPENAI_API_KEY"],
          ["anthropic", "ANTHROPIC_API_KEY"],
        ] as const) {
          const model = yield* LanguageModel.LanguageModel.pipe(
            Effect.provide(Providers.layer({ provider, model: "m" })),
            withEnv({ [key]: "sk-test" }),
          )
          expect(typeof model.generateText).toBe("function")
          const missing = yield* Effect.either(
            Layer.build(Providers.layer({ provider, model: "m" })).pipe(Effect.scoped, withEnv({})),
          )
          expect(Either.isLeft(missing) && String(missing.left)).toContain(key)
        }
      }),
  )
})
