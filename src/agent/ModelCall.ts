/**
 * Model calls as effects (§7.1): a `LanguageModel` whose every provider request is effect
 * `model.generate`, announced, performed at most once per attempt and journaled with its answer
 * and spend. A step uses `@effect/ai` as it would anywhere (`LanguageModel.generateText`,
 * `generateObject`, toolkits) under `journaled`; on Resume or in Strict replay the answer comes from
 * the journal and no provider is called.
 *
 * The canonical arguments are what shapes the answer: the model id and its options, the prompt,
 * the tools offered (name, description, parameter schema), the tool choice and the response
 * format. Changing any of them in a definition changes the effect key, so Resume quarantines the
 * run with the offered and journaled arguments side by side.
 */
import { AiError, LanguageModel, Prompt, Response, Telemetry, Tool, type Toolkit } from "@effect/ai"
import { Effect, JSONSchema, ParseResult, Schema, Stream } from "effect"
import type { Json } from "../domain/Json.js"
import { Spend } from "../domain/Quota.js"
import * as Run from "../domain/Run.js"
import * as EffectKind from "../runtime/EffectKind.js"
import { StepCtx } from "../runtime/StepCtx.js"
import { Model, type Service as ModelService } from "./Model.js"
import { spendOf, usageOf } from "./Price.js"

export const KIND = "model.generate"

/** A provider refused the call for good (a bad request, an answer that does not parse): the step's typed failure. */
export class ModelRefused extends Schema.TaggedError<ModelRefused>()("ModelRefused", {
  model: Schema.String,
  reason: Schema.String,
  message: Schema.String,
}) {}

/**
 * Transient provider failures (transport, 408, 429, 5xx) are retried this many times with doubling
 * backoff; a model call does not mutate, so a retry in doubt costs tokens, never a second act.
 */
export const retry = new Run.RetryPolicy({ maxAttempts: 4, backoffMs: 500, maxBackoffMs: 8_000 })

/**
 * A `LanguageModel` for the current step: each provider request goes through effect
 * `model.generate`. Streaming is refused: a stream's parts cannot be journaled as one answer
 * before the step sees them.
 */
export const journaled: Effect.Effect<LanguageModel.Service, never, StepCtx | Model> = Effect.gen(function* () {
  const cx = yield* StepCtx
  const model = yield* Model
  const kind = kindFor(model)
  return yield* LanguageModel.make({
    generateText: (options) =>
      cx.perform(kind, { wire: wireOf(model, options), options }).pipe(
        Effect.tap((parts) => Effect.sync(() => annotate(options, model, parts))),
        Effect.map((parts) => parts as Array<Response.PartEncoded>),
        Effect.catchTag("ModelRefused", (e) =>
          Effect.fail(new AiError.UnknownError({ module: "agentplane", method: KIND, description: e.message })),
        ),
        // `LanguageModel` fails with `AiError` only, so a refusal of policy reaches the step as one,
        // carrying the refusal as its cause; the journal's `PolicyDenied` record is the same either way.
        Effect.catchTag("PolicyDenied", (e) =>
          Effect.fail(
            new AiError.UnknownError({ module: "agentplane", method: KIND, description: e.message, cause: e }),
          ),
        ),
        Effect.provideService(Model, model),
      ),
    streamText: () =>
      Stream.fail(
        new AiError.UnknownError({
          module: "agentplane",
          method: "streamText",
          description:
            "a streamed answer cannot be journaled before the step sees it: use generateText or generateObject",
        }),
      ),
  })
})

/** Runs `effect` with the journaled `LanguageModel`: what a step body wraps its `@effect/ai` calls in. */
export const withJournal = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
): Effect.Effect<A, E, Exclude<R, LanguageModel.LanguageModel> | StepCtx | Model> =>
  Effect.flatMap(journaled, (service) => Effect.provideService(effect, LanguageModel.LanguageModel, service))

// internal

interface Request {
  readonly wire: Json
  readonly options: LanguageModel.ProviderOptions
}

/**
 * Only the canonical side is journaled; the live options (tools with their handlers' schemas, the
 * span) are handed to the act directly and never rebuilt from the journal, so decoding is refused.
 */
const RequestSchema: Schema.Schema<Request, EffectKind.Encoded> = Schema.transformOrFail(
  Schema.Unknown,
  Schema.declare((u: unknown): u is Request => typeof u === "object" && u !== null && "wire" in u && "options" in u),
  {
    strict: true,
    decode: (u, _, ast) =>
      ParseResult.fail(
        new ParseResult.Forbidden(ast, u, "a model call's arguments are never rebuilt from the journal"),
      ),
    encode: (request) => ParseResult.succeed(request.wire),
  },
)

