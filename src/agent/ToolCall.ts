/**
 * Tool calls as effects (§7.1): an `@effect/ai` toolkit whose every call is effect
 * `tool.<name>`, declared with its own `mutates` and recovery. The model's tool-call loop runs
 * inside the step; each call is journaled, so a crash in the middle of a multi-tool turn resumes
 * without repeating a recorded call, and a mutating tool left in doubt is recovered as declared
 * (by default `RequiresOperator`: the run is quarantined rather than the act repeated).
 */
import { AiError, type Tool, type Toolkit } from "@effect/ai"
import { Effect, FiberRef, Option, Schema } from "effect"
import { Json } from "../domain/Json.js"
import type * as Run from "../domain/Run.js"
import * as EffectKind from "../runtime/EffectKind.js"
import { StepCtx } from "../runtime/StepCtx.js"

/** How one tool's calls are performed. Every tool of a journaled toolkit needs one: there is no default for `mutates`. */
export interface Declaration {
  readonly mutates: boolean
  /** Default: `RequiresOperator` when the tool mutates, else `Retry`. */
  readonly recovery?: Run.Recovery
  readonly retry?: Run.RetryPolicy
}

const current = FiberRef.unsafeMake<Option.Option<EffectKind.Attempt>>(Option.none())

/**
 * The attempt a tool handler is making, for handlers that send an idempotency key to their
 * provider: the key is the same for every attempt of one call, so the provider dedupes a resend.
 * It is a fiber-local value, not a service, so a tool needs no extra dependency to read it; read
 * outside a journaled toolkit's call it is a defect, since there is no attempt to name.
 */
export const attempt: Effect.Effect<EffectKind.Attempt> = Effect.flatMap(
  FiberRef.get(current),
  Option.match({
    onNone: () => Effect.dieMessage("ToolCall.attempt is read only inside a call of a journaled toolkit"),
    onSome: Effect.succeed,
  }),
)

/** A tool's handler failed with its declared failure (`failureMode: "error"`): the step's typed failure. */
export class ToolFailed extends Schema.TaggedError<ToolFailed>()("ToolFailed", {
  tool: Schema.String,
  failure: Json,
  message: Schema.String,
}) {}

/**
 * The toolkit, journaled for the current step: `handle` performs effect `tool.<name>` with the
 * model's encoded parameters as arguments, and rebuilds the typed result from the journaled
 * encoding, so a replayed call answers as the live one did.
 */
export const journaled = <Tools extends Record<string, Tool.Any>>(
  toolkit: Toolkit.WithHandler<Tools>,
  declarations: { readonly [Name in keyof Tools]: Declaration },
): Effect.Effect<Toolkit.WithHandler<Tools>, never, StepCtx> =>
  Effect.map(StepCtx, (cx) => {
    const kinds = new Map<string, ReturnType<typeof kindFor>>()
    for (const name of Object.keys(toolkit.tools)) {
      const declaration = declarations[name]
      if (declaration === undefined) {
        throw new Error(`tool ${name} has no declaration: say whether it mutates the world`)
      }
      kinds.set(name, kindFor(toolkit, name, declaration))
    }
    const handle = (name: keyof Tools, params: unknown) => {
      const tool = toolkit.tools[name] as Tool.Any
      const kind = kinds.get(String(name))
      if (kind === undefined) {
        return Effect.fail(
          new AiError.MalformedOutput({
            module: "agentplane",
            method: `${String(name)}.handle`,
            description: `the model called tool ${String(name)}, which the toolkit does not have`,
          }),
        )
      }
      return cx.perform(kind, params as Json).pipe(
        Effect.flatMap((done) =>
          Effect.map(
            Schema.decodeUnknown((done.isFailure ? tool.failureSchema : tool.successSchema) as Schema.Schema<unknown>)(
              done.encodedResult,
            ),
            (result) => ({ isFailure: done.isFailure, result, encodedResult: done.encodedResult }),
          ),
        ),
        Effect.catchTag("ParseError", (cause) =>
          Effect.fail(
            new AiError.MalformedOutput({
              module: "agentplane",
              method: `${String(name)}.handle`,
              description: `the journaled result of tool ${String(name)} no longer decodes with its schema`,
              cause,
            }),
          ),
        ),
        Effect.catchTag("ToolFailed", (failed) =>
          failed.failure === null
            ? Effect.fail(
                new AiError.MalformedOutput({
                  module: "agentplane",
                  method: `${failed.tool}.handle`,
                  description: failed.message,
                }),
              )
            : Effect.flatMap(
                Effect.orDie(Schema.decodeUnknown(tool.failureSchema as Schema.Schema<unknown>)(failed.failure)),
                Effect.fail,
              ),
        ),
      )
    }
    return { tools: toolkit.tools, handle } as unknown as Toolkit.WithHandler<Tools>
  })

// internal

const Done = Schema.Struct({ isFailure: Schema.Boolean, encodedResult: Json })

const kindFor = <Tools extends Record<string, Tool.Any>>(
  toolkit: Toolkit.WithHandler<Tools>,
  name: string,
  declaration: Declaration,
) =>
  EffectKind.make({
    kind: `tool.${name}`,
    args: Json,
    success: Done,
    error: ToolFailed,
    mutates: declaration.mutates,
    ...(declaration.recovery === undefined ? {} : { recovery: declaration.recovery }),
    ...(declaration.retry === undefined ? {} : { retry: declaration.retry }),
    act: (params, attempt) =>
      toolkit.handle(name as keyof Tools, params as never).pipe(
        Effect.locally(current, Option.some(attempt)),
        Effect.map((r) => ({ isFailure: r.isFailure, encodedResult: r.encodedResult as Json })),
        Effect.catchAll((error) => Effect.fail(failure(toolkit, name, error))),
      ) as Effect.Effect<typeof Done.Type, ToolFailed>,
  })

/** A declared failure is encoded with the tool's failure schema; an `AiError` (parameters that do not decode) is kept as its message. */
const failure = <Tools extends Record<string, Tool.Any>>(
  toolkit: Toolkit.WithHandler<Tools>,
  name: string,
  error: unknown,
): ToolFailed => {
  const message = error instanceof Error ? error.message : String(error)
  if (AiError.isAiError(error)) return new ToolFailed({ tool: name, failure: null, message })
  const tool = toolkit.tools[name] as Tool.Any
  const encoded = Schema.encodeUnknownEither(tool.failureSchema as Schema.Schema<unknown>)(error)
  return new ToolFailed({ tool: name, failure: encoded._tag === "Right" ? (encoded.right as Json) : null, message })
}