const PartsSchema = Schema.Array(Schema.Unknown) as unknown as Schema.Schema<
  ReadonlyArray<Response.PartEncoded>,
  EffectKind.Encoded
>

const kindFor = (model: ModelService) =>
  EffectKind.make({
    kind: KIND,
    args: RequestSchema,
    success: PartsSchema,
    error: ModelRefused,
    mutates: false,
    recovery: Run.Recovery.Retry(),
    retry,
    act: (request) => ask(model, request.options),
    spend: (parts) => spendOf(usageOf(parts), model.price),
    reserve: () => new Spend({ tokens: model.config.maxOutputTokens ?? 0, minorUnits: 0 }),
  })

const wireOf = (model: ModelService, options: LanguageModel.ProviderOptions): Json => {
  const format = options.responseFormat
  return {
    model: model.config.model,
    options: model.config.options ?? {},
    ...(model.config.maxOutputTokens === undefined ? {} : { maxOutputTokens: model.config.maxOutputTokens }),
    prompt: Schema.encodeSync(Prompt.Prompt)(options.prompt) as unknown as Json,
    tools: options.tools.map((tool) => ({
      name: tool.name,
      description: tool.description ?? null,
      parameters: Tool.getJsonSchema(tool as never) as unknown as Json,
    })),
    toolChoice: options.toolChoice as Json,
    response:
      format.type === "text"
        ? { type: "text" }
        : { type: "json", objectName: format.objectName, schema: JSONSchema.make(format.schema) as unknown as Json },
  }
}

/**
 * The provider request itself. The provider's own `LanguageModel` is asked with tool resolution
 * off (the step's toolkit resolves the calls, each as its own effect), and its decoded answer is
 * encoded back to the parts the journal keeps.
 */
const ask = (model: ModelService, options: LanguageModel.ProviderOptions) => {
  const tools = Object.fromEntries(options.tools.map((tool) => [tool.name, tool]))
  const toolkit: Toolkit.WithHandler<Record<string, Tool.Any>> = {
    tools,
    handle: () => Effect.dieMessage("tool calls are resolved by the step's journaled toolkit, not here"),
  }
  const base = {
    prompt: options.prompt,
    toolkit,
    toolChoice: options.toolChoice,
    disableToolCallResolution: true as const,
  }
  const format = options.responseFormat
  const answer: Effect.Effect<
    LanguageModel.GenerateTextResponse<Record<string, Tool.Any>>,
    AiError.AiError
  > = format.type === "json"
    ? model.provider.generateObject({ ...base, objectName: format.objectName, schema: format.schema as never })
    : model.provider.generateText(base)
  const Parts = Schema.Array(Response.Part(toolkit))
  return answer.pipe(
    Effect.flatMap((response) => Schema.encode(Parts)(response.content as never)),
    Effect.catchAll((error) => Effect.fail(classify(model, error))),
    Effect.withSpan("agentplane.model.provider", { attributes: { "gen_ai.request.model": model.config.model } }),
  )
}

/** A failure worth another attempt is `Transient`; anything else is the provider's refusal. */
const classify = (model: ModelService, error: unknown): EffectKind.Transient | ModelRefused => {
  const message = error instanceof Error ? error.message : String(error)
  if (error instanceof AiError.HttpRequestError) {
    return new EffectKind.Transient({
      message,
      disposition: error.reason === "Transport" ? "in_doubt" : "did_not_happen",
    })
  }
  if (error instanceof AiError.HttpResponseError) {
    const status = error.response.status
    if (status === 408 || status === 429 || status >= 500) {
      const advice = Number(error.response.headers["retry-after"])
      return new EffectKind.Transient({
        message,
        disposition: "in_doubt",
        ...(Number.isFinite(advice) && advice >= 0 ? { retryAfterMs: advice * 1000 } : {}),
      })
    }
    return new ModelRefused({ model: model.config.model, reason: `status ${status}`, message })
  }
  const reason = typeof error === "object" && error !== null && "_tag" in error ? String(error._tag) : "unknown"
  return new ModelRefused({ model: model.config.model, reason, message })
}

/** The OpenTelemetry GenAI attributes on `@effect/ai`'s own span of the call, replayed or live. */
const annotate = (
  options: LanguageModel.ProviderOptions,
  model: ModelService,
  parts: ReadonlyArray<Response.PartEncoded>,
): void => {
  const usage = usageOf(parts)
  const finish = parts.find((p) => p.type === "finish")
  Telemetry.addGenAIAnnotations(options.span, {
    system: model.config.system,
    operation: { name: "chat" },
    request: { model: model.config.model },
    usage: { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens },
    ...(finish?.type === "finish" ? { response: { finishReasons: [finish.reason] } } : {}),
  })
}
